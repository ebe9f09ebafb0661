#if canImport(Glibc)
import Glibc
#endif
import Foundation
import GRDB
import Reseed
import ReseedTesting
import ReseedTestSupport
import Testing

/// Bad input around a user store: each a clear error (or a file kept aside), and nothing the user had lost.
@Suite(.timeLimit(.minutes(10)))
struct UserStoreBadInputTests {
    static let noteTable = "CREATE TABLE IF NOT EXISTS note (id INTEGER PRIMARY KEY AUTOINCREMENT, item_id INTEGER, text TEXT NOT NULL)"

    static func userStore(name: String = "items-user", tables: [String] = [], references: [SeedReference] = [],
                          migrations: [(String, String)] = []) -> Launcher.UserStore {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("notes") { try $0.execute(sql: noteTable) }
        for (identifier, sql) in migrations {
            migrator.registerMigration(identifier) { try $0.execute(sql: sql) }
        }
        return Launcher.UserStore(name: name, migrator: migrator, userTables: tables, references: references)
    }

    func userStoreURL(_ sandbox: LaunchSandbox) -> URL { sandbox.dataDirectory.appendingPathComponent("items-user.sqlite") }

    /// A user store at 1.0.0 with three notes, closed.
    func deviceWithNotes(_ sandbox: LaunchSandbox) throws {
        let (pool, _) = try sandbox.launcher(try sandbox.seed("1.0.0")) { $0.userStore = Self.userStore() }.launch()
        try pool.write { try $0.execute(sql: "INSERT INTO note (item_id, text) VALUES (1, 'a'), (2, 'b'), (3, 'c')") }
        try pool.close()
    }

    func notes(_ url: URL) throws -> [String] {
        let queue = try DatabaseQueue(path: url.path)
        defer { try? queue.close() }
        return try queue.read { try String.fetchAll($0, sql: "SELECT text FROM note ORDER BY id") }
    }

    func migrations(_ url: URL) throws -> [String] {
        let queue = try DatabaseQueue(path: url.path)
        defer { try? queue.close() }
        return try queue.read { try String.fetchAll($0, sql: "SELECT identifier FROM grdb_migrations ORDER BY rowid") }
    }

