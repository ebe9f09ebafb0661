import Foundation
import GRDB
import Logging
import ReseedSystem

/// Carries the user's tables out of a single-file store into the user store, under the store's lock
/// and the user store's.
///
/// **With a user store configured, a table of the old store that is not a seed table is the user's.**
/// A declared one is carried; any other is left in the old store, which the install then keeps
/// aside whole (never deleted), and the outcome names it (``LaunchOutcome/strandedTables``).
///
/// The app's migrations shape the user store first (with the new seed attached, as at every
/// launch); then each declared table's rows are carried, by column name, into the table of that
/// name the migrations made. A declared table no migration made is created as the old store has
/// it, with its indexes, triggers and AUTOINCREMENT counter. All rows go in one transaction,
/// checked against the old store's count. A user store that does not exist yet, or holds no
/// schema at all (0 bytes, an empty database), is built in a temp file beside it (`O_EXCL`),
/// fsynced and renamed into place; an existing one takes the rows in a transaction of its own,
/// synchronous, so the rows are on disk before the old store is replaced. The old store is only read.
///
/// An import is idempotent: a table whose rows are all in the user store already (an import a
/// crash interrupted before the swap) counts as carried; one whose user-store table holds other
/// rows is left in the old store (stranded), never merged.
struct UserTableImport {
    let directory: Directory
    /// The single-file store's file name.
    let storeName: String
    let logger: Logger

    /// The schema name the old store is attached under while copying.
    private static let source = "reseed_old"

    /// The tables of the store file that are the user's: ordinary and virtual tables (not their
    /// shadow tables) that are not SQLite's, not Reseed's own, and not among `seedTables` (folded names).
    func userTables(excluding seedTables: Set<String>) throws(ReseedError) -> [String] {
        let path = directory.path(storeName)
        // Reseed's own tables, and GRDB's record of an earlier release's migrations of the single file (not rows of the user's).
        let own: Set<String> = [SeedMetadata.tableName.sqlFolded, SeedMetadata.stepsTableName.sqlFolded, "grdb_migrations"]
        return try during(.importUserTables, path: path) {
            let queue = try DatabaseQueue(path: path, configuration: Self.configuration("reseed.user-tables"))
            defer { try? queue.close() }
            return try queue.read { db in
                try String.fetchAll(db, sql: """
                    SELECT name FROM pragma_table_list WHERE schema = 'main' AND type IN ('table', 'virtual')
                      AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name
                    """)
            }.filter { !seedTables.contains($0.sqlFolded) && !own.contains($0.sqlFolded) }
        }
    }

    /// What ``carry(_:into:seedPath:database:migrator:)`` did.
    struct Carried {
        /// Rows carried per declared name (or found carried already).
        var rows: [String: Int] = [:]
        /// Declared tables left in the old store (as it names them): the user store's table holds other rows.
        var stranded: [String] = []
        /// The app's migrations applied first.
        var appliedMigrations: [String] = []
    }

    /// Where the rows go: a new user store built beside it, or the existing one.
    enum Target {
        /// No user store yet: built in a temp file, renamed into place without replacing anything.
        case new
        /// A user store with no schema (0 bytes, an empty database): built in a temp file, renamed over it.
        case empty
        /// A user store with a schema: the rows go in by a transaction of its own.
        case existing
    }

    /// Carries `tables` (declared name, the old store's name) into the user store `userFileName`.
    ///
    /// - Parameters:
    ///   - database: the app's GRDB configuration, with the seed attached, for the migrations.
    ///   - migrator: the app's migrations, run first.
    func carry(
        _ tables: [(declared: String, name: String)], into userFileName: String, target: Target,
        database: GRDB.Configuration, migrator: DatabaseMigrator
    ) throws(ReseedError) -> Carried {
        let userPath = directory.path(userFileName)
        if target == .existing {
            return try fill(userPath, named: userPath, tables, database: database, migrator: migrator, temporary: false)
        }
        let removed = try during(.cleanUp, path: directory.url.path) { try directory.removeTemporaryFiles { StoreLayout.isTemporary($0, of: userFileName) } }
        if !removed.isEmpty {
            logger.notice("removed temporary files of an interrupted import", metadata: ["files": "\(removed)"])
        }
        let temporary = StoreLayout.temporaryName(of: userFileName)
        // Sidecars SQLite made for the temp file, whichever way this ends.
        defer { for sidecar in StoreLayout.sidecars(of: temporary) { _ = try? directory.remove(sidecar) } }
        let carried: Carried
        do throws(ReseedError) {
            _ = try during(.importUserTables, path: directory.path(temporary)) { try directory.createExclusive(temporary) }
            carried = try fill(directory.path(temporary), named: userPath, tables, database: database, migrator: migrator, temporary: true)
            try during(.importUserTables, path: userPath) {
                try directory.syncFile(temporary)
                if target == .new {
                    try directory.renameNoReplace(temporary, to: userFileName)
                } else {
                    // The empty store's sidecars first: the new file must never meet its -wal.
                    for sidecar in StoreLayout.sidecars(of: userFileName) { try directory.remove(sidecar) }
                    try directory.rename(temporary, to: userFileName)
                }
                try directory.sync()
            }
        } catch {
            _ = try? directory.remove(temporary)
            throw error
        }
        logger.info("copied the user's tables into the user store", metadata: ["userStore": "\(userPath)", "rows": "\(carried.rows)"])
        return carried
    }

