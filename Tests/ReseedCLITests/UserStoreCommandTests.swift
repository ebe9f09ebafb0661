import Foundation
import GRDB
import Reseed
import ReseedTesting
import ReseedTestSupport
import Testing

/// The user store from the command line: `--user-store` and its options on `launch`, the same
/// keys in reseed.json, a folder of user migrations, `status` of a user store, `diff --reference`.
@Suite struct UserStoreCommandTests {
    /// An `items` seed with items `ids`; `note` rows of the app point at `item.id`.
    func itemsSeed(_ version: String, ids: [Int], in sandbox: TemporaryDirectory) throws -> Seed {
        try SeedFixture(name: "items", version: version, sql: ["CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT NOT NULL)"])
            .adding(rows: ids.map { ["id": $0, "label": "item \($0)"] }, to: "item")
            .build(in: sandbox.appending("seed-\(version)"))
    }

    /// A single-file store installed from 1.0.0 (items 1…5), with the app's `note` table
    /// written into it as apps did before user stores: three notes, on items 1, 2 and 5.
    func singleFileStoreWithNotes(in sandbox: TemporaryDirectory) throws -> URL {
        let data = sandbox.appending("data")
        let old = try itemsSeed("1.0.0", ids: [1, 2, 3, 4, 5], in: sandbox)
        let first = try ReseedBinary.run(["launch", "--seed", old.manifestURL.path, "--data-dir", data.path])
        #expect(first.status == 0, "\(first.stderr)")
        let queue = try DatabaseQueue(path: data.appendingPathComponent("items.sqlite").path)
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE note (id INTEGER PRIMARY KEY, item_id INTEGER, text TEXT)")
            try db.execute(sql: "INSERT INTO note (item_id, text) VALUES (1, 'a'), (2, 'b'), (5, 'c')")
        }
        try queue.close()
        return data
    }

    /// A `UserMigrations` folder in `sandbox` holding `files` (name → content).
    func userMigrations(_ files: [String: String], in sandbox: TemporaryDirectory) throws -> URL {
        let folder = sandbox.appending("UserMigrations")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (name, content) in files { try Data(content.utf8).write(to: folder.appendingPathComponent(name)) }
        return folder
    }

    func rows(_ sql: String, in url: URL) throws -> [String] {
        let queue = try DatabaseQueue(path: url.path)
        defer { try? queue.close() }
        return try queue.read { try String.fetchAll($0, sql: sql) }
    }

    @Test func launchFlagsImportTheUserTableAndReportOrphans() throws {
        let sandbox = try TemporaryDirectory()
        let data = try singleFileStoreWithNotes(in: sandbox)
        // 2.0.0 drops items 2 and 5: two notes then point at keys the seed no longer has.
        let new = try itemsSeed("2.0.0", ids: [1, 3, 4], in: sandbox)
        let result = try ReseedBinary.run([
            "launch", "--seed", new.manifestURL.path, "--data-dir", data.path, "--json",
            "--user-store", "items-user", "--user-table", "note", "--user-reference", "note.item_id->item.id",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let outcome = try jsonObject(result.stdout)
        let userStore = data.appendingPathComponent("items-user.sqlite")
        #expect(outcome["outcome"] as? String == "installed")
        #expect(outcome["userStore"] as? String == userStore.path)
        #expect(outcome["importedTables"] as? [String: Int] == ["note": 3])
        #expect(outcome["orphans"] as? [String: Int] == ["note.item_id->item.id": 2])
        #expect(outcome["userStoreKeptAside"] is NSNull)
        #expect(try rows("SELECT text FROM note ORDER BY id", in: userStore) == ["a", "b", "c"])

        // The next launch is up to date: nothing imported again, the user's rows kept.
        let again = try ReseedBinary.run([
            "launch", "--seed", new.manifestURL.path, "--data-dir", data.path,
            "--user-store", "items-user", "--user-table", "note",
        ])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout == """
            items is up to date at 2.0.0 at \(data.appendingPathComponent("items.sqlite").path).
            User store at \(userStore.path), no tables imported.

            """)
        #expect(try rows("SELECT text FROM note ORDER BY id", in: userStore) == ["a", "b", "c"])
    }

    /// The same through reseed.json, with a user migrations folder giving the user store a table of its own.
    /// The migrations run first, as on a fresh install, and the rows are carried into the table they made.
    @Test func projectFileGivesTheUserStoreAndItsMigrations() throws {
        let sandbox = try TemporaryDirectory()
        let data = try singleFileStoreWithNotes(in: sandbox)
        let new = try itemsSeed("2.0.0", ids: [1, 3, 4], in: sandbox)
        _ = try userMigrations([
            "0002_tag.sql": "CREATE TABLE tag (id INTEGER PRIMARY KEY, item_id INTEGER);",
            "0001_pinned.sql": "CREATE TABLE note (id INTEGER PRIMARY KEY, item_id INTEGER, text TEXT, pinned INTEGER NOT NULL DEFAULT 0);",
            "README.md": "Each .sql file is one migration.",
        ], in: sandbox)
        try Data("""
            {"output": "\(new.manifestURL.deletingLastPathComponent().path)", "dataDirectory": "data",
             "userStore": "items-user", "userTables": ["note"],
             "userReferences": ["note.item_id->item.id", "tag.item_id->item.id"], "userMigrations": "UserMigrations"}
            """.utf8).write(to: sandbox.appending("reseed.json"))

        let result = try ReseedBinary.run(["launch", "--json"], in: sandbox.url)
        #expect(result.status == 0, "\(result.stderr)")
        let outcome = try jsonObject(result.stdout)
        let userStore = data.appendingPathComponent("items-user.sqlite")
        #expect(outcome["userStore"] as? String == userStore.path)
        #expect(outcome["importedTables"] as? [String: Int] == ["note": 3])
        #expect(outcome["appliedMigrations"] as? [String] == ["0001_pinned.sql", "0002_tag.sql"])
        #expect(outcome["orphans"] as? [String: Int] == ["note.item_id->item.id": 2, "tag.item_id->item.id": 0])
        #expect(try rows("SELECT text || pinned FROM note ORDER BY id", in: userStore) == ["a0", "b0", "c0"])
        #expect(try rows("SELECT name FROM sqlite_master WHERE name = 'tag'", in: userStore) == ["tag"])

        // status reads the same configuration and shows the user store.
        let status = try ReseedBinary.run(["status"], in: sandbox.url)
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.stdout.contains("user store: \(userStore.path) ("))
        #expect(status.stdout.contains("  tables:     note (3 rows), tag (0 rows)\n"))
        #expect(status.stdout.contains("  migrations: 0001_pinned.sql, 0002_tag.sql\n"))

        // Flags win over the file: another user store, with migrations of its own; the file's
        // "note" is not in the single-file store any more (the seed replaced it), which is reported.
        let otherMigrations = sandbox.appending("OtherMigrations")
        try FileManager.default.createDirectory(at: otherMigrations, withIntermediateDirectories: true)
        try Data("CREATE TABLE note (id INTEGER PRIMARY KEY, item_id INTEGER); CREATE TABLE tag (item_id INTEGER);".utf8)
            .write(to: otherMigrations.appendingPathComponent("0001_other.sql"))
        let other = try ReseedBinary.run(["launch", "--json", "--user-store", "other", "--user-migrations", "OtherMigrations"], in: sandbox.url)
        #expect(other.status == 0, "\(other.stderr)")
        let otherOutcome = try jsonObject(other.stdout)
        #expect(otherOutcome["userStore"] as? String == data.appendingPathComponent("other.sqlite").path)
        #expect(otherOutcome["missingUserTables"] as? [String] == ["note"])
        #expect(otherOutcome["appliedMigrations"] as? [String] == ["0001_other.sql"])

        // A reference to a table the user store does not have is refused, naming it.
        let wrong = try ReseedBinary.run(["launch", "--user-store", "other", "--user-migrations", "OtherMigrations", "--user-reference", "gone.item_id->item.id"], in: sandbox.url)
        #expect(wrong.status == 1)
        #expect(wrong.stderr.hasPrefix("reseed: \(sandbox.appending("data/other.sqlite").path): reference 'gone.item_id->item.id'"), "\(wrong.stderr)")
    }

    @Test func aFailingUserMigrationNamesItsFileAndExitsNonZero() throws {
        let sandbox = try TemporaryDirectory()
        let data = sandbox.appending("data")
        let seed = try itemsSeed("1.0.0", ids: [1, 2], in: sandbox)
        let migrations = try userMigrations([
            "0001_tag.sql": "CREATE TABLE tag (id INTEGER PRIMARY KEY);",
            "0002_broken.sql": "CREATE TABLE broken (id INTEGER PRIMARY KEY,);",
        ], in: sandbox)
        let result = try ReseedBinary.run([
            "launch", "--seed", seed.manifestURL.path, "--data-dir", data.path,
            "--user-store", "items-user", "--user-migrations", migrations.path,
        ])
        #expect(result.status != 0)
        #expect(result.stdout == "")
        #expect(result.stderrLines.count == 1, "\(result.stderr)")
        #expect(result.stderr.contains("0002_broken.sql"))
        #expect(result.stderr.contains("the app's migration '0002_broken.sql' failed and was rolled back (the migrations before it stay applied): near \")\": syntax error"), "\(result.stderr)")
    }

    @Test func aUserMigrationsFolderWithAnotherFileIsRefusedBeforeAnythingIsDone() throws {
        let sandbox = try TemporaryDirectory()
        let data = sandbox.appending("data")
        let seed = try itemsSeed("1.0.0", ids: [1, 2], in: sandbox)
        let migrations = try userMigrations(["0001_tag.sq": "CREATE TABLE tag (id INTEGER PRIMARY KEY);"], in: sandbox)
        let result = try ReseedBinary.run([
            "launch", "--seed", seed.manifestURL.path, "--data-dir", data.path,
            "--user-store", "items-user", "--user-migrations", migrations.path,
        ])
        #expect(result.status == 1)
        #expect(result.stderr == "reseed: \(migrations.appendingPathComponent("0001_tag.sq").path): not a user migration: expected a .sql file\n")
        #expect(!FileManager.default.fileExists(atPath: data.path))

        let missing = try ReseedBinary.run([
            "launch", "--seed", seed.manifestURL.path, "--data-dir", data.path,
            "--user-store", "items-user", "--user-migrations", sandbox.appending("Nowhere").path,
        ])
        #expect(missing.status == 1)
        #expect(missing.stderr.hasPrefix("reseed: \(sandbox.appending("Nowhere").path): cannot read the user migrations folder"))
    }

    @Test func userOptionsWithoutAUserStoreOrWithABadReferenceAreUsageErrors() throws {
        let sandbox = try TemporaryDirectory()
        let seed = try itemsSeed("1.0.0", ids: [1], in: sandbox)
        let data = sandbox.appending("data")
        let noStore = try ReseedBinary.run(["launch", "--seed", seed.manifestURL.path, "--data-dir", data.path, "--user-table", "note"],
                                           in: sandbox.url)
        #expect(noStore.status == 64)
        #expect(noStore.stderr.contains("user tables, references and migrations need a user store: give --user-store"))
        let badReference = try ReseedBinary.run([
            "launch", "--seed", seed.manifestURL.path, "--data-dir", data.path, "--user-store", "u", "--user-reference", "note.item_id",
        ], in: sandbox.url)
        #expect(badReference.status == 64)
        #expect(badReference.stderr.contains("--user-reference: reference 'note.item_id' is not 'table.column->seedTable.seedColumn'"))
        #expect(!FileManager.default.fileExists(atPath: data.path))
    }

    /// `status` looks at a user store read-only: no `-wal` or `-shm` made for a store closed cleanly,
    /// the rows of a store open elsewhere (in its `-wal`) counted, a missing one reported and not created.
    @Test func statusShowsTheUserStoreWithoutCreatingOrWritingAnything() throws {
        let sandbox = try TemporaryDirectory()
        let data = sandbox.appending("data")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        let userStore = data.appendingPathComponent("items-user.sqlite")
        let arguments = ["status", "--data-dir", data.path, "--name", "items", "--user-store", "items-user", "--json"]

        let missing = try ReseedBinary.run(arguments, in: sandbox.url)
        #expect(missing.status == 0, "\(missing.stderr)")
        #expect(missing.stdout.contains("""
            "userStore":{"appliedMigrations":null,"path":"\(userStore.path)","present":false,"problem":"missing","size":null,"tables":null}
            """))
        #expect(!FileManager.default.fileExists(atPath: userStore.path))

        var migrator = DatabaseMigrator()
        migrator.registerMigration("0001_note.sql") { db in
            try db.execute(sql: "CREATE TABLE note (id INTEGER PRIMARY KEY, item_id INTEGER)")
        }
        migrator.registerMigration("0002_tag.sql") { db in try db.execute(sql: "CREATE TABLE tag (id INTEGER PRIMARY KEY)") }
        let pool = try DatabasePool(path: userStore.path)
        try migrator.migrate(pool)
        try pool.write { try $0.execute(sql: "INSERT INTO note (item_id) VALUES (1), (2)") }
        try pool.close()
        let before = try FileManager.default.contentsOfDirectory(atPath: data.path).sorted()
        #expect(before == ["items-user.sqlite"])
        let bytes = try Data(contentsOf: userStore)

        let closed = try jsonObject(try ReseedBinary.run(arguments, in: sandbox.url).stdout)
        let summary = try #require(closed["userStore"] as? [String: Any])
        #expect(summary["present"] as? Bool == true)
        #expect(summary["size"] as? Int == bytes.count)
        #expect(summary["tables"] as? [String: Int] == ["note": 2, "tag": 0])
        #expect(summary["appliedMigrations"] as? [String] == ["0001_note.sql", "0002_tag.sql"])
        #expect(summary["problem"] is NSNull)
        #expect(try FileManager.default.contentsOfDirectory(atPath: data.path).sorted() == before, "no -wal or -shm made")
        #expect(try Data(contentsOf: userStore) == bytes)

        // Open elsewhere, with rows only in its -wal: read through the log.
        let writer = try DatabasePool(path: userStore.path)
        try writer.write { try $0.execute(sql: "INSERT INTO note (item_id) VALUES (3)") }
        let open = try ReseedBinary.run(Array(arguments.dropLast()), in: sandbox.url)
        try writer.close()
        #expect(open.status == 0, "\(open.stderr)")
        #expect(open.stdout.hasSuffix("""
            user store: \(userStore.path) (\(bytes.count) bytes)
              tables:     note (3 rows), tag (0 rows)
              migrations: 0001_note.sql, 0002_tag.sql

            """))

        // Not a database: reported, left as it is.
        let garbage = Data("not a database".utf8)
        try garbage.write(to: userStore)
        let notDatabase = try ReseedBinary.run(Array(arguments.dropLast()), in: sandbox.url)
        #expect(notDatabase.status == 0, "\(notDatabase.stderr)")
        #expect(notDatabase.stdout.hasSuffix("user store: \(userStore.path) (\(garbage.count) bytes)\n  unreadable: not a SQLite database\n"))
        #expect(try Data(contentsOf: userStore) == garbage)
    }

    @Test func diffListsTheReferencedKeysAReleaseRemoves() throws {
        let sandbox = try TemporaryDirectory()
        let old = try itemsSeed("1.0.0", ids: Array(1...30), in: sandbox)
        let new = try itemsSeed("2.0.0", ids: [1, 2, 28, 29, 30, 31], in: sandbox)
        let arguments = ["diff", old.fileURL.path, new.fileURL.path, "--reference", "note.item_id->item.id", "--reference", "tag.item_id->item.label"]
        let text = try ReseedBinary.run(arguments, in: sandbox.url)
        #expect(text.status == 0, "\(text.stderr)")
        let keys = (3...22).map(String.init).joined(separator: ", ")
        // Text keys in SQLite's order: 'item 10' … 'item 19', 'item 20' …, 'item 3'.
        let labels = (3...27).map { "item \($0)" }.sorted().prefix(20).map { "'\($0)'" }.joined(separator: ", ")
        #expect(text.stdout.hasSuffix("""
            Referenced keys removed:
              note.item_id->item.id: 25 (\(keys), … and 5 more)
              tag.item_id->item.label: 25 (\(labels), … and 5 more)

            """), "\(text.stdout)")

        let json = try ReseedBinary.run(arguments + ["--json"], in: sandbox.url)
        #expect(json.status == 0, "\(json.stderr)")
        let entries = try #require(try jsonObject(json.stdout)["referencedKeys"] as? [[String: Any]])
        #expect(entries.map { $0["reference"] as? String } == ["note.item_id->item.id", "tag.item_id->item.label"])
        #expect(entries.map { $0["removed"] as? Int } == [25, 25])
        #expect(entries.first?["keys"] as? [String] == (3...22).map(String.init))

        // Nothing removed: said so; a release that keeps every key is not a failure either way.
        let same = try ReseedBinary.run(["diff", old.fileURL.path, old.fileURL.path, "--reference", "note.item_id->item.id"], in: sandbox.url)
        #expect(same.status == 0)
        #expect(same.stdout.hasSuffix("No differences.\n\nReferenced keys removed:\n  note.item_id->item.id: none\n"))

        // A reference to a column the old seed lacks is an error naming it.
        let wrong = try ReseedBinary.run(["diff", old.fileURL.path, new.fileURL.path, "--reference", "note.item_id->item.code"], in: sandbox.url)
        #expect(wrong.status == 1)
        #expect(wrong.stderr.contains("reference 'note.item_id->item.code': the old seed's table 'item' has no column 'code'"))
        #expect(wrong.stderr.contains(old.fileURL.path))
    }
}
