import Foundation
import GRDB
@testable import Reseed
import ReseedTestSupport
import ReseedSystem
import Testing

/// Issue 32: the ordinary mistakes around a user store never cost a row. Each case ends with every
/// row the user had in the user store or in a file kept aside, or in one sentence naming the file.
@Suite(.timeLimit(.minutes(10)))
struct UserRowsKeptTests {
    static let userName = "items-user"

    /// An earlier release's single-file store at 1.0.0 holding the app's `incident` table with `rows` rows.
    static func singleFileStore(_ sandbox: LaunchSandbox, rows: Int = 1000, table: String = "incident") throws {
        let (single, _) = try sandbox.launcher(try sandbox.seed("1.0.0")).launch()
        try single.write { db in
            try db.execute(sql: "CREATE TABLE \(table) (id INTEGER PRIMARY KEY, item_id INTEGER, note TEXT)")
            try db.execute(sql: """
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows))
                INSERT INTO \(table) (item_id, note) SELECT i % 3 + 1, 'note ' || i FROM n
                """)
        }
        try single.close()
    }

    static func userStore(tables: [String], migrator: DatabaseMigrator = DatabaseMigrator()) -> Launcher.UserStore {
        Launcher.UserStore(name: userName, migrator: migrator, userTables: tables)
    }

    func userStoreURL(_ sandbox: LaunchSandbox) -> URL { sandbox.dataDirectory.appendingPathComponent(Self.userName + ".sqlite") }

    /// Every `incident` row in the user store, and in every file kept aside, by note.
    func incidentRows(_ sandbox: LaunchSandbox) throws -> (userStore: Int, keptAside: Int) {
        func count(_ path: String) throws -> Int {
            let queue = try DatabaseQueue(path: path)
            defer { try? queue.close() }
            return try queue.read { db in
                guard try db.tableExists("incident") else { return 0 }
                return try Int.fetchOne(db, sql: "SELECT count(*) FROM incident") ?? 0
            }
        }
        let user = FileManager.default.fileExists(atPath: userStoreURL(sandbox).path) ? try count(userStoreURL(sandbox).path) : 0
        var aside = 0
        for name in try sandbox.files() where name.hasPrefix("items.sqlite.") && !name.hasSuffix("-wal") && !name.hasSuffix("-shm") {
            aside += try count(sandbox.dataDirectory.appendingPathComponent(name).path)
        }
        return (user, aside)
    }

    /// Case 1: a table declared in another case than the store's is the same table, as in SQLite.
    @Test func aTableDeclaredInAnotherCaseIsCarried() throws {
        let sandbox = try LaunchSandbox()
        try Self.singleFileStore(sandbox)
        let launcher = sandbox.launcher(try sandbox.seed("1.0.0")) { $0.userStore = Self.userStore(tables: ["Incident"]) }
        let (database, outcome) = try launcher.launch()
        try database.close()
        #expect(outcome.importedTables == ["Incident": 1000])
        #expect(outcome.missingUserTables.isEmpty)
        #expect(try incidentRows(sandbox).userStore == 1000)
    }