    /// Migrates the database at `path`, then carries the rows in one transaction; errors name the
    /// user store (`userPath`), whose temp file `path` may be.
    ///
    /// The app's triggers fire during its migrations, not while the rows are carried: the rows go in
    /// as they were (a trigger that logs or stamps an insert would otherwise duplicate or rewrite
    /// them), as a table made from the old store's DDL gets its triggers after its rows.
    private func fill(
        _ path: String, named userPath: String, _ tables: [(declared: String, name: String)], database: GRDB.Configuration,
        migrator: DatabaseMigrator, temporary: Bool
    ) throws(ReseedError) -> Carried {
        let storePath = directory.path(storeName)
        let queue = try during(.importUserTables, path: userPath) { try DatabaseQueue(path: path, configuration: database) }
        defer { try? queue.close() }
        if temporary {
            // A temp file: durability comes from the fsync before the rename; a failure removes it.
            try during(.importUserTables, path: userPath) {
                try queue.writeWithoutTransaction { db in
                    try db.execute(sql: "PRAGMA journal_mode = OFF")
                    try db.execute(sql: "PRAGMA synchronous = OFF")
                }
            }
        }
        let applied = try UserStoreSchema.migrate(queue, with: migrator, path: userPath)
        var carried = try during(.importUserTables, path: userPath) {
            try queue.writeWithoutTransaction { db in
                // The rows go in as they were: a foreign key among them is not checked, no trigger fires.
                try db.execute(sql: "PRAGMA foreign_keys = OFF")
                try db.turnTriggersOff(step: .importUserTables, path: userPath, for: "the import")
                // The rows are on disk before the swap replaces the store they came from.
                if !temporary { try db.execute(sql: "PRAGMA synchronous = FULL") }
                try db.execute(sql: "ATTACH DATABASE ? AS \(Self.source)", arguments: [storePath])
                defer { try? db.execute(sql: "DETACH DATABASE \(Self.source)") }
                var carried = Carried()
                try db.inTransaction(.immediate) {
                    var created: [String] = [], filled: [String] = []
                    for (declared, name) in tables {
                        switch try carryTable(name, db: db, storePath: storePath, userPath: userPath, madeByThisRun: temporary) {
                        case .created(let rows): carried.rows[declared] = rows; created.append(name)
                        case .filled(let rows): carried.rows[declared] = rows; filled.append(name)
                        case .stranded: carried.stranded.append(name)
                        }
                    }
                    try copySequences(created + filled, db: db)
                    if database.foreignKeysEnabled { try checkForeignKeys(created + filled, db: db, storePath: storePath, userPath: userPath) }
                    try createIndexesAndTriggers(created, db: db)
                    return .commit
                }
                return carried
            }
        }
        carried.appliedMigrations = applied
        return carried
    }

    private enum TableResult { case created(Int), filled(Int), stranded }

