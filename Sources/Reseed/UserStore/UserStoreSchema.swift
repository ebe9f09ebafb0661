import Crypto
import Foundation
import GRDB
import Logging
import ReseedSystem

/// The user store's schema against the seed's: the app's migrations, the names the two share,
/// the references into the seed.
enum UserStoreSchema {
    /// What the checks of an up-to-date launch depend on, as 64 hex digits (see ``Launcher/finishOpening(_:outcome:)``).
    static func fingerprint(_ userStore: Launcher.UserStore, version: String, source: SeedSource, schemaVersion: Int, foreignKeys: Bool) -> String {
        var text = "reseed-user-store-check 1\n\(userStore.name)\n\(version)\n\(source.rawValue)\n\(schemaVersion)\n\(foreignKeys)\n"
        for migration in userStore.migrator.migrations { text += "migration \(migration.count):\(migration)\n" }
        for reference in userStore.references { text += "reference \(reference.description.count):\(reference)\n" }
        return SHA256.hash(data: Data(text.utf8)).hexString
    }

    /// What one read of a user store's pool finds: the app's migrations already applied, and the
    /// first reason the user store cannot be used with the seed, if there is one.
    struct Inspection {
        var applied: Set<String>
        var problem: String?
    }

    /// Reads, in one transaction of few statements (this is on every launch's path), the applied
    /// migrations and what ``check`` refuses: a user table or view with the name of a seed table or
    /// view (it would hide the seed's rows), a foreign key of a user table to a seed table while
    /// foreign keys are enforced (SQLite cannot check one across files), a reference naming a table
    /// or column that does not exist.
    static func inspect(_ pool: DatabasePool, userStore: Launcher.UserStore, path: String, foreignKeys: Bool) throws(ReseedError) -> Inspection {
        let seed = Launcher.seedSchema
        return try during(.checkUserStore, path: path) {
            try pool.read { db in
                let applied = userStore.migrator.migrations.isEmpty ? [] : try userStore.migrator.appliedIdentifiers(db)
                if let name = try String.fetchOne(db, sql: """
                    SELECT name FROM main.sqlite_master
                    WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
                      AND name COLLATE NOCASE IN (SELECT name FROM \(seed).sqlite_master WHERE type IN ('table', 'view'))
                    ORDER BY name LIMIT 1
                    """) {
                    return Inspection(applied: applied, problem:
                        "the user store's table '\(name)' has the name of the seed's table '\(seed).\(name)' (SQLite's names ignore case), whose rows it would hide; rename it in a migration")
                }
                if foreignKeys, let crossing = try Row.fetchOne(db, sql: """
                    SELECT m.name AS child, f."table" AS parent FROM main.sqlite_master m, pragma_foreign_key_list(m.name, 'main') f
                    WHERE m.type = 'table' AND f."table" COLLATE NOCASE NOT IN (SELECT name FROM main.sqlite_master WHERE type = 'table')
                      AND f."table" COLLATE NOCASE IN (SELECT name FROM \(seed).sqlite_master WHERE type = 'table')
                    ORDER BY m.name LIMIT 1
                    """) {
                    let child: String = crossing["child"], parent: String = crossing["parent"]
                    return Inspection(applied: applied, problem:
                        "the user table '\(child)' has a foreign key to the seed table '\(parent)': SQLite cannot enforce one across files; drop it in a migration and declare a SeedReference, or turn foreign keys off")
                }
                return Inspection(applied: applied, problem: try referenceProblem(userStore.references, db: db))
            }
        }
    }

