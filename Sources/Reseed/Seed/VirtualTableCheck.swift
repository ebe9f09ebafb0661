import Foundation
import GRDB
import ReseedSystem

/// The integrity checks of the FTS and R-tree modules, which `PRAGMA integrity_check` does not run
/// (SQLite 3.40): FTS3/4/5's `integrity-check` command and R-tree's `rtreecheck()`.
///
/// The FTS check is an `INSERT` that writes nothing: it needs a connection that may write, and the
/// callers run it inside a transaction they roll back or were about to commit anyway.
package enum VirtualTableCheck {
    /// What the module says is wrong with virtual table `name` of `schemaName`; nil when it is sound
    /// or its module has no check.
    ///
    /// - Throws: the `DatabaseError` of reading the schema, or a check SQLite refused to run for
    ///   another reason than a damaged index (a read-only connection).
    static func problem(_ name: String, in schemaName: String = "main", _ db: Database) throws -> String? {
        let quotedSchema = schemaName.quotedIdentifier
        guard let sql = try String.fetchOne(db, sql: "SELECT sql FROM \(quotedSchema).sqlite_schema WHERE type = 'table' AND name = ?", arguments: [name]),
              let definition = VirtualTableDefinition(sql) else { return nil }
        switch definition.module {
        case "fts3", "fts4", "fts5":
            let table = name.quotedIdentifier
            do {
                try db.execute(sql: "INSERT INTO \(quotedSchema).\(table)(\(table)) VALUES ('integrity-check')")
                return nil
            } catch let error as DatabaseError where [.SQLITE_CORRUPT, .SQLITE_CORRUPT_VTAB].contains(error.extendedResultCode) || error.resultCode == .SQLITE_CORRUPT {
                return error.message ?? "integrity-check failed"
            }
        case "rtree", "rtree_i32":
            let answer = try String.fetchOne(db, sql: "SELECT rtreecheck(?, ?)", arguments: [schemaName, name]) ?? "no answer"
            return answer == "ok" ? nil : answer
        default:
            return nil
        }
    }

    /// The problems of every FTS and R-tree table of `schemaName`, each as `table: problem`.
    ///
    /// - Throws: as ``problem(_:in:_:)``.
    package static func problems(in schemaName: String = "main", _ db: Database) throws -> [String] {
        let names = try String.fetchAll(db, sql: "SELECT name FROM pragma_table_list WHERE schema = ? AND type = 'virtual'", arguments: [schemaName])
        return try names.compactMap { name in try problem(name, in: schemaName, db).map { "\(name): \($0)" } }
    }
}
