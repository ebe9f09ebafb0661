import Foundation
import GRDB
import Logging
import ReseedSystem

/// Copies the user's tables out of a single-file store into a new user store, under the store's lock.
///
/// The new store is built in a temp file beside it (`O_EXCL`), by SQLite with the old store
/// attached: each table's `CREATE TABLE` as the old store has it, its rows
/// (`INSERT … SELECT`, in one transaction), its AUTOINCREMENT counter, then its indexes and
/// triggers (after the rows, so no trigger fires). The rows copied are checked against the old
/// store's count in the same transaction; the file is fsynced, renamed into place without
/// replacing anything, and the directory fsynced. The old store is only read.
struct UserTableImport {
    let directory: Directory
    /// The single-file store's file name.
    let storeName: String
    let logger: Logger

    /// The schema name the old store is attached under while copying.
    private static let source = "reseed_old"

    /// Which of `tables` the store file has.
    func tablesPresent(_ tables: [String]) throws(ReseedError) -> [String] {
        let path = directory.path(storeName)
        return try during(.importUserTables, path: path) {
            let queue = try DatabaseQueue(path: path, configuration: Self.configuration("reseed.user-tables"))
            defer { try? queue.close() }
            return try queue.read { db in try Self.present(tables, in: db, schema: "main") }
        }
    }

    /// Builds the user store `userFileName` from `present`, those of the declared `tables` the store
    /// has (``tablesPresent(_:)``).
    ///
    /// - Returns: the rows copied per table, and the declared tables the store lacks (reported, not an error).
    ///   With none of the tables present no user store is written.
    func run(_ tables: [String], present: [String], into userFileName: String) throws(ReseedError) -> (rows: [String: Int], missing: [String]) {
        let userPath = directory.path(userFileName)
        let removed = try during(.cleanUp, path: directory.url.path) { try directory.removeTemporaryFiles(for: userFileName) }
        if !removed.isEmpty {
            logger.notice("removed temporary files of an interrupted import", metadata: ["files": "\(removed)"])
        }
        let missing = tables.filter { !present.contains($0) }
        if !missing.isEmpty {
            logger.notice("declared user tables the store does not have", metadata: ["tables": "\(missing)", "store": "\(directory.path(storeName))"])
        }
        guard !present.isEmpty else { return ([:], missing) }

        let temporary = Directory.temporaryName(for: userFileName)
        var rows: [String: Int] = [:]
        do throws(ReseedError) {
            _ = try during(.importUserTables, path: directory.path(temporary)) { try directory.createExclusive(temporary) }
            rows = try copy(present, into: directory.path(temporary))
            try during(.importUserTables, path: userPath) {
                try directory.syncFile(temporary)
                try directory.renameNoReplace(temporary, to: userFileName)
                try directory.sync()
            }
        } catch {
            _ = try? directory.remove(temporary)
            throw error
        }
        logger.info("copied the user's tables into the user store", metadata: ["userStore": "\(userPath)", "rows": "\(rows)"])
        return (rows, missing)
    }

    /// Copies `tables` from the store into the empty database at `path`; returns the rows copied per table.
    private func copy(_ tables: [String], into path: String) throws(ReseedError) -> [String: Int] {
        let storePath = directory.path(storeName)
        return try during(.importUserTables, path: path) {
            let queue = try DatabaseQueue(path: path, configuration: Self.configuration("reseed.import"))
            defer { try? queue.close() }
            return try queue.writeWithoutTransaction { db in
                // A temp file: durability comes from the fsync before the rename.
                try db.execute(sql: "PRAGMA journal_mode = OFF")
                try db.execute(sql: "PRAGMA synchronous = OFF")
                try db.execute(sql: "ATTACH DATABASE ? AS \(Self.source)", arguments: [storePath])
                defer { try? db.execute(sql: "DETACH DATABASE \(Self.source)") }
                var rows: [String: Int] = [:]
                try db.inTransaction(.immediate) {
                    for table in tables { rows[table] = try copyTable(table, db: db, storePath: storePath) }
                    try copySequences(tables, db: db)
                    try createIndexesAndTriggers(tables, db: db)
                    return .commit
                }
                return rows
            }
        }
    }