    /// Carries one table. `madeByThisRun`: the target is a temp file this import made, so rows in it
    /// came from the app's migrations (defaults such as an "Inbox" folder): the user's rows win over them.
    private func carryTable(_ table: String, db: Database, storePath: String, userPath: String, madeByThisRun: Bool) throws -> TableResult {
        let source = "\(Self.source).\(table.quotedIdentifier)"
        let expected = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(source)") ?? -1
        guard let target = try String.fetchOne(
            db, sql: "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE", arguments: [table]) else {
            try createTable(table, db: db, storePath: storePath)
            var columns = try Self.columns(table, schema: Self.source, db: db).map(\.quotedIdentifier)
            // The same DDL: the rowid is carried where no column hides it (an index or a trigger may refer to it).
            if try Self.hasPlainRowid(table, schema: Self.source, db: db) { columns.insert("rowid", at: 0) }
            let list = columns.joined(separator: ", ")
            try db.execute(sql: "INSERT INTO main.\(table.quotedIdentifier) (\(list)) SELECT \(list) FROM \(source)")
            return .created(try checkCount(table, target: table, copied: db.changesCount, expected: expected, db: db, storePath: storePath))
        }
        let sourceColumns = try Self.columns(table, schema: Self.source, db: db)
        let targetColumns = Set(try Self.columns(target, schema: "main", db: db).map(\.sqlFolded))
        if let lacking = sourceColumns.first(where: { !targetColumns.contains($0.sqlFolded) }) {
            throw ReseedError(.userStoreConflict, step: .importUserTables, path: userPath, message:
                "the user table '\(table)' of the store file \(storePath) has a column '\(lacking)' that the user store's table '\(target)' (made by the app's migrations) lacks, so its values would be lost; add the column in a migration (nothing was changed)")
        }
        let sourceFolded = Set(sourceColumns.map(\.sqlFolded))
        if let required = try String.fetchAll(db, sql: """
            SELECT name FROM pragma_table_xinfo(?, 'main') WHERE hidden = 0 AND "notnull" = 1 AND dflt_value IS NULL AND pk = 0 ORDER BY cid
            """, arguments: [target]).first(where: { !sourceFolded.contains($0.sqlFolded) }) {
            throw ReseedError(.userStoreConflict, step: .importUserTables, path: userPath, message:
                "the user store's table '\(target)' (made by the app's migrations) has a NOT NULL column '\(required)' without a default that the user table '\(table)' of the store file \(storePath) lacks, so its rows cannot be carried; give the column a default in a migration (nothing was changed)")
        }
        var columns = sourceColumns.map(\.quotedIdentifier)
        // The rowid too, where both tables have one that no column hides: an index or a trigger may refer to it.
        if try Self.hasPlainRowid(table, schema: Self.source, db: db), try Self.hasPlainRowid(target, schema: "main", db: db) {
            columns.insert("rowid", at: 0)
        }
        let list = columns.joined(separator: ", ")
        let targetName = "main.\(target.quotedIdentifier)"
        let present = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(targetName)") ?? 0
        if present > 0, madeByThisRun {
            logger.notice("the app's migrations put rows in the user table: the user's own rows replace them", metadata: [
                "table": "\(target)", "rows": "\(present)",
            ])
            try db.execute(sql: "DELETE FROM \(targetName)")
        }
        if present == 0 || madeByThisRun {
            try db.execute(sql: "INSERT INTO \(targetName) (\(list)) SELECT \(list) FROM \(source)")
            return .filled(try checkCount(table, target: target, copied: db.changesCount, expected: expected, db: db, storePath: storePath))
        }
        // Rows there already: every old row among them, byte for byte (whatever the columns' collations),
        // is an import that finished before a crash; anything else is the user's.
        let binary = columns.map { "\($0) COLLATE BINARY" }.joined(separator: ", ")
        let notCarried = try Int.fetchOne(db, sql: "SELECT count(*) FROM (SELECT \(binary) FROM \(source) EXCEPT SELECT \(binary) FROM \(targetName))") ?? -1
        if notCarried == 0 {
            logger.notice("the user table's rows are in the user store already", metadata: ["table": "\(table)", "rows": "\(expected)"])
            return .filled(expected)
        }
        logger.warning("the user store's table holds other rows: the old store's are left in it, kept aside", metadata: ["table": "\(table)"])
        return .stranded
    }

    /// With the app's foreign keys on, the carried rows must keep them among the user's tables (GRDB
    /// checks the whole store after each later migration, which would then fail at every launch): a
    /// row whose parent is not there (an orphan, or a parent table left undeclared) is refused with a
    /// sentence and the carry is rolled back. A foreign key to a seed table is the user store's check's.
    private func checkForeignKeys(_ tables: [String], db: Database, storePath: String, userPath: String) throws {
        for table in tables {
            for violation in try Row.fetchAll(db, sql: "PRAGMA main.foreign_key_check(\(table.quotedIdentifier))") {
                let parent: String = violation["parent"] ?? ""
                let rowid: Int64? = violation["rowid"]
                // A foreign key to a seed table (attached, not in the user store): the user store's check says what to do.
                if try !Self.hasTable(parent, schema: "main", db: db), try Self.hasTable(parent, schema: Launcher.seedSchema, db: db) { continue }
                throw ReseedError(.userStoreConflict, step: .importUserTables, path: userPath, message:
                    "the user table '\(table)' of the store file \(storePath) has a row (rowid \(rowid.map(String.init) ?? "none")) whose foreign key finds no row of '\(parent)' in the user store, which the app's foreign keys refuse; declare '\(parent)' too, or fix the row in the old store (nothing was changed)")
            }
        }
    }

