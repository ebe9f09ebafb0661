import Foundation
import GRDB
@testable import Reseed
import ReseedTestSupport
import Testing

/// Issue 32: random user-store flows. An old single-file store holds user tables (names in mixed
/// case, some empty), the user store file is absent, 0 bytes, an empty database, already migrated
/// or holding rows of its own; the app declares some of the tables in another case and order, its
/// migrations make some of them, and the release adds or removes a seed table. After the first launch
/// and each later one, every user row is in the user store or in a file kept aside, and the
/// outcome's counts say where; a later release that declares the tables left undeclared carries them
/// out of the file kept aside.
@Suite(.timeLimit(.minutes(10)))
struct UserStoreFlowFuzzTests {
    static let cases = 60
    static let pool = ["incident", "note", "tag", "bookmark", "visit"]

    enum UserFile: CaseIterable { case absent, zeroBytes, emptyDatabase, migrated, ownRows }

    /// `name` with each ASCII letter's case drawn at random.
    static func recased(_ name: String, _ random: inout SplitMix64) -> String {
        String(name.map { random.int(0..<2) == 0 ? Character($0.uppercased()) : $0 })
    }

    @Test func everyUserRowEndsInTheUserStoreOrAFileKeptAside() throws {
        var random = SplitMix64(seed: 0x5EED_0032)
        var failures = FuzzFailures()
        for index in 0..<Self.cases {
            let sandbox = try LaunchSandbox()
            // The old release: the seed's `item`, maybe a seed table `legacy` the new release drops.
            let oldHasLegacy = random.int(0..<3) == 0
            let (single, _) = try sandbox.launcher(try sandbox.seed("1.0.0", sql: oldHasLegacy ? ["CREATE TABLE legacy (id INTEGER PRIMARY KEY)"] : [])).launch()
            // The old store's user tables (their names there) and rows, in order: a seeded case is the same case on every run.
            var rows: [(table: String, count: Int)] = []
            for name in Self.pool where random.int(0..<2) == 0 {
                let table = Self.recased(name, &random)
                let count = random.int(0..<40)
                rows.append((table, count))
                try single.write { db in
                    try db.execute(sql: "CREATE TABLE \(table.quotedIdentifier) (id INTEGER PRIMARY KEY, v TEXT)")
                    for i in 0..<count { try db.execute(sql: "INSERT INTO \(table.quotedIdentifier) (v) VALUES (?)", arguments: ["\(table)-\(i)"]) }
                }
            }
            try single.close()

            // The app: declared tables (some of the store's, in another case; maybe one it lacks), migrations for some.
            var declared = rows.filter { _ in random.int(0..<3) > 0 }.map { Self.recased($0.table, &random) }
            if random.int(0..<4) == 0 { declared.append(Self.recased("absent", &random)) }
            declared.shuffle(using: &random)
            var migrator = DatabaseMigrator()
            let migrated = declared.filter { _ in random.int(0..<2) == 0 }
            for table in migrated {
                let created = Self.recased(table, &random).quotedIdentifier
                migrator.registerMigration("create \(table)") { db in
                    try db.execute(sql: "CREATE TABLE \(created) (id INTEGER PRIMARY KEY, v TEXT, extra INTEGER DEFAULT 7)")
                }
            }
            let userStore = Launcher.UserStore(name: "items-user", migrator: migrator, userTables: declared)
            let userURL = sandbox.dataDirectory.appendingPathComponent("items-user.sqlite")
            let userFile = UserFile.allCases[random.int(0..<UserFile.allCases.count)]
            var ownRows: String?
            switch userFile {
            case .absent: break
            case .zeroBytes: _ = FileManager.default.createFile(atPath: userURL.path, contents: Data())
            case .emptyDatabase: try DatabaseQueue(path: userURL.path).write { try $0.execute(sql: "PRAGMA user_version = 3") }
            case .migrated: try migrator.migrate(DatabaseQueue(path: userURL.path))
            case .ownRows:
                try migrator.migrate(DatabaseQueue(path: userURL.path))
                if let table = migrated.first {
                    try DatabaseQueue(path: userURL.path).write { try $0.execute(sql: "INSERT INTO \(table.quotedIdentifier) (v) VALUES ('own')") }
                    ownRows = table
                }
            }

            // The new release: maybe a seed table `added`.
            let seed = try sandbox.seed("2.0.0", sql: random.int(0..<2) == 0 ? ["CREATE TABLE added (id INTEGER PRIMARY KEY)"] : [])
            let label = "case \(index): old \(rows), declared \(declared), migrated \(migrated), user file \(userFile)"
            let launcher = sandbox.launcher(seed) { $0.userStore = userStore }
            let outcome: LaunchOutcome
            do {
                let (database, launched) = try launcher.launch()
                try database.close()
                outcome = launched
            } catch {
                failures.check(false, "\(label): the launch failed: \(error)")
                continue
            }

            // Where each old table's rows are now.
            func rowsIn(_ table: String, at url: URL) throws -> Int? {
                let queue = try DatabaseQueue(path: url.path)
                defer { try? queue.close() }
                return try queue.read { db in
                    guard let name = try String.fetchOne(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE",
                                                         arguments: [table]) else { return nil }
                    return try Int.fetchOne(db, sql: "SELECT count(*) FROM \(name.quotedIdentifier) WHERE v IS NOT 'own'")
                }
            }
            // Stranded: not declared, or declared with rows while the user store's table holds rows of its own.
            let expectedStranded = rows.filter { table, count in
                !declared.contains { $0.isSameSQLName(as: table) } || (count > 0 && ownRows.map { $0.isSameSQLName(as: table) } == true)
            }.map(\.table)
            let strandedExpected = Set(expectedStranded.map(\.sqlFolded))
            let strandedReported = Set(outcome.strandedTables.map(\.sqlFolded))
            let legacyStranded = oldHasLegacy ? Set(["legacy"]) : []
            failures.check(strandedReported == strandedExpected.union(legacyStranded), "\(label): stranded \(outcome.strandedTables), expected \(expectedStranded)")
            let aside = outcome.storeKeptAside
            failures.check((aside != nil) == !strandedReported.isEmpty, "\(label): kept aside \(aside?.lastPathComponent ?? "nil")")
            for (table, count) in rows {
                let inUserStore = try rowsIn(table, at: userURL) ?? 0
                let inAside = try aside.flatMap { try rowsIn(table, at: $0) } ?? 0
                if strandedExpected.contains(table.sqlFolded) {
                    failures.check(inAside == count, "\(label): \(table) has \(inAside) of \(count) rows in the file kept aside")
                } else {
                    failures.check(inUserStore == count, "\(label): \(table) has \(inUserStore) of \(count) rows in the user store")
                    let reported = outcome.importedTables.first { $0.key.isSameSQLName(as: table) }?.value
                    failures.check(reported == count, "\(label): importedTables \(outcome.importedTables) for \(table) (\(count))")
                }
            }
            // The store file is the seed alone.
            let seedTables = try DatabaseQueue(path: sandbox.storeURL.path).read {
                try String.fetchAll($0, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'reseed_%' ORDER BY name")
            }
            failures.check(seedTables.allSatisfy { ["item", "added"].contains($0) }, "\(label): the store file holds \(seedTables)")

            // The next launch looks no more and loses nothing.
            let before = try sandbox.files()
            let (again, next) = try launcher.launch()
            try again.close()
            failures.check(next.action == .upToDate && next.importedTables.isEmpty && next.strandedTables.isEmpty, "\(label): next launch \(next)")
            failures.check(try sandbox.files().filter { !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }
                            == before.filter { !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }, "\(label): the next launch changed the files")
            for (table, count) in rows where !strandedExpected.contains(table.sqlFolded) {
                failures.check(try rowsIn(table, at: userURL) == count, "\(label): \(table) lost rows at the next launch")
            }

            // A later release declares every table of the old store, in yet another case: those left
            // undeclared are carried out of the file kept aside, once; nothing else moves.
            let everything = Launcher.UserStore(name: "items-user", migrator: migrator,
                                                userTables: declared + rows.map { Self.recased($0.table, &random) })
            let (later, carried) = try sandbox.launcher(seed) { $0.userStore = everything }.launch()
            try later.close()
            let undeclared = rows.filter { table, _ in !declared.contains { $0.isSameSQLName(as: table) } }
            failures.check(Set(carried.importedTables.keys.map(\.sqlFolded)) == Set(undeclared.map(\.table.sqlFolded)),
                           "\(label): the later release imported \(carried.importedTables), expected \(undeclared)")
            for (table, count) in undeclared {
                failures.check(try rowsIn(table, at: userURL) == count, "\(label): \(table) not carried out of the file kept aside")
                failures.check(try aside.flatMap { try rowsIn(table, at: $0) } == count, "\(label): \(table) left the file kept aside")
            }
        }
        #expect(failures.count == 0, "\(failures.summary)")
    }
}
