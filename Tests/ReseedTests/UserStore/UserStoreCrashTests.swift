import Foundation
import GRDB
@testable import Reseed
import ReseedSystem
import ReseedTesting
import ReseedTestSupport
import Testing

/// The crash-every-step seam over a user store: the import out of a single-file store, the app's
/// migrator, the seed install, and `LiveStore.replace`; crashed after (and failed at) every file action.
///
/// After each: the old single-file store still has every user row, or the user store has every
/// one (never a user store with fewer); the relaunch ends with every row in the user store, the
/// seed in the store file (without the user's tables), the migrations applied, no temporary file.
@Suite(.serialized, .timeLimit(.minutes(20)))
struct UserStoreCrashTests {
    static let userTables = ["note", "bookmark", "absent"]

    /// The app's schema in this release: the notes as earlier releases made them, then a column and a table.
    static func migrator() -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("notes") { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS note (id INTEGER PRIMARY KEY AUTOINCREMENT, item_id INTEGER, text TEXT NOT NULL)")
        }
        migrator.registerMigration("starred") { db in
            try db.execute(sql: "ALTER TABLE note ADD COLUMN starred INTEGER NOT NULL DEFAULT 0")
            try db.execute(sql: "CREATE TABLE tag (id INTEGER PRIMARY KEY, note_id INTEGER NOT NULL, name TEXT NOT NULL)")
        }
        return migrator
    }

    static var userStore: Launcher.UserStore {
        Launcher.UserStore(name: "items-user", migrator: migrator(), userTables: userTables)
    }

    /// A device where an earlier release (no user store) installed 1.0.0 and wrote the user's notes
    /// and bookmarks into the store, the last of them only in its WAL; seeds 1.0.0 and 2.0.0.
    struct Device {
        let sandbox: LaunchSandbox
        let old: Seed
        let new: Seed
        let template: URL
        /// Every user row, as `table|id|…`, read from the template.
        let userRows: [String]
        /// How many of them are only in the template's WAL.
        let rowsOnlyInWAL: Int

        var userStoreURL: URL { sandbox.dataDirectory.appendingPathComponent("items-user.sqlite") }

        init() throws {
            sandbox = try LaunchSandbox()
            old = try sandbox.seed("1.0.0", rows: 3)
            new = try sandbox.seed("2.0.0", rows: 5, paddingBytes: 1 << 20)
            template = sandbox.directory.appending("template")
            let building = sandbox.directory.appending("building")
            let (pool, _) = try Launcher(seed: old.manifestURL, dataDirectory: building).launch()
            try pool.write { db in
                try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
                try db.execute(sql: "CREATE TABLE note (id INTEGER PRIMARY KEY AUTOINCREMENT, item_id INTEGER, text TEXT NOT NULL)")
                try db.execute(sql: "CREATE INDEX note_item ON note(item_id)")
                try db.execute(sql: "CREATE TABLE bookmark (item_id INTEGER PRIMARY KEY, added TEXT)")
                try db.execute(sql: "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 250) INSERT INTO note (item_id, text) SELECT i % 4, 'note ' || i FROM n")
                try db.execute(sql: "INSERT INTO bookmark VALUES (1, 'monday'), (2, NULL)")
            }
            try pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
            // Written and not checkpointed: in the WAL only.
            try pool.write { db in
                try db.execute(sql: "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50) INSERT INTO note (item_id, text) SELECT i % 4, 'late ' || i FROM n")
                try db.execute(sql: "DELETE FROM note WHERE id = 7")
                try db.execute(sql: "INSERT INTO bookmark VALUES (3, 'late')")
            }
            // The app is killed here: copy the files as they are (the -shm is rebuilt from the WAL).
            try FileManager.default.createDirectory(at: template, withIntermediateDirectories: true)
            for name in ["items.sqlite", "items.sqlite-wal", "preferences.json"] {
                try FileManager.default.copyItem(at: building.appendingPathComponent(name), to: template.appendingPathComponent(name))
            }
            try pool.close()
            userRows = try Self.rows(in: template.appendingPathComponent("items.sqlite"), copying: true)
            let mainFileOnly = sandbox.directory.appending("main-file-only")
            try FileManager.default.createDirectory(at: mainFileOnly, withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: template.appendingPathComponent("items.sqlite"), to: mainFileOnly.appendingPathComponent("items.sqlite"))
            rowsOnlyInWAL = userRows.count - (try Self.rows(in: mainFileOnly.appendingPathComponent("items.sqlite"))).count
        }

        func reset() throws {
            if FileManager.default.fileExists(atPath: sandbox.dataDirectory.path) {
                try FileManager.default.removeItem(at: sandbox.dataDirectory)
            }
            try FileManager.default.copyItem(at: template, to: sandbox.dataDirectory)
        }

        func launcher(_ seed: Seed, _ plan: FaultPlan?) -> Launcher {
            var launcher = sandbox.launcher(seed) { $0.userStore = UserStoreCrashTests.userStore }
            launcher.fileSystem = FileSystem(observer: plan)
            return launcher
        }

        /// The user rows of the database at `url` (`note` and `bookmark`), read from a copy when
        /// `copying` (the template stays as it is), or nil when it has neither table.
        static func rows(in url: URL, copying: Bool = false) throws -> [String] {
            var path = url.path
            var scratch: TemporaryDirectory?
            if copying {
                let directory = try TemporaryDirectory(prefix: "reseed-rows")
                for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: url.path + suffix) {
                    try FileManager.default.copyItem(atPath: url.path + suffix, toPath: directory.appending("copy.sqlite").path + suffix)
                }
                path = directory.appending("copy.sqlite").path
                scratch = directory
            }
            defer { _ = scratch }
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            defer { try? queue.close() }
            return try queue.read { db in
                #expect(try String.fetchOne(db, sql: "PRAGMA quick_check") == "ok", "\(url.lastPathComponent)")
                let tables = Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'"))
                var rows: [String] = []
                if tables.contains("note") {
                    rows += try String.fetchAll(db, sql: "SELECT 'note|' || id || '|' || ifnull(item_id, '') || '|' || text FROM note ORDER BY id")
                }
                if tables.contains("bookmark") {
                    rows += try String.fetchAll(db, sql: "SELECT 'bookmark|' || item_id || '|' || ifnull(added, 'null') FROM bookmark ORDER BY item_id")
                }
                return rows
            }
        }

        /// The invariant, read straight from the files after a crash: every user row is in the old
        /// store (and no user store exists) or in the user store. Returns the state.
        func invariant(_ label: String) throws -> String {
            let names = try sandbox.files()
            let temporary = names.filter { $0.contains(".reseed-tmp-") }
            let embedded = try sandbox.embeddedVersion()
            // Read from copies: the next launch must find the files as the crash left them.
            let inStore = try Self.rows(in: sandbox.storeURL, copying: true)
            let storeState = embedded == "1.0.0" ? "old store" : embedded == "2.0.0" ? "new seed" : "store \(String(describing: embedded))"
            #expect(embedded == "1.0.0" || inStore.isEmpty, "\(label): the new seed holds user rows")
            let userState: String
            var userComplete = false
            if FileManager.default.fileExists(atPath: userStoreURL.path) {
                let inUserStore = try Self.rows(in: userStoreURL, copying: true)
                userComplete = inUserStore == userRows
                #expect(userComplete, "\(label): the user store has \(inUserStore.count) of \(userRows.count) user rows; files \(names)")
                userState = userComplete ? "complete user store" : "INCOMPLETE user store"
            } else {
                #expect(inStore.count == userRows.count && inStore == userRows, "\(label): no user store, and the store has \(inStore.count) of \(userRows.count) user rows; files \(names)")
                userState = "no user store"
            }
            let lost = inStore != userRows && !userComplete
            return "\(storeState) + \(userState)\(temporary.isEmpty ? "" : " + temp")\(lost ? " LOST" : "")"
        }

        /// A clean launch of `seed` with the user store: every row in the user store, migrated; the
        /// store file is the seed without user tables; no temporary file.
        func relaunch(_ seed: Seed, _ label: String) throws {
            let (pool, outcome) = try launcher(seed, nil).launch()
            defer { try? pool.close() }
            #expect(outcome.version == seed.manifest.version, "\(label)")
            let (migrations, columns, hasTag) = try pool.read { db in
                (try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier"),
                 try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info('note', 'main')"),
                 try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM main.sqlite_master WHERE name = 'tag'"))
            }
            #expect(migrations == ["notes", "starred"], "\(label)")
            #expect(columns.contains("starred"), "\(label)")
            #expect(hasTag == true, "\(label)")
            try pool.close()
            let final = try Self.rows(in: userStoreURL)
            #expect(final.count == userRows.count && final == userRows, "\(label): \(final.count) rows, \(final.first ?? "-"): the relaunch does not end with every user row in the user store")
            #expect(try Self.rows(in: sandbox.storeURL).isEmpty, "\(label): the store file still holds user tables")
            #expect(try sandbox.embeddedVersion() == seed.manifest.version, "\(label)")
            #expect(try sandbox.temporaryFiles().isEmpty, "\(label): \((try? sandbox.temporaryFiles()) ?? [])")
            #expect(try sandbox.files().allSatisfy { !$0.contains(".invalid-") }, "\(label): a usable file was kept aside")
        }
    }

    @Test func theTemplateHasRowsOnlyInItsWAL() throws {
        let device = try Device()
        #expect(device.userRows.count == 250 + 50 - 1 + 3)
        #expect(device.rowsOnlyInWAL > 0)
    }

    /// Import + migrate + install of 2.0.0 over a single-file 1.0.0, crashed after each action, then failed at each.
    @Test func importAndInstallCrashedOrFailedAtEveryActionLoseNoUserRow() throws {
        let device = try Device()
        try device.reset()
        let recording = FaultPlan(.record)
        let (pool, outcome) = try device.launcher(device.new, recording).launch()
        try pool.close()
        #expect(outcome.importedTables == ["note": 299, "bookmark": 3])
        #expect(outcome.missingUserTables == ["absent"])
        #expect(outcome.appliedMigrations == ["notes", "starred"])
        let actions = recording.actions, attempts = recording.attempts
        #expect(actions.contains { $0.path.hasSuffix("items-user.sqlite") }, "the import renames the user store into place: \(actions)")

        var states: [String: Int] = [:]
        var unsound = 0
        for k in 1...actions.count {
            try device.reset()
            let plan = FaultPlan(.crashAfter(k))
            let label = "crash after \(k) \(actions[k - 1].kind.rawValue) \(URL(fileURLWithPath: actions[k - 1].path).lastPathComponent)"
            do {
                let (pool, _) = try device.launcher(device.new, plan).launch()
                try pool.close()
                // The launch's last write of the preferences only remembers that the user store's checks
                // passed (a fingerprint, to skip them next time): it is best effort, so a crash there goes unnoticed.
                let remembering = actions[(k - 1)...].allSatisfy { action in
                    let name = URL(fileURLWithPath: action.path).lastPathComponent
                    return name.contains("preferences.json") || URL(fileURLWithPath: action.path).standardizedFileURL == device.sandbox.dataDirectory.standardizedFileURL
                }
                #expect(k == actions.count || remembering, "\(label) went unnoticed")
            } catch {}
            let state = try device.invariant(label)
            if state.contains("LOST") || state.contains("INCOMPLETE") { unsound += 1 }
            states[state, default: 0] += 1
            try device.relaunch(device.new, label)
        }
        var failures: [String: Int] = [:]
        for k in 1...attempts.count {
            try device.reset()
            let label = "failure of \(k) \(attempts[k - 1].kind.rawValue) \(URL(fileURLWithPath: attempts[k - 1].path).lastPathComponent)"
            var result = "launched"
            do {
                let (pool, _) = try device.launcher(device.new, FaultPlan(.fail(k))).launch()
                try pool.close()
            } catch let error as ReseedError {
                result = "failed at \(error.step)"
            } catch {
                Issue.record("\(label): an untyped error \(error)")
            }
            let state = try device.invariant(label)
            if state.contains("LOST") || state.contains("INCOMPLETE") { unsound += 1 }
            failures["\(result) → \(state)", default: 0] += 1
            try device.relaunch(device.new, label)
        }
        #expect(unsound == 0)
        print("""
            user store import+install: \(device.userRows.count) user rows (\(device.rowsOnlyInWAL) only in the WAL); \
            \(actions.count) crash points, \(attempts.count) failure points: \(unsound) user rows lost / unsound states
            crash states: \(states.sorted { $0.key < $1.key })
            failure outcomes: \(failures.sorted { $0.key < $1.key })
            actions: \(actions.map { "\($0.kind.rawValue) \(URL(fileURLWithPath: $0.path).lastPathComponent)" })
            """)
    }

    /// `LiveStore.replace` of the seed under a user store, crashed after or failed at each action:
    /// the user rows (imported ones and ones the app wrote while live, in the user store's WAL) are untouched.
    @Test func liveReplaceCrashedOrFailedAtEveryActionLeavesTheUserStoreUntouched() async throws {
        let device = try Device()
        // The device after this release's first launch: the rows imported, the seed 1.0.0 installed alone.
        try device.reset()
        let (pool, _) = try device.launcher(device.old, nil).launch()
        try pool.close()
        let imported = device.sandbox.directory.appending("imported")
        try FileManager.default.copyItem(at: device.sandbox.dataDirectory, to: imported)
        func resetImported() throws {
            try FileManager.default.removeItem(at: device.sandbox.dataDirectory)
            try FileManager.default.copyItem(at: imported, to: device.sandbox.dataDirectory)
        }

        try resetImported()
        let recording = FaultPlan(.record, armed: false)
        do {
            let store = try await LiveStore(launcher: device.launcher(device.old, recording))
            recording.arm()
            try await store.replace(with: device.new)
        }
        let crashPoints = recording.actions.count, failPoints = recording.attempts.count
        #expect(!recording.attempts.contains { $0.path.contains("items-user") }, "a replace acts on the user store: \(recording.attempts)")

        var states: [String: Int] = [:]
        var unsound = 0
        for (crash, points) in [(true, crashPoints), (false, failPoints)] {
            for k in 1...points {
                try resetImported()
                let action = crash ? recording.actions[k - 1] : recording.attempts[k - 1]
                let label = "\(crash ? "crash after" : "failure of") \(k) \(action.kind.rawValue) \(URL(fileURLWithPath: action.path).lastPathComponent)"
                let plan = FaultPlan(crash ? .crashAfter(k) : .fail(k), armed: false)
                var written: [String] = []
                do {
                    let live = try await LiveStore(launcher: device.launcher(device.old, plan))
                    // Rows the app writes while live: in the user store's WAL.
                    try await live.write { db in
                        try db.execute(sql: "INSERT INTO note (item_id, text) VALUES (2, 'live')")
                        try db.execute(sql: "INSERT INTO tag (note_id, name) VALUES (1, 'x')")
                    }
                    written = try await live.read { try String.fetchAll($0, sql: "SELECT 'note|' || id || '|2|live' FROM note WHERE text = 'live'") }
                    plan.arm()
                    let replaced = (try? await live.replace(with: device.new)) != nil
                    if !crash {
                        let count = try await live.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM note") }
                        #expect(count == device.userRows.count - 3 + 1, "\(label): the live store stays usable (replaced: \(replaced))")
                    }
                }
                let expected = (device.userRows + written).sorted()
                let inUserStore = try Device.rows(in: device.userStoreURL, copying: true).sorted()
                let embedded = try device.sandbox.embeddedVersion()
                let inStore = try Device.rows(in: device.sandbox.storeURL, copying: true)
                #expect(inUserStore == expected, "\(label): the user store has \(inUserStore.count) of \(expected.count) rows")
                #expect(inStore.isEmpty, "\(label): the seed file holds user rows")
                #expect(["1.0.0", "2.0.0"].contains(embedded), "\(label): the store holds \(String(describing: embedded))")
                if inUserStore != expected || !inStore.isEmpty { unsound += 1 }
                states["seed \(embedded ?? "?")\(try device.sandbox.temporaryFiles().isEmpty ? "" : " + temp")", default: 0] += 1

                let relaunched = try await LiveStore(launcher: device.launcher(device.new, nil))
                #expect(relaunched.version == "2.0.0", "\(label)")
                let after = try await relaunched.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM note JOIN item ON item.id = note.item_id") }
                #expect(after ?? 0 > 0, "\(label): the join of user and seed rows reads nothing")
                #expect(try device.sandbox.temporaryFiles().isEmpty, "\(label): a relaunch removes what the interrupted replace left")
                #expect((try Device.rows(in: device.userStoreURL)).sorted() == expected, "\(label): after the relaunch")
            }
        }
        #expect(unsound == 0)
        print("user store live replace: crashed after each of \(crashPoints) actions, failed each of \(failPoints): \(unsound) user rows lost / unsound states; states: \(states.sorted { $0.key < $1.key })")
    }
}