    /// Case 1: a user table `ITEM` beside the seed's `item` would hide the seed's rows: refused.
    @Test func aUserTableNamedAsASeedTableInAnotherCaseIsAClash() throws {
        let sandbox = try LaunchSandbox()
        var migrator = DatabaseMigrator()
        migrator.registerMigration("item") { db in try db.execute(sql: "CREATE TABLE ITEM (id INTEGER PRIMARY KEY, label TEXT)") }
        let launcher = sandbox.launcher(try sandbox.seed("1.0.0")) { $0.userStore = Self.userStore(tables: [], migrator: migrator) }
        #expect {
            _ = try launcher.launch()
        } throws: { error in
            let error = error as? ReseedError
            return error?.code == .userStoreConflict && error?.message.contains("'ITEM'") == true
        }
    }

    /// Case 2: a user store file that already exists, empty (0 bytes or a database with no table),
    /// does not stop the import.
    @Test(arguments: ["zero bytes", "empty database"])
    func anEmptyUserStoreFileDoesNotStopTheImport(_ kind: String) throws {
        let sandbox = try LaunchSandbox()
        try Self.singleFileStore(sandbox, rows: 20000)
        if kind == "zero bytes" {
            #expect(FileManager.default.createFile(atPath: userStoreURL(sandbox).path, contents: Data()))
        } else {
            try DatabaseQueue(path: userStoreURL(sandbox).path).write { try $0.execute(sql: "PRAGMA user_version = 0") }
        }
        let launcher = sandbox.launcher(try sandbox.seed("1.0.0")) { $0.userStore = Self.userStore(tables: ["incident"]) }
        let (database, outcome) = try launcher.launch()
        try database.close()
        #expect(outcome.importedTables == ["incident": 20000])
        #expect(try incidentRows(sandbox).userStore == 20000)
    }

    /// Case 2: a user store that already holds the app's (empty) tables gets the rows, by column name.
    @Test func aMigratedUserStoreGetsTheRowsByColumnName() throws {
        let sandbox = try LaunchSandbox()
        try Self.singleFileStore(sandbox, rows: 300)
        var migrator = DatabaseMigrator()
        migrator.registerMigration("incident") { db in
            try db.execute(sql: "CREATE TABLE incident (note TEXT, id INTEGER PRIMARY KEY, item_id INTEGER, added TEXT DEFAULT 'carried')")
        }
        try migrator.migrate(DatabaseQueue(path: userStoreURL(sandbox).path))
        let launcher = sandbox.launcher(try sandbox.seed("1.0.0")) { $0.userStore = Self.userStore(tables: ["incident"], migrator: migrator) }
        let (database, outcome) = try launcher.launch()
        #expect(outcome.importedTables == ["incident": 300])
        let row = try database.read { try Row.fetchOne($0, sql: "SELECT id, note, added FROM incident WHERE id = 7") }
        #expect(row == ["id": 7, "note": "note 7", "added": "carried"])
        try database.close()
    }

    /// Case 3: the user store turned on before its tables are named: the store file is kept aside
    /// whole, and the outcome names the tables left there.
    @Test func undeclaredUserTablesAreKeptAsideAndNamed() throws {
        let sandbox = try LaunchSandbox()
        try Self.singleFileStore(sandbox, rows: 500)
        let first = sandbox.launcher(try sandbox.seed("1.0.0")) { $0.userStore = Self.userStore(tables: []) }
        let (database, outcome) = try first.launch()
        try database.close()
        #expect(outcome.action == .installed)
        #expect(outcome.strandedTables == ["incident"])
        #expect(outcome.storeKeptAside != nil)
        #expect(try incidentRows(sandbox) == (0, 500))
        // The seed file holds the seed only.
        #expect(try DatabaseQueue(path: sandbox.storeURL.path).read { try $0.tableExists("incident") } == false)
        // A later release naming the table carries it out of the file kept aside (which stays), once.
        let second = sandbox.launcher(try sandbox.seed("1.0.0")) { $0.userStore = Self.userStore(tables: ["Incident"]) }
        let (again, later) = try second.launch()
        try again.close()
        #expect(later.storeKeptAside == nil)
        #expect(later.importedTables == ["Incident": 500])
        #expect(later.strandedTables.isEmpty)
        #expect(try incidentRows(sandbox) == (500, 500))
        let (third, last) = try second.launch()
        try third.close()
        #expect(last.importedTables.isEmpty)
        #expect(try incidentRows(sandbox) == (500, 500))
    }

    /// Case 4: the app's migrations shape the user store first; the rows are carried into the table
    /// they made, so a first migration written as `CREATE TABLE incident` works in the upgrade.
    @Test func aPlainCreateTableMigrationWorksInTheUpgrade() throws {
        let sandbox = try LaunchSandbox()
        try Self.singleFileStore(sandbox, rows: 1000)
        var migrator = DatabaseMigrator()
        migrator.registerMigration("0001_incident") { db in
            try db.execute(sql: "CREATE TABLE incident (id INTEGER PRIMARY KEY, item_id INTEGER, note TEXT)")
        }
        let launcher = sandbox.launcher(try sandbox.seed("1.0.0")) { $0.userStore = Self.userStore(tables: ["incident"], migrator: migrator) }
        for launch in 1...2 {
            let (database, outcome) = try launcher.launch()
            #expect(try database.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM incident") } == 1000)
            if launch == 1 {
                #expect(outcome.importedTables == ["incident": 1000])
                #expect(outcome.appliedMigrations == ["0001_incident"])
            }
            try database.close()
        }
    }

    /// Case 5: a user store named like Reseed's own files would be removed as a leftover: refused.
    @Test(arguments: [".items.sqlite.reseed-tmp-0123456789abcdef", ".items.sqlite.reseed-download-00", "items.sqlite.invalid-x", ".items.sqlite.reseed-lock"])
    func aUserStoreNamedLikeReseedsOwnFilesIsRefused(_ name: String) throws {
        let sandbox = try LaunchSandbox()
        let launcher = sandbox.launcher(try sandbox.seed("1.0.0")) { $0.userStore = Launcher.UserStore(name: name) }
        #expect {
            _ = try launcher.launch()
        } throws: { error in
            let error = error as? ReseedError
            return error?.code == .invalidArgument && error?.message.contains("Reseed's own") == true
        }
        #expect(!FileManager.default.fileExists(atPath: sandbox.storeURL.path))
    }

    /// Case 6: a user store whose schema is damaged fails naming the user store, and keeps no seed aside.
    @Test func aDamagedUserStoreFailsNamingItAndKeepsNothing() throws {
        let sandbox = try LaunchSandbox()
        var migrator = DatabaseMigrator()
        migrator.registerMigration("incident") { db in try db.execute(sql: "CREATE TABLE incident (id INTEGER PRIMARY KEY, note TEXT)") }
        let launcher = sandbox.launcher(try sandbox.seed("1.0.0")) { $0.userStore = Self.userStore(tables: [], migrator: migrator) }
        try launcher.launch().database.close()
        // Out of WAL, so that page 1 is read from the file.
        let queue = try DatabaseQueue(path: userStoreURL(sandbox).path)
        try queue.writeWithoutTransaction { try $0.execute(sql: "PRAGMA journal_mode = DELETE") }
        try queue.close()
        // The schema page (page 1, past the 100-byte header) overwritten.
        let handle = try FileHandle(forUpdating: userStoreURL(sandbox))
        try handle.seek(toOffset: 100)
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 3000))
        try handle.close()
        let before = try sandbox.files()
        for _ in 1...3 {
            #expect {
                _ = try launcher.launch()
            } throws: { error in
                let error = error as? ReseedError
                return error?.path == userStoreURL(sandbox).path && error?.description.contains(".recover") == true
            }
        }
        #expect(try sandbox.files() == before)
    }
}