    /// Runs the app's migrator on the user store when `applied` lacks some of its migrations;
    /// returns the migrations it applied, in order.
    ///
    /// - Throws: ``ReseedError`` (step `migrateUserStore`) naming the migration that failed. Each
    ///   GRDB migration is a transaction of its own: the failing one is rolled back, those before
    ///   it stay applied.
    static func migrate(_ pool: some DatabaseWriter, with migrator: DatabaseMigrator, applied before: Set<String>, path: String) throws(ReseedError) -> [String] {
        if migrator.migrations.allSatisfy(before.contains) { return [] }
        do {
            try migrator.migrate(pool)
        } catch {
            let after = (try? pool.read { try migrator.appliedIdentifiers($0) }) ?? before
            let failed = migrator.migrations.first { !after.contains($0) } ?? "?"
            var wrapped = ReseedError.wrapping(error, step: .migrateUserStore, path: path)
            // SQLite's words (or the system's) follow the message; any other error's, it says itself.
            let cause = wrapped.databaseError == nil && wrapped.errno == nil ? ": " + wrapped.message : ""
            wrapped.message = "the app's migration '\(failed)' failed and was rolled back (the migrations before it stay applied)" + cause
            throw wrapped
        }
        return migrator.migrations.filter { !before.contains($0) }
    }

    /// ``migrate(_:with:applied:path:)``, reading the applied migrations first.
    static func migrate(_ writer: some DatabaseWriter, with migrator: DatabaseMigrator, path: String) throws(ReseedError) -> [String] {
        guard !migrator.migrations.isEmpty else { return [] }
        let applied = try during(.migrateUserStore, path: path) { try writer.read { try migrator.appliedIdentifiers($0) } }
        return try migrate(writer, with: migrator, applied: applied, path: path)
    }

    /// What is wrong with the first reference that names a table or column that does not exist, if one does.
    ///
    /// One statement looks up every side of every reference (`pragma_table_xinfo`); only when one
    /// is missing are they looked at one by one, to say which table or column.
    private static func referenceProblem(_ references: [SeedReference], db: Database) throws -> String? {
        guard !references.isEmpty else { return nil }
        let sides = references.flatMap { [($0.table, $0.column, "main"), ($0.seedTable, $0.seedColumn, Launcher.seedSchema)] }
        let values = Array(repeating: "(?, ?, ?)", count: sides.count).joined(separator: ", ")
        let anyMissing = try Bool.fetchOne(db, sql: """
            WITH side(t, c, s) AS (VALUES \(values))
            SELECT count(*) > 0 FROM side WHERE NOT EXISTS (SELECT 1 FROM pragma_table_xinfo(side.t, side.s) x WHERE x.name = side.c COLLATE NOCASE)
            """, arguments: StatementArguments(sides.flatMap { [$0.0, $0.1, $0.2] })) ?? false
        guard anyMissing else { return nil }
        for reference in references {
            if let missing = try missingColumn(reference.table, reference.column, schema: "main", db: db) {
                return "reference '\(reference)': the user store has no \(missing)"
            }
            if let missing = try missingColumn(reference.seedTable, reference.seedColumn, schema: Launcher.seedSchema, db: db) {
                return "reference '\(reference)': the seed has no \(missing)"
            }
        }
        return nil
    }