    func expectError(_ code: ReseedError.Code, _ step: ReseedError.Step, naming words: [String],
                     sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
        do {
            try body()
            Issue.record("no error, expected \(code) at \(step)", sourceLocation: sourceLocation)
        } catch let error as ReseedError {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
            #expect(error.step == step, "\(error)", sourceLocation: sourceLocation)
            for word in words { #expect(error.description.contains(word), "'\(word)' not in: \(error)", sourceLocation: sourceLocation) }
        } catch {
            Issue.record("an untyped error: \(error)", sourceLocation: sourceLocation)
        }
    }

    // MARK: The app's migrator fails

    @Test func aFailingMigrationIsNamedAndLeavesTheUserStoreAsItWas() throws {
        let sandbox = try LaunchSandbox()
        try deviceWithNotes(sandbox)
        let before = try Data(contentsOf: userStoreURL(sandbox))
        let broken = Self.userStore(migrations: [("add-color", "ALTER TABLE note ADD COLUMN color TEXT"),
                                                 ("broken-index", "CREATE INDEX note_nope ON note(nope)")])
        let upgrade = sandbox.launcher(try sandbox.seed("2.0.0", rows: 5)) { $0.userStore = broken }
        expectError(.database, .migrateUserStore, naming: ["broken-index", "items-user.sqlite"]) { _ = try upgrade.launch() }
        // The failing migration is rolled back. Each GRDB migration commits on its own: the one before it stays.
        let applied = try migrations(userStoreURL(sandbox))
        #expect(applied == ["notes", "add-color"])
        #expect(try notes(userStoreURL(sandbox)) == ["a", "b", "c"])
        // The seed install of that launch stays: the store file is 2.0.0, recorded.
        #expect(try sandbox.embeddedVersion() == "2.0.0")
        #expect(try sandbox.recordedVersion() == "2.0.0")
        #expect(before.count > 0)

        // Only a failing migration new: the user store's rows and migrations are as before.
        let onlyBroken = Self.userStore(migrations: [("add-color", "ALTER TABLE note ADD COLUMN color TEXT"), ("broken", "INSERT INTO nope VALUES (1)")])
        let again = sandbox.launcher(try sandbox.seed("2.0.0", rows: 5)) { $0.userStore = onlyBroken }
        expectError(.database, .migrateUserStore, naming: ["'broken'"]) { _ = try again.launch() }
        #expect(try migrations(userStoreURL(sandbox)) == ["notes", "add-color"])
        #expect(try notes(userStoreURL(sandbox)) == ["a", "b", "c"])

        // A release with the migration fixed launches, up to date, and applies it.
        let fixed = Self.userStore(migrations: [("add-color", "ALTER TABLE note ADD COLUMN color TEXT"), ("broken", "CREATE TABLE nope (x)")])
        let (pool, outcome) = try sandbox.launcher(try sandbox.seed("2.0.0", rows: 5)) { $0.userStore = fixed }.launch()
        #expect(outcome.action == .upToDate)
        #expect(outcome.appliedMigrations == ["broken"])
        #expect(try pool.read { try String.fetchAll($0, sql: "SELECT text FROM note ORDER BY id") } == ["a", "b", "c"])
        try pool.close()
    }

    // MARK: The user store is not a database

    enum NotADatabase: String, CaseIterable { case text, fifo, symlinkToText, symlinkToDatabase, directory, garbage16 }

    @Test(arguments: NotADatabase.allCases)
    func aUserStoreThatIsNotADatabaseIsKeptAsideAndANewOneMade(_ kind: NotADatabase) throws {
        let sandbox = try LaunchSandbox()
        try deviceWithNotes(sandbox)
        let url = userStoreURL(sandbox)
        try FileManager.default.removeItem(at: url)
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
        let outside = sandbox.directory.appending("elsewhere.txt")
        let elsewhereDatabase = sandbox.directory.appending("elsewhere.sqlite")
        switch kind {
        case .text: try Data("my notes, not a database\n".utf8).write(to: url)
        case .garbage16: try Data((0..<4096).map { UInt8($0 % 251) }).write(to: url)
        case .fifo: #expect(mkfifo(url.path, 0o644) == 0)
        case .symlinkToText:
            try Data("outside\n".utf8).write(to: outside)
            try FileManager.default.createSymbolicLink(at: url, withDestinationURL: outside)
        case .symlinkToDatabase:
            let queue = try DatabaseQueue(path: elsewhereDatabase.path)
            try queue.write { try $0.execute(sql: "\(Self.noteTable); INSERT INTO note (item_id, text) VALUES (1, 'elsewhere')") }
            try queue.close()
            try FileManager.default.createSymbolicLink(at: url, withDestinationURL: elsewhereDatabase)
        case .directory:
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
            try Data("inside".utf8).write(to: url.appendingPathComponent("keep.txt"))
        }
        let kept: URL
        do {
            let (pool, outcome) = try sandbox.launcher(try sandbox.seed("1.0.0")) { $0.userStore = Self.userStore() }.launch()
            #expect(outcome.action == .upToDate)
            #expect(outcome.appliedMigrations == ["notes"], "a new, empty user store is made and migrated")
            #expect(try pool.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM note") } == 0)
            try pool.close()
            kept = try #require(outcome.userStoreKeptAside, "\(kind): not reported in the outcome")
        } catch {
            Issue.record("\(kind): \(error)")
            return
        }
        #expect(kept.lastPathComponent.hasPrefix("items-user.sqlite.invalid-"), "\(kept)")
        #expect(kept.deletingLastPathComponent().path == sandbox.dataDirectory.path)
        // Never deleted: what was there is there, under the new name (a symlink still points where it did).
        switch kind {
        case .text: #expect(try String(contentsOf: kept, encoding: .utf8) == "my notes, not a database\n")
        case .garbage16: #expect(try Data(contentsOf: kept).count == 4096)
        case .fifo:
            var status = stat()
            #expect(lstat(kept.path, &status) == 0 && status.st_mode & S_IFMT == S_IFIFO, "the FIFO was not kept aside as it was")
        case .symlinkToText:
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: kept.path) == outside.path)
            #expect(try String(contentsOf: outside, encoding: .utf8) == "outside\n")
        case .symlinkToDatabase:
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: kept.path) == elsewhereDatabase.path)
            #expect(try notes(elsewhereDatabase) == ["elsewhere"])
        case .directory: #expect(try String(contentsOf: kept.appendingPathComponent("keep.txt"), encoding: .utf8) == "inside")
        }
        // The next launch keeps the new user store.
        let (pool, next) = try sandbox.launcher(try sandbox.seed("1.0.0")) { $0.userStore = Self.userStore() }.launch()
        #expect(next.userStoreKeptAside == nil)
        try pool.close()
    }

    // MARK: Conflicts with the seed

    @Test func aUserTableWithASeedTablesNameIsRefusedNamingBoth() throws {
        let sandbox = try LaunchSandbox()
        let shadowing = Self.userStore(migrations: [("item", "CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT)")])
        let launcher = sandbox.launcher(try sandbox.seed("1.0.0")) { $0.userStore = shadowing }
        expectError(.userStoreConflict, .checkUserStore, naming: ["'item'", "'seed.item'", "items-user.sqlite"]) { _ = try launcher.launch() }
        // The seed's rows are whole, in the seed.
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
    }

    /// A table declared as the user's that the seed has too (the app misdeclared a seed table):
    /// refused before anything is copied or installed; the single-file store stays as it is.
    @Test func aDeclaredUserTableThatTheSeedHasIsRefusedBeforeTheImport() throws {
        let sandbox = try LaunchSandbox()
        let (single, _) = try sandbox.launcher(try sandbox.seed("1.0.0")).launch()
        try single.write { db in
            try db.execute(sql: Self.noteTable)
            try db.execute(sql: "INSERT INTO note (item_id, text) VALUES (1, 'kept')")
        }
        try single.close()
        let launcher = sandbox.launcher(try sandbox.seed("2.0.0")) { $0.userStore = Self.userStore(tables: ["note", "item"]) }
        expectError(.userStoreConflict, .checkUserStore, naming: ["'item'"]) { _ = try launcher.launch() }
        #expect(!FileManager.default.fileExists(atPath: userStoreURL(sandbox).path), "a user store was made")
        #expect(try notes(sandbox.storeURL) == ["kept"])
        #expect(try sandbox.embeddedVersion() == "1.0.0")
        #expect(try sandbox.temporaryFiles().isEmpty)
    }

    @Test(arguments: [("note.nope", "item.id", "column 'note.nope'"), ("notes.item_id", "item.id", "table 'notes'"),
                      ("note.item_id", "items.id", "table 'items'"), ("note.item_id", "item.nope", "column 'item.nope'")])
    func aReferenceToAMissingTableOrColumnIsRefusedNamingIt(_ user: String, _ seed: String, _ named: String) throws {
        let sandbox = try LaunchSandbox()
        try deviceWithNotes(sandbox)
        let reference = try SeedReference(user, to: seed)
        let launcher = sandbox.launcher(try sandbox.seed("2.0.0")) { $0.userStore = Self.userStore(references: [reference]) }
        expectError(.userStoreConflict, .checkUserStore, naming: [named, "\(user)->\(seed)"]) { _ = try launcher.launch() }
        #expect(try notes(userStoreURL(sandbox)) == ["a", "b", "c"])
    }

    @Test(arguments: ["items", "", "a/b", "../items-user"])
    func aUserStoreNameThatCannotWorkIsRefusedBeforeAnythingChanges(_ name: String) throws {
        let sandbox = try LaunchSandbox()
        let (single, _) = try sandbox.launcher(try sandbox.seed("1.0.0")).launch()
        try single.write { try $0.execute(sql: "\(Self.noteTable); INSERT INTO note (item_id, text) VALUES (1, 'kept')") }
        try single.close()
        let before = try sandbox.files().filter { !$0.hasSuffix(".reseed-lock") }
        let launcher = sandbox.launcher(try sandbox.seed("2.0.0")) { $0.userStore = Self.userStore(name: name, tables: ["note"]) }
        expectError(.invalidArgument, .openUserStore, naming: ["'\(name)'"]) { _ = try launcher.launch() }
        #expect(try sandbox.files().filter { !$0.hasSuffix(".reseed-lock") } == before, "\((try? sandbox.files()) ?? []) vs \(before)")
        #expect(try notes(sandbox.storeURL) == ["kept"])
        #expect(try sandbox.embeddedVersion() == "1.0.0")
    }

    /// A declared user table that is an FTS5 table in the old store: refused, naming it; the old store keeps its rows.
    @Test func aDeclaredVirtualTableIsRefusedAndTheOldStoreKeepsItsRows() throws {
        let sandbox = try LaunchSandbox()
        let (single, _) = try sandbox.launcher(try sandbox.seed("1.0.0")).launch()
        try single.write { db in
            try db.execute(sql: Self.noteTable)
            try db.execute(sql: "INSERT INTO note (item_id, text) VALUES (1, 'kept')")
            try db.execute(sql: "CREATE VIRTUAL TABLE search USING fts5(body)")
            try db.execute(sql: "INSERT INTO search (body) VALUES ('needle in a haystack')")
        }
        try single.close()
        let launcher = sandbox.launcher(try sandbox.seed("2.0.0")) { $0.userStore = Self.userStore(tables: ["note", "search"]) }
        expectError(.invalidArgument, .importUserTables, naming: ["'search'", "virtual"]) { _ = try launcher.launch() }
        #expect(!FileManager.default.fileExists(atPath: userStoreURL(sandbox).path))
        #expect(try sandbox.temporaryFiles().isEmpty)
        #expect(try sandbox.embeddedVersion() == "1.0.0")
        let queue = try DatabaseQueue(path: sandbox.storeURL.path)
        defer { try? queue.close() }
        #expect(try queue.read { try String.fetchAll($0, sql: "SELECT body FROM search WHERE search MATCH 'needle'") } == ["needle in a haystack"])
        #expect(try notes(sandbox.storeURL) == ["kept"])
    }
}