/// Issue 32, case 11: first launches with a user store at once, in threads of one process (each its
/// own pool, as two processes have): the app's migrations run once, under the user store's lock.
@Suite(.timeLimit(.minutes(10)))
struct UserStoreFirstLaunchRaceTests {
    @Test func twoFirstLaunchesAtOnceBothOpen() async throws {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("0001_incident") { db in
            try db.execute(sql: "CREATE TABLE incident (id INTEGER PRIMARY KEY, note TEXT)")
        }
        migrator.registerMigration("0002_tag") { db in try db.execute(sql: "CREATE TABLE tag (id INTEGER PRIMARY KEY)") }
        let userStore = Launcher.UserStore(name: "items-user", migrator: migrator, userTables: ["incident"])
        var failures: [String] = []
        for _ in 0..<150 {
            let sandbox = try LaunchSandbox()
            let launcher = sandbox.launcher(try sandbox.seed("1.0.0")) { $0.userStore = userStore }
            let results = await withTaskGroup(of: String?.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        await offload("reseed-test") {
                            do {
                                let (database, _) = try launcher.launch()
                                let tables = try database.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM main.sqlite_master WHERE name IN ('incident', 'tag')") }
                                try database.close()
                                return tables == 2 ? nil : "tables: \(tables ?? -1)"
                            } catch {
                                return "\(error)"
                            }
                        }
                    }
                }
                return await group.reduce(into: [String]()) { if let failure = $1 { $0.append(failure) } }
            }
            failures += results
        }
        #expect(failures.isEmpty, "\(failures.count) launches failed: \(failures.prefix(3))")
    }
}

/// The import's edges: collations, rows the app's migrations put in, the app's triggers, rowids,
/// GRDB's own table, required columns, names that one filesystem folds together, a restored store.
@Suite(.timeLimit(.minutes(10)))
struct UserTableCarryTests {
    /// An earlier release's single-file store at 1.0.0 with the app's tables written by `sql`.
    static func singleFileStore(_ sandbox: LaunchSandbox, _ sql: String) throws {
        let (single, _) = try sandbox.launcher(try sandbox.seed("1.0.0")).launch()
        try single.write { try $0.execute(sql: sql) }
        try single.close()
    }

    static func launch(_ sandbox: LaunchSandbox, tables: [String], _ migrate: (@Sendable (Database) throws -> Void)? = nil) throws -> LaunchOutcome {
        var migrator = DatabaseMigrator()
        if let migrate { migrator.registerMigration("app") { try migrate($0) } }
        let userStore = Launcher.UserStore(name: UserRowsKeptTests.userName, migrator: migrator, userTables: tables)
        let (database, outcome) = try sandbox.launcher(try sandbox.seed("1.0.0")) { $0.userStore = userStore }.launch()
        try database.close()
        return outcome
    }

