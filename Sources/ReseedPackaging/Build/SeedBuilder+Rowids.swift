import GRDB
import GRDBSQLite
import Reseed
import ReseedSystem

extension SeedBuilder {
    /// Fails when `VACUUM INTO` renumbered a table's rows: a seed holds the rowids its steps wrote.
    ///
    /// SQLite documents that `VACUUM` may change the rowids of a table without an `INTEGER PRIMARY
    /// KEY`. `VACUUM INTO` keeps them when it copies a table's b-tree as it is, and numbers the rows
    /// 1, 2, 3… in rowid order when it cannot (on a read-only connection, a table with a CHECK
    /// constraint, in SQLite 3.40.1). Such a renumbering changes the lowest or the highest rowid of
    /// every table whose rowids were not already 1…n, so comparing those two, a b-tree descent each,
    /// finds it without reading the rows. `sqlite_schema` is left out: its rowids are not content.
    ///
    /// - Parameters:
    ///   - db: a connection whose `main` is the database that was compacted.
    ///   - copy: the path of the copy `VACUUM INTO` wrote.
    ///   - path: the path an error names.
    static func checkRowidsKept(_ db: Database, copy: String, path: String) throws {
        try db.execute(sql: "ATTACH DATABASE ? AS compacted", arguments: [Launcher.readOnlyURI(copy)])
        defer { try? db.execute(sql: "DETACH DATABASE compacted") }
        let tables = try String.fetchAll(db, sql: """
            SELECT name FROM pragma_table_list WHERE schema = 'main' AND type IN ('table', 'shadow') AND NOT wr
            AND name NOT IN ('sqlite_schema', 'sqlite_temp_schema') ORDER BY name
            """)
        for table in tables {
            let columns = Set(try String.fetchAll(db, sql: "SELECT lower(name) FROM pragma_table_xinfo(?)", arguments: [table]))
            // A table whose columns take all three names hides its rowid; its content hash refuses it later.
            guard let rowid = ["rowid", "_rowid_", "oid"].first(where: { !columns.contains($0) }) else { continue }
            let name = table.quotedIdentifier
            let bounds = try Row.fetchOne(db, sql: """
                SELECT (SELECT min(\(rowid)) FROM main.\(name)), (SELECT max(\(rowid)) FROM main.\(name)),
                       (SELECT min(\(rowid)) FROM compacted.\(name)), (SELECT max(\(rowid)) FROM compacted.\(name))
                """)
            let (low, high, copiedLow, copiedHigh): (Int64?, Int64?, Int64?, Int64?) = (bounds?[0], bounds?[1], bounds?[2], bounds?[3])
            guard low == copiedLow, high == copiedHigh else {
                throw PackagingError(.integrityCheckFailed, step: .build, path: path, message: """
                    compacting the built database renumbered the rows of table '\(excerpt(table))' (rowids \
                    \(low.map(String.init) ?? "none")…\(high.map(String.init) ?? "none") became \
                    \(copiedLow.map(String.init) ?? "none")…\(copiedHigh.map(String.init) ?? "none")), which SQLite \
                    \(String(cString: sqlite3_libversion())) may do to a table without an INTEGER PRIMARY KEY: \
                    report it to Reseed with the table's CREATE statement
                    """)
            }
        }
    }
}