    private static func hasTable(_ name: String, schema: String, db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM \(schema).sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE",
                          arguments: [name]) == true
    }

    private func createTable(_ table: String, db: Database, storePath: String) throws {
        guard let sql = try String.fetchOne(
            db, sql: "SELECT sql FROM \(Self.source).sqlite_master WHERE type = 'table' AND name = ?", arguments: [table]) else {
            throw ReseedError(.database, step: .importUserTables, path: storePath, message: "the user table '\(table)' vanished while copying")
        }
        guard !sql.uppercased().hasPrefix("CREATE VIRTUAL TABLE") else {
            throw ReseedError(.invalidArgument, step: .importUserTables, path: storePath,
                              message: "the user table '\(table)' is a virtual table; its rows cannot be copied as a table's, changed nothing")
        }
        try db.execute(sql: sql)
    }

    private func checkCount(_ table: String, target: String, copied: Int, expected: Int, db: Database, storePath: String) throws -> Int {
        let written = try Int.fetchOne(db, sql: "SELECT count(*) FROM main.\(target.quotedIdentifier)") ?? -1
        guard copied == expected, written == expected else {
            throw ReseedError(.verificationFailed, step: .importUserTables, path: storePath,
                              message: "copied \(copied) rows of '\(table)' (\(written) in the user store), the store has \(expected); changed nothing")
        }
        return copied
    }

    /// The columns whose values are stored (not generated, not a virtual table's hidden ones).
    private static func columns(_ table: String, schema: String, db: Database) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT name FROM pragma_table_xinfo(?, ?) WHERE hidden = 0 ORDER BY cid", arguments: [table, schema])
    }

    /// Whether `table` is a rowid table whose rowid is reached as `rowid` (no column takes that name).
    private static func hasPlainRowid(_ table: String, schema: String, db: Database) throws -> Bool {
        let withoutRowid = try Bool.fetchOne(db, sql: "SELECT wr FROM pragma_table_list WHERE schema = ? AND name = ?", arguments: [schema, table]) ?? true
        let named = try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM pragma_table_xinfo(?, ?) WHERE name = 'rowid' COLLATE NOCASE",
                                      arguments: [table, schema]) ?? true
        return !withoutRowid && !named
    }

    /// AUTOINCREMENT counters, as the old store has them (higher than the largest key when rows were deleted).
    private func copySequences(_ tables: [String], db: Database) throws {
        guard try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM main.sqlite_master WHERE name = 'sqlite_sequence'") == true,
              try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM \(Self.source).sqlite_master WHERE name = 'sqlite_sequence'") == true
        else { return }
        for table in tables {
            guard let seq = try Int64.fetchOne(db, sql: "SELECT seq FROM \(Self.source).sqlite_sequence WHERE name = ?", arguments: [table]),
                  let target = try String.fetchOne(db, sql: "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE",
                                                   arguments: [table]) else { continue }
            let current = try Int64.fetchOne(db, sql: "SELECT seq FROM main.sqlite_sequence WHERE name = ?", arguments: [target]) ?? 0
            try db.execute(sql: "DELETE FROM main.sqlite_sequence WHERE name = ?", arguments: [target])
            try db.execute(sql: "INSERT INTO main.sqlite_sequence (name, seq) VALUES (?, ?)", arguments: [target, max(seq, current)])
        }
    }

    private func createIndexesAndTriggers(_ tables: [String], db: Database) throws {
        guard !tables.isEmpty else { return }
        let placeholders = Array(repeating: "?", count: tables.count).joined(separator: ", ")
        let statements = try String.fetchAll(db, sql: """
            SELECT sql FROM \(Self.source).sqlite_master
            WHERE type IN ('index', 'trigger') AND sql IS NOT NULL AND tbl_name COLLATE NOCASE IN (\(placeholders))
            ORDER BY type = 'trigger', rowid
            """, arguments: StatementArguments(tables))
        for sql in statements { try db.execute(sql: sql) }
    }

    private static func configuration(_ label: String) -> GRDB.Configuration {
        var configuration = GRDB.Configuration()
        configuration.label = label
        // Not read-only: a hot journal a crash left must be rolled back to read the store at all.
        return configuration
    }
}