    func rows(_ sandbox: LaunchSandbox, _ sql: String, at file: String = UserRowsKeptTests.userName + ".sqlite") throws -> [String] {
        let queue = try DatabaseQueue(path: sandbox.dataDirectory.appendingPathComponent(file).path)
        defer { try? queue.close() }
        return try queue.read { try String.fetchAll($0, sql: sql) }
    }

    /// A user store row equal to an old row only under a NOCASE collation is another row: the table is
    /// stranded (kept aside), never counted as carried.
    @Test func aRowEqualOnlyUnderACollationIsNotCountedAsCarried() throws {
        let sandbox = try LaunchSandbox()
        try Self.singleFileStore(sandbox, "CREATE TABLE folder (id INTEGER PRIMARY KEY, name TEXT COLLATE NOCASE); INSERT INTO folder VALUES (1, 'inbox')")
        let userStore = sandbox.dataDirectory.appendingPathComponent(UserRowsKeptTests.userName + ".sqlite")
        try DatabaseQueue(path: userStore.path).write { try $0.execute(sql: "CREATE TABLE folder (id INTEGER PRIMARY KEY, name TEXT COLLATE NOCASE); INSERT INTO folder VALUES (1, 'INBOX')") }
        let outcome = try Self.launch(sandbox, tables: ["folder"])
        #expect(outcome.strandedTables == ["folder"])
        let aside = try #require(outcome.storeKeptAside)
        #expect(try rows(sandbox, "SELECT name FROM folder", at: aside.lastPathComponent) == ["inbox"])
    }

    /// Rows the app's migrations put in a new user store (a default folder) give way to the user's own.
    @Test func theUsersRowsReplaceRowsTheMigrationsPutInANewUserStore() throws {
        let sandbox = try LaunchSandbox()
        try Self.singleFileStore(sandbox, "CREATE TABLE folder (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO folder VALUES (1, 'Work'), (2, 'Family')")
        let outcome = try Self.launch(sandbox, tables: ["folder"]) { db in
            try db.execute(sql: "CREATE TABLE folder (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO folder (name) VALUES ('Inbox')")
        }
        #expect(outcome.importedTables == ["folder": 2])
        #expect(outcome.strandedTables.isEmpty)
        #expect(try rows(sandbox, "SELECT name FROM folder ORDER BY id") == ["Work", "Family"])
    }

    /// The app's triggers do not fire on carried rows: an insert trigger that logs would duplicate the log.
    @Test func theAppsTriggersDoNotFireOnCarriedRows() throws {
        let sandbox = try LaunchSandbox()
        try Self.singleFileStore(sandbox, """
            CREATE TABLE incident (id INTEGER PRIMARY KEY, note TEXT); CREATE TABLE event (id INTEGER PRIMARY KEY, what TEXT);
            INSERT INTO incident VALUES (1, 'a'), (2, 'b'); INSERT INTO event VALUES (1, 'added 1'), (2, 'added 2'), (3, 'edited 1')
            """)
        let outcome = try Self.launch(sandbox, tables: ["event", "incident"]) { db in
            try db.execute(sql: """
                CREATE TABLE incident (id INTEGER PRIMARY KEY, note TEXT); CREATE TABLE event (id INTEGER PRIMARY KEY, what TEXT);
                CREATE TRIGGER logged AFTER INSERT ON incident BEGIN INSERT INTO event (what) VALUES ('added ' || new.id); END
                """)
        }
        #expect(outcome.importedTables == ["event": 3, "incident": 2])
        #expect(try rows(sandbox, "SELECT what FROM event ORDER BY id") == ["added 1", "added 2", "edited 1"])
    }

    /// A table no migration makes keeps its rowids (not an alias here) and a trigger written on its name in another case.
    @Test func aTableMadeFromTheOldDDLKeepsItsRowidsAndItsTriggers() throws {
        let sandbox = try LaunchSandbox()
        try Self.singleFileStore(sandbox, """
            CREATE TABLE plain (a TEXT); INSERT INTO plain (rowid, a) VALUES (5, 'x'), (9, 'y');
            CREATE TABLE log (a TEXT); CREATE TRIGGER trg AFTER INSERT ON PLAIN BEGIN INSERT INTO log VALUES (new.a); END
            """)
        let outcome = try Self.launch(sandbox, tables: ["plain", "log"])
        #expect(outcome.importedTables == ["plain": 2, "log": 0])
        #expect(try rows(sandbox, "SELECT rowid || a FROM plain ORDER BY rowid") == ["5x", "9y"])
        #expect(try rows(sandbox, "SELECT name FROM sqlite_master WHERE type = 'trigger'") == ["trg"])
    }