    private func copyTable(_ table: String, db: Database, storePath: String) throws -> Int {
        let quoted = table.quotedIdentifier
        guard let sql = try String.fetchOne(
            db, sql: "SELECT sql FROM \(Self.source).sqlite_master WHERE type = 'table' AND name = ?", arguments: [table]) else {
            throw ReseedError(.database, step: .importUserTables, path: storePath, message: "the user table '\(table)' vanished while copying")
        }
        guard !sql.uppercased().hasPrefix("CREATE VIRTUAL TABLE") else {
            throw ReseedError(.invalidArgument, step: .importUserTables, path: storePath,
                              message: "the user table '\(table)' is a virtual table; its rows cannot be copied as a table's, changed nothing")
        }
        try db.execute(sql: sql)
        // Generated columns are computed again, not copied.
        let columns = try String.fetchAll(db, sql: "SELECT name FROM pragma_table_xinfo(?, ?) WHERE hidden = 0", arguments: [table, Self.source])
            .map(\.quotedIdentifier).joined(separator: ", ")
        try db.execute(sql: "INSERT INTO main.\(quoted) (\(columns)) SELECT \(columns) FROM \(Self.source).\(quoted)")
        let copied = db.changesCount
        let expected = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(Self.source).\(quoted)") ?? -1
        let written = try Int.fetchOne(db, sql: "SELECT count(*) FROM main.\(quoted)") ?? -1
        guard copied == expected, written == expected else {
            throw ReseedError(.verificationFailed, step: .importUserTables, path: storePath,
                              message: "copied \(copied) rows of '\(table)' (\(written) in the user store), the store has \(expected); changed nothing")
        }
        return copied
    }

    /// AUTOINCREMENT counters, as the old store has them (higher than the largest key when rows were deleted).
    private func copySequences(_ tables: [String], db: Database) throws {
        guard try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM main.sqlite_master WHERE name = 'sqlite_sequence'") == true,
              try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM \(Self.source).sqlite_master WHERE name = 'sqlite_sequence'") == true
        else { return }
        for table in tables {
            guard let seq = try Int64.fetchOne(db, sql: "SELECT seq FROM \(Self.source).sqlite_sequence WHERE name = ?", arguments: [table]) else { continue }
            try db.execute(sql: "DELETE FROM main.sqlite_sequence WHERE name = ?", arguments: [table])
            try db.execute(sql: "INSERT INTO main.sqlite_sequence (name, seq) VALUES (?, ?)", arguments: [table, seq])
        }
    }

    private func createIndexesAndTriggers(_ tables: [String], db: Database) throws {
        let placeholders = Array(repeating: "?", count: tables.count).joined(separator: ", ")
        let statements = try String.fetchAll(db, sql: """
            SELECT sql FROM \(Self.source).sqlite_master
            WHERE type IN ('index', 'trigger') AND sql IS NOT NULL AND tbl_name IN (\(placeholders))
            ORDER BY type = 'trigger', rowid
            """, arguments: StatementArguments(tables))
        for sql in statements { try db.execute(sql: sql) }
    }

    /// `tables` that `schema` has, in the order given.
    private static func present(_ tables: [String], in db: Database, schema: String) throws -> [String] {
        let existing = Set(try String.fetchAll(db, sql: "SELECT name FROM \(schema).sqlite_master WHERE type = 'table'"))
        return tables.filter(existing.contains)
    }

    private static func configuration(_ label: String) -> GRDB.Configuration {
        var configuration = GRDB.Configuration()
        configuration.label = label
        // A foreign key to a seed table cannot be checked while copying.
        configuration.foreignKeysEnabled = false
        return configuration
    }
}