    /// The user store's own tables and views (not SQLite's).
    static func ownNames(_ db: Database) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT name FROM main.sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
    }

    /// Refuses, before it replaces the installed seed, a new seed at `seedPath` that has a table or
    /// view named as one of `userTables` (it would hide the seed's rows), or lacks a table or column
    /// a reference points at (every launch would then fail on it). With `declared`, `userTables` are
    /// those the configuration declares to carry out of a single-file store.
    ///
    /// - Returns: the seed's table and view names, folded as SQLite compares them (``Swift/String/sqlFolded``).
    @discardableResult
    static func refuseIncompatibleSeed(userTables: [String], references: [SeedReference], seedPath: String, userPath: String, declared: Bool = false) throws(ReseedError) -> Set<String> {
        let (seedNames, missing) = try during(.checkUserStore, path: seedPath) { () throws -> (Set<String>, String?) in
            let queue = try DatabaseQueue(path: seedPath, configuration: readOnly("reseed.seed-check"))
            defer { try? queue.close() }
            return try queue.read { db in
                let names = Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')").map(\.sqlFolded))
                for reference in references {
                    if let missing = try missingColumn(reference.seedTable, reference.seedColumn, schema: "main", db: db) {
                        return (names, "the new seed has no \(missing), which the reference '\(reference)' points at; changed nothing")
                    }
                }
                return (names, nil)
            }
        }
        if let name = userTables.first(where: { seedNames.contains($0.sqlFolded) }) {
            if declared {
                throw ReseedError(.userStoreConflict, step: .checkUserStore, path: seedPath,
                                  message: "the user table '\(name)' declared for the user store is the seed's table '\(name)': copied, it would hide the seed's rows; declare only the app's own tables (nothing was changed)")
            }
            throw ReseedError(.userStoreConflict, step: .checkUserStore, path: userPath,
                              message: "the new seed has a table '\(name)', the name of the user store's table '\(name)', whose rows would hide the seed's; changed nothing")
        }
        if let missing { throw ReseedError(.userStoreConflict, step: .checkUserStore, path: seedPath, message: missing) }
        return seedNames
    }

    /// The user store's own tables and views, read through a connection of its own; none when it does not exist.
    /// Waits up to `busyTimeout` for another connection's lock, as every open of the app's does.
    static func ownNames(ofStoreAt path: String, busyTimeout: Duration) throws(ReseedError) -> [String] {
        guard FileManager.default.fileExists(atPath: path) else { return [] }
        var configuration = readOnly("reseed.user-tables")
        configuration.busyMode = .timeout(busyTimeout.inSeconds)
        return try during(.checkUserStore, path: path) {
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            defer { try? queue.close() }
            return try queue.read(ownNames)
        }
    }

    private static func readOnly(_ label: String) -> GRDB.Configuration {
        var configuration = GRDB.Configuration()
        configuration.readonly = true
        configuration.label = label
        return configuration
    }

    /// "table 'x'" or "column 'x.y'" when `schema` lacks it.
    private static func missingColumn(_ table: String, _ column: String, schema: String, db: Database) throws -> String? {
        guard try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM \(schema).sqlite_master WHERE type IN ('table', 'view') AND name = ? COLLATE NOCASE",
                                arguments: [table]) == true else { return "table '\(table)'" }
        guard try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM pragma_table_xinfo(?, ?) WHERE name = ? COLLATE NOCASE",
                                arguments: [table, schema, column]) == true else { return "column '\(table).\(column)'" }
        return nil
    }

    /// Per reference (its description), the user rows whose non-null value is not a key of the seed.
    static func countOrphans(_ pool: some DatabaseReader, references: [SeedReference], path: String) throws(ReseedError) -> [String: Int] {
        guard !references.isEmpty else { return [:] }
        let counted: Result<[String: Int], ReseedError> = try during(.checkUserStore, path: path) {
            try pool.read { db in
                // A reference to a table or column the new seed no longer has is named, not left to SQLite's message.
                if let problem = try referenceProblem(references, db: db) {
                    return .failure(ReseedError(.userStoreConflict, step: .checkUserStore, path: path, message: problem))
                }
                return .success(try countOrphans(db, references: references, seedSchema: Launcher.seedSchema))
            }
        }
        return try counted.get()
    }

    /// Per reference, the rows of `main`'s user table whose non-null value is not in `seedSchema`'s key column.
    static func countOrphans(_ db: Database, references: [SeedReference], seedSchema: String) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for reference in references {
            let table = reference.table.quotedIdentifier, column = reference.column.quotedIdentifier
            counts[reference.description] = try Int.fetchOne(db, sql: """
                SELECT count(*) FROM main.\(table) AS u WHERE u.\(column) IS NOT NULL AND NOT EXISTS (
                    SELECT 1 FROM \(seedSchema).\(reference.seedTable.quotedIdentifier) AS s
                    WHERE s.\(reference.seedColumn.quotedIdentifier) = u.\(column))
                """) ?? 0
        }
        return counts
    }

    static func log(_ orphans: [String: Int], logger: Logger) {
        for (reference, count) in orphans.sorted(by: { $0.key < $1.key }) where count > 0 {
            logger.warning("user rows point at keys the seed no longer has", metadata: ["reference": "\(reference)", "rows": "\(count)"])
        }
    }
}