    /// GRDB's record of the single file's migrations is not a table of the user's.
    @Test func grdbsMigrationsTableIsNotStranded() throws {
        let sandbox = try LaunchSandbox()
        try Self.singleFileStore(sandbox, "CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY); INSERT INTO grdb_migrations VALUES ('v1')")
        let outcome = try Self.launch(sandbox, tables: [])
        #expect(outcome.strandedTables.isEmpty)
        #expect(outcome.storeKeptAside == nil)
    }

    /// A NOT NULL column without a default that the old table lacks: one sentence, nothing changed.
    @Test func aRequiredColumnTheOldTableLacksIsASentence() throws {
        let sandbox = try LaunchSandbox()
        try Self.singleFileStore(sandbox, "CREATE TABLE incident (id INTEGER PRIMARY KEY, note TEXT); INSERT INTO incident VALUES (1, 'a')")
        #expect {
            _ = try Self.launch(sandbox, tables: ["incident"]) { db in
                try db.execute(sql: "CREATE TABLE incident (id INTEGER PRIMARY KEY, note TEXT, reported_at TEXT NOT NULL)")
            }
        } throws: { error in
            let error = error as? ReseedError
            return error?.code == .userStoreConflict && error?.message.contains("'reported_at'") == true
                && error?.path == sandbox.dataDirectory.appendingPathComponent(UserRowsKeptTests.userName + ".sqlite").path
        }
        #expect(try rows(sandbox, "SELECT note FROM incident", at: "items.sqlite") == ["a"])
    }

    /// With the app's foreign keys on, carried rows must find their parents among the user's tables:
    /// a parent table left undeclared is refused with a sentence, and nothing changes; declared, it carries.
    @Test func aCarriedRowWithoutItsParentIsASentence() throws {
        let sandbox = try LaunchSandbox()
        try Self.singleFileStore(sandbox, """
            CREATE TABLE incident (id INTEGER PRIMARY KEY); CREATE TABLE note (id INTEGER PRIMARY KEY, incident_id INTEGER REFERENCES incident(id));
            INSERT INTO incident VALUES (1); INSERT INTO note VALUES (1, 1)
            """)
        #expect {
            _ = try Self.launch(sandbox, tables: ["note"])
        } throws: { error in
            let error = error as? ReseedError
            return error?.code == .userStoreConflict && error?.message.contains("declare 'incident' too") == true
        }
        #expect(try rows(sandbox, "SELECT count(*) FROM note", at: "items.sqlite") == ["1"])
        let outcome = try Self.launch(sandbox, tables: ["note", "incident"])
        #expect(outcome.importedTables == ["note": 1, "incident": 1])
    }

    /// `Items` is the seed's own file on a case-insensitive filesystem: refused.
    @Test func aUserStoreNamedAsTheSeedInAnotherCaseIsRefused() throws {
        let sandbox = try LaunchSandbox()
        let launcher = sandbox.launcher(try sandbox.seed("1.0.0")) { $0.userStore = Launcher.UserStore(name: "Items") }
        #expect(throws: ReseedError.self) { _ = try launcher.launch() }
    }

    /// A data directory copied (or restored from a backup) holds the recorded version in another file: the
    /// first launch records that file's fingerprint, so later ones read no database page.
    @Test func aRestoredStoreIsRecordedOnceByItsFingerprint() throws {
        let sandbox = try LaunchSandbox()
        try sandbox.install(try sandbox.seed("1.0.0"))
        let before = try #require(try PreferencesFile(url: sandbox.preferencesURL).readEntries().entries["items"]?.storeFingerprint)
        let copy = sandbox.directory.appending("copy")
        try FileManager.default.copyItem(at: sandbox.dataDirectory, to: copy)
        try FileManager.default.removeItem(at: sandbox.dataDirectory)
        try FileManager.default.moveItem(at: copy, to: sandbox.dataDirectory)
        #expect(try sandbox.install(try sandbox.seed("1.0.0")).action == .upToDate)
        let after = try #require(try PreferencesFile(url: sandbox.preferencesURL).readEntries().entries["items"]?.storeFingerprint)
        #expect(after != before)
        #expect(try sandbox.recordedVersion() == "1.0.0")
    }
}