extension UserStoreBadInputTests {
    /// A single-file store whose header is SQLite's but whose pages are garbage, when the user's
    /// tables are to be carried out of it: today a clear error naming the step and the file at
    /// every launch, the store left as it is (the user's rows may be in it). Without a user store
    /// the same file is installed over and kept aside; see the report to the lead.
    @Test func aCorruptSingleFileStoreIsKeptAsideAndReplacedSoTheAppStarts() throws {
        let sandbox = try LaunchSandbox()
        let (single, _) = try sandbox.launcher(try sandbox.seed("1.0.0")).launch()
        try single.write { try $0.execute(sql: "\(Self.noteTable); INSERT INTO note (item_id, text) VALUES (1, 'kept')") }
        try single.close()
        var bytes = try Data(contentsOf: sandbox.storeURL)
        for i in 16..<bytes.count { bytes[i] = UInt8((i * 7) % 256) }
        try bytes.write(to: sandbox.storeURL)
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: sandbox.storeURL.path + suffix) }

        let launcher = sandbox.launcher(try sandbox.seed("2.0.0")) { $0.userStore = Self.userStore(tables: ["note"]) }
        // As without a user store: the unreadable file is kept aside byte for byte and the seed installed, so the app starts.
        let (database, outcome) = try launcher.launch()
        #expect(outcome.action == .installed)
        #expect(outcome.reason == .storeInvalid)
        #expect(outcome.importedTables.isEmpty)
        let aside = try #require(outcome.storeKeptAside)
        #expect(try Data(contentsOf: aside) == bytes, "the old store is kept as it was")
        #expect(try database.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM note") } == 0)
        try database.close()
        #expect(try sandbox.temporaryFiles().isEmpty)
    }
}
