import Foundation
import GRDB
import Reseed
import ReseedTesting
import ReseedTestSupport
import Testing

/// The user store: the app's own tables in a file of their own, the seed attached read-only.
@Suite(.timeLimit(.minutes(10)))
struct UserStoreTests {
    /// The app's schema: notes that refer to seed items.
    static func migrator() -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("notes") { db in
            // IF NOT EXISTS: the same migration serves a fresh install and a store whose notes were imported.
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS note (id INTEGER PRIMARY KEY AUTOINCREMENT, item_id INTEGER, text TEXT NOT NULL)")
        }
        return migrator
    }

    static func userStore(tables: [String] = [], migrator: DatabaseMigrator = migrator()) throws -> Launcher.UserStore {
        Launcher.UserStore(name: "items-user", migrator: migrator, userTables: tables,
                           references: [try SeedReference("note.item_id", to: "item.id")])
    }

    func userStoreURL(_ sandbox: LaunchSandbox) -> URL { sandbox.dataDirectory.appendingPathComponent("items-user.sqlite") }

    @Test func userRowsSurviveEveryInstallAndJoinSeedRows() throws {
        let sandbox = try LaunchSandbox()
        let userStore = try Self.userStore()
        let first = sandbox.launcher(try sandbox.seed("1.0.0", rows: 3)) { $0.userStore = userStore }
        var (database, outcome) = try first.launch()
        #expect(outcome.action == .installed)
        #expect(outcome.userStoreURL?.path == userStoreURL(sandbox).path)
        #expect(outcome.appliedMigrations == ["notes"])
        #expect(outcome.orphans == ["note.item_id->item.id": 0])
        try database.write { db in
            try db.execute(sql: "INSERT INTO note (item_id, text) VALUES (1, 'first'), (3, 'third')")
        }
        let joined = try database.read { db in
            try String.fetchAll(db, sql: "SELECT item.label || ':' || note.text FROM note JOIN item ON item.id = note.item_id ORDER BY note.id")
        }
        #expect(joined == ["1.0.0-1:first", "1.0.0-3:third"])
        // A write to a seed table fails with SQLite's read-only error.
        #expect {
            try database.write { try $0.execute(sql: "UPDATE item SET label = 'x'") }
        } throws: { ($0 as? DatabaseError)?.resultCode == .SQLITE_READONLY }
        try database.close()

        // A new seed with fewer items: the notes stay, and the one pointing at a removed item is counted.
        let second = sandbox.launcher(try sandbox.seed("2.0.0", rows: 2)) { $0.userStore = userStore }
        (database, outcome) = try second.launch()
        #expect(outcome.action == .installed)
        #expect(outcome.appliedMigrations.isEmpty)
        #expect(outcome.orphans == ["note.item_id->item.id": 1])
        let notes = try database.read { try String.fetchAll($0, sql: "SELECT text FROM note ORDER BY id") }
        #expect(notes == ["first", "third"])
        #expect(try database.read { try String.fetchAll($0, sql: "SELECT label FROM item ORDER BY id") } == ["2.0.0-1", "2.0.0-2"])
        try database.close()
        // The seed file holds only the seed.
        #expect(try sandbox.labels() == ["2.0.0-1", "2.0.0-2"])
        let seedTables = try DatabaseQueue(path: sandbox.storeURL.path).read { try String.fetchAll($0, sql: "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name") }
        #expect(!seedTables.contains("note"))
    }

    /// The seed is attached through a URI: every byte of its path but unreserved ASCII and "/" is
    /// percent-encoded (a space, "#", "?", "%", non-ASCII), and SQLite opens the file it names.
    @Test func theSeedsURIEscapesItsPathAndSQLiteOpensIt() throws {
        #expect(Launcher.readOnlyURI("/data/a b#?%é~_.-/x.sqlite") == "file:/data/a%20b%23%3F%25%C3%A9~_.-/x.sqlite?mode=ro&immutable=1")
        let sandbox = try LaunchSandbox()
        let folder = sandbox.directory.appending("a b#?%é")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent("x.sqlite").path
        try DatabaseQueue(path: path).write { try $0.execute(sql: "CREATE TABLE t (v); INSERT INTO t VALUES ('here')") }
        let queue = try DatabaseQueue()
        let value = try queue.inDatabase { db in
            try db.execute(sql: "ATTACH DATABASE ? AS seed", arguments: [Launcher.readOnlyURI(path)])
            return try String.fetchOne(db, sql: "SELECT v FROM seed.t")
        }
        #expect(value == "here")
    }

    @Test func userTablesAreCarriedOutOfASingleFileStore() throws {
        let sandbox = try LaunchSandbox()
        // An earlier release: one file, the app's notes written into it.
        let old = sandbox.launcher(try sandbox.seed("1.0.0", rows: 3))
        let (single, _) = try old.launch()
        try single.write { db in
            try db.execute(sql: "CREATE TABLE note (id INTEGER PRIMARY KEY AUTOINCREMENT, item_id INTEGER, text TEXT NOT NULL)")
            try db.execute(sql: "CREATE INDEX note_item ON note(item_id)")
            try db.execute(sql: "CREATE TRIGGER note_upper AFTER INSERT ON note BEGIN UPDATE note SET text = upper(text) WHERE id = new.id; END")
            for i in 1...50 { try db.execute(sql: "INSERT INTO note (item_id, text) VALUES (?, ?)", arguments: [i % 4, "n\(i)"]) }
            try db.execute(sql: "DELETE FROM note WHERE id = 50")
        }
        try single.close()

        // This release: the same seed version, a user store declared with the notes, which no
        // migration of the app makes: the import creates the table as the old store had it.
        var migrator = DatabaseMigrator()
        migrator.registerMigration("notes") { db in try db.execute(sql: "CREATE TABLE setting (key TEXT PRIMARY KEY, value)") }
        let userStore = try Self.userStore(tables: ["note", "bookmark"], migrator: migrator)
        let (database, outcome) = try sandbox.launcher(try sandbox.seed("1.0.0", rows: 3)) { $0.userStore = userStore }.launch()
        #expect(outcome.action == .installed)
        #expect(outcome.reason == .userDataMoved)
        #expect(outcome.importedTables == ["note": 49])
        #expect(outcome.missingUserTables == ["bookmark"])
        #expect(outcome.appliedMigrations == ["notes"])
        let (count, texts, sequence) = try database.read { db in
            (try Int.fetchOne(db, sql: "SELECT count(*) FROM main.note"),
             try String.fetchAll(db, sql: "SELECT text FROM note ORDER BY id LIMIT 2"),
             try Int.fetchOne(db, sql: "SELECT seq FROM main.sqlite_sequence WHERE name = 'note'"))
        }
        #expect(count == 49)
        #expect(texts == ["N1", "N2"])
        #expect(sequence == 50)
        // The index and the trigger came along; the trigger fires on new rows only.
        try database.write { try $0.execute(sql: "INSERT INTO note (item_id, text) VALUES (1, 'new')") }
        let (newText, newID, hasIndex) = try database.read { db in
            (try String.fetchOne(db, sql: "SELECT text FROM note ORDER BY id DESC LIMIT 1"),
             try Int.fetchOne(db, sql: "SELECT max(id) FROM note"),
             try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM main.sqlite_master WHERE name = 'note_item'"))
        }
        #expect(newText == "NEW")
        #expect(newID == 51)
        #expect(hasIndex == true)
        try database.close()
        // The store file is the seed again, without the notes.
        let seedTables = try DatabaseQueue(path: sandbox.storeURL.path).read { try String.fetchAll($0, sql: "SELECT name FROM sqlite_master WHERE type = 'table'") }
        #expect(!seedTables.contains("note"))

        // The next launch is up to date and imports nothing.
        let (again, next) = try sandbox.launcher(try sandbox.seed("1.0.0", rows: 3)) { $0.userStore = userStore }.launch()
        #expect(next.action == .upToDate)
        #expect(next.importedTables.isEmpty)
        #expect(try again.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM note") } == 50)
        try again.close()
    }

    /// SQLite does not replay it on its own either: this guards the behaviour, not a fix (see the lead's note).
    @Test func aWALLeftWithoutItsUserStoreIsNotReplayedIntoTheNewOne() throws {
        let sandbox = try LaunchSandbox()
        let userStore = try Self.userStore()
        let launcher = sandbox.launcher(try sandbox.seed("1.0.0", rows: 3)) { $0.userStore = userStore }
        let (database, _) = try launcher.launch()
        try database.write { db in
            for i in 1...20 { try db.execute(sql: "INSERT INTO note (item_id, text) VALUES (1, ?)", arguments: ["old \(i)"]) }
        }
        // The user store is lost but its WAL, holding those rows, stays behind.
        let wal = try Data(contentsOf: URL(fileURLWithPath: userStoreURL(sandbox).path + "-wal"))
        #expect(wal.count > 32)
        try database.close()
        try FileManager.default.removeItem(at: userStoreURL(sandbox))
        try wal.write(to: URL(fileURLWithPath: userStoreURL(sandbox).path + "-wal"))

        let (again, outcome) = try launcher.launch()
        #expect(outcome.appliedMigrations == ["notes"])
        let (notes, integrity) = try again.read { db in
            (try Int.fetchOne(db, sql: "SELECT count(*) FROM note"), try String.fetchOne(db, sql: "PRAGMA main.integrity_check"))
        }
        #expect(notes == 0)
        #expect(integrity == "ok")
        try again.close()
    }

    @Test func aSeedFileThatFailsToAttachIsInstalledAgainAndTheUserRowsStay() throws {
        let sandbox = try LaunchSandbox()
        let userStore = try Self.userStore()
        let launcher = sandbox.launcher(try sandbox.seed("1.0.0", rows: 3)) { $0.userStore = userStore }
        let (database, _) = try launcher.launch()
        try database.write { try $0.execute(sql: "INSERT INTO note (item_id, text) VALUES (2, 'mine')") }
        try database.close()
        // The seed's header stays, its schema page is garbage: it looks up to date and fails to attach.
        let handle = try FileHandle(forUpdating: sandbox.storeURL)
        try handle.seek(toOffset: 100)
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 3_996))
        try handle.close()

        let (again, outcome) = try launcher.launch()
        #expect(outcome.action == .installed)
        #expect(outcome.reason == .storeInvalid)
        let joined = try again.read { try String.fetchAll($0, sql: "SELECT note.text || '@' || item.label FROM note JOIN item ON item.id = note.item_id") }
        #expect(joined == ["mine@1.0.0-2"])
        try again.close()
    }

    @Test func aUserStoreThatIsNotADatabaseIsKeptAsideAndANewOneMade() throws {
        let sandbox = try LaunchSandbox()
        let userStore = try Self.userStore()
        let launcher = sandbox.launcher(try sandbox.seed("1.0.0", rows: 3)) { $0.userStore = userStore }
        try FileManager.default.createDirectory(at: sandbox.dataDirectory, withIntermediateDirectories: true)
        try Data("not a database, but the user's".utf8).write(to: userStoreURL(sandbox))
        let (database, outcome) = try launcher.launch()
        let aside = try #require(outcome.userStoreKeptAside)
        #expect(aside.lastPathComponent.hasPrefix("items-user.sqlite.invalid-"))
        #expect(try String(contentsOf: aside, encoding: .utf8) == "not a database, but the user's")
        #expect(outcome.appliedMigrations == ["notes"])
        #expect(try database.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM note") } == 0)
        try database.close()
    }

    /// An up-to-date launch skips the checks only while nothing they depend on changed.
    @Test func anUpToDateLaunchChecksAgainWhenTheReferencesOrTheUserSchemaChange() throws {
        let sandbox = try LaunchSandbox()
        let seed = try sandbox.seed("1.0.0", rows: 3)
        let (database, _) = try sandbox.launcher(seed) { $0.userStore = try? Self.userStore() }.launch()
        try database.close()
        // Up to date and unchanged: the checks passed before and are skipped; it opens.
        let (again, outcome) = try sandbox.launcher(seed) { $0.userStore = try? Self.userStore() }.launch()
        #expect(outcome.action == .upToDate)
        // A table created outside the migrator with a seed table's name changes the schema version.
        try again.write { try $0.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY)") }
        try again.close()
        #expect {
            try sandbox.launcher(seed) { $0.userStore = try? Self.userStore() }.launch()
        } throws: { ($0 as? ReseedError)?.code == .userStoreConflict && "\($0)".contains("'item'") }
        let queue = try DatabaseQueue(path: userStoreURL(sandbox).path)
        try queue.write { try $0.execute(sql: "DROP TABLE item") }
        try queue.close()
        _ = try sandbox.launcher(seed) { $0.userStore = try? Self.userStore() }.launch().database.close()
        // A new release of the app declares a reference with a typo, the seed unchanged.
        var typo = try Self.userStore()
        typo.references.append(try SeedReference("note.item_idd", to: "item.id"))
        #expect {
            try sandbox.launcher(seed) { $0.userStore = typo }.launch()
        } throws: { ($0 as? ReseedError)?.code == .userStoreConflict && "\($0)".contains("note.item_idd") }
    }

    /// Back to a single file, the app may write user tables into the store again: the marker that says
    /// it holds none is cleared, so a later user store looks for them again.
    @Test func aLaunchWithoutAUserStoreClearsTheMarkerThatTheStoreHoldsNoUserTables() throws {
        let sandbox = try LaunchSandbox()
        let seed = try sandbox.seed("1.0.0", rows: 3)
        _ = try sandbox.launcher(seed) { $0.userStore = try? Self.userStore(tables: ["note"]) }.launch().database.close()
        func marker() throws -> String? {
            let object = try JSONSerialization.jsonObject(with: Data(contentsOf: sandbox.preferencesURL)) as? [String: Any]
            return ((object?["reseed"] as? [String: Any])?["items"] as? [String: Any])?["userStore"] as? String
        }
        #expect(try marker() == "items-user")
        let (single, outcome) = try sandbox.launcher(seed).launch()
        #expect(outcome.action == .upToDate)
        #expect(try marker() == nil)
        try single.write { db in
            try db.execute(sql: "CREATE TABLE note (id INTEGER PRIMARY KEY AUTOINCREMENT, item_id INTEGER, text TEXT NOT NULL)")
            try db.execute(sql: "INSERT INTO note (item_id, text) VALUES (1, 'written in single-file mode')")
        }
        try single.close()
        try FileManager.default.removeItem(at: userStoreURL(sandbox))
        let (database, again) = try sandbox.launcher(seed) { $0.userStore = try? Self.userStore(tables: ["note"]) }.launch()
        #expect(again.importedTables == ["note": 1])
        #expect(again.reason == .userDataMoved)
        #expect(try database.read { try String.fetchAll($0, sql: "SELECT text FROM note") } == ["written in single-file mode"])
        try database.close()
    }

    /// Full-text search with a user store: `MATCH` on a seed FTS table through the attached
    /// schema (unqualified and qualified), and a user table with an FTS index of its own that
    /// survives a seed update.
    @Test func fullTextSearchWorksOnSeedTablesAndUserTables() throws {
        let sandbox = try LaunchSandbox()
        var migrator = DatabaseMigrator()
        migrator.registerMigration("notes") { db in
            try db.execute(sql: """
                CREATE TABLE note (id INTEGER PRIMARY KEY, item_id INTEGER, text TEXT NOT NULL);
                CREATE VIRTUAL TABLE note_fts USING fts5(text, content = 'note', content_rowid = 'id');
                CREATE TRIGGER note_ai AFTER INSERT ON note BEGIN INSERT INTO note_fts(rowid, text) VALUES (new.id, new.text); END;
                """)
        }
        let userStore = Launcher.UserStore(name: "items-user", migrator: migrator)
        let search = [
            "CREATE VIRTUAL TABLE item_fts USING fts5(label, body)",
            "INSERT INTO item_fts(rowid, label, body) SELECT id, label, 'plaster bandage size ' || id FROM item",
        ]
        let first = sandbox.launcher(try sandbox.seed("1.0.0", rows: 3, sql: search)) { $0.userStore = userStore }
        var (database, _) = try first.launch()
        try database.write { try $0.execute(sql: "INSERT INTO note (item_id, text) VALUES (2, 'the bandage ran out')") }
        func answers(_ database: DatabasePool) throws -> [String] {
            try database.read { db in
                try String.fetchAll(db, sql: "SELECT label FROM item_fts WHERE item_fts MATCH 'body:bandage AND body:2' ORDER BY rank")
                    + String.fetchAll(db, sql: "SELECT highlight(item_fts, 1, '[', ']') FROM seed.item_fts WHERE item_fts MATCH 'size' ORDER BY rowid LIMIT 1")
                    + String.fetchAll(db, sql: "SELECT n.text FROM note_fts JOIN note n ON n.id = note_fts.rowid WHERE note_fts MATCH 'bandage'")
            }
        }
        #expect(try answers(database) == ["1.0.0-2", "plaster bandage [size] 1", "the bandage ran out"])
        #expect {
            try database.write { try $0.execute(sql: "INSERT INTO item_fts(rowid, label, body) VALUES (9, 'x', 'y')") }
        } throws: { ($0 as? DatabaseError)?.resultCode == .SQLITE_READONLY }
        try database.close()

        let second = sandbox.launcher(try sandbox.seed("2.0.0", rows: 3, sql: search)) { $0.userStore = userStore }
        (database, _) = try second.launch()
        let afterUpdate = try answers(database)
        #expect(afterUpdate == ["2.0.0-2", "plaster bandage [size] 1", "the bandage ran out"])
        #expect(try database.write { db in
            try db.execute(sql: "INSERT INTO note_fts(note_fts) VALUES ('integrity-check')")
            return try Int.fetchOne(db, sql: "SELECT count(*) FROM note_fts WHERE note_fts MATCH 'ran'")
        } == 1)
        try database.close()
    }
}
