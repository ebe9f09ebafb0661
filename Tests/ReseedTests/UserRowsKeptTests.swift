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
