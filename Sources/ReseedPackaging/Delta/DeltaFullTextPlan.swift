import Foundation
import GRDB
import Reseed
import ReseedSystem

/// The external-content FTS tables of a delta (`content='article'`): their text travels once, in
/// their content table's rows, and their row lists carry rowids only (`k1`); the device rebuilds their
/// index entries from the content table (see `Reseed`'s RowLevelDeltas article).
///
/// An app that predates this reads such a list as one with the wrong columns when it updates or
/// inserts rows (`invalidDelta`), and takes the full seed: applying the content rows without
/// re-indexing them would leave an index its content-hash check cannot see. A list of deleted rows was
/// rowids only before too: such an app applies it, through the module, as it always did.
struct DeltaFullTextPlan {
    /// The external-content FTS tables of the new seed, lowercased.
    private var tables: Set<String> = []

    /// The most columns of an index table whose updated rows are compared column by column here.
    private static let maxColumns = 100

    /// The plan for the seed attached as `new`: its FTS4 and FTS5 tables read through their module
    /// (`tables`, from ``SeedDelta/contentTables(in:_:)``) that have no `_content` shadow table, the
    /// module's own copy of the text, so they read it from another table (a contentless table is not among `tables`).
    init(_ db: Database, new: String, tables contentTables: [ContentTables.Table]) throws {
        let shadows = Set(try String.fetchAll(db, sql: "SELECT lower(name) FROM pragma_table_list WHERE schema = ? AND type = 'shadow'", arguments: [new]))
        for table in contentTables where table.kind == .virtual {
            let name = table.name.lowercased()
            let fullText = shadows.contains(name + "_segdir") || shadows.contains(name + "_data")
            let columns = try Int.fetchOne(db, sql: "SELECT count(*) FROM pragma_table_info(?, ?)", arguments: [table.name, new]) ?? 0
            if fullText, !shadows.contains(name + "_content"), columns <= Self.maxColumns { tables.insert(name) }
        }
    }

    /// Whether the table `name` travels as rowids only.
    func carriesRowidsOnly(_ name: String) -> Bool { tables.contains(name.lowercased()) }

    /// Creates and fills the row list `list` of the index table `shape` (index `index` in the delta)
    /// with the rowids of its rows of that kind, compared through the module between the seeds attached
    /// as `old` and `new` (all of them when `whole`); drops it again when it is empty. Returns its row count.
    static func writeRowids(
        _ list: SeedDelta.Names.List, of shape: SeedDelta.TableShape, index: Int, whole: Bool, old: String, new: String, _ db: Database
    ) throws -> Int {
        let name = "main." + SeedDelta.Names.table(index, list).quotedIdentifier
        let rowid = shape.key.quotedList()
        let (oldTable, newTable) = ("\(old).\(shape.name.quotedIdentifier)", "\(new).\(shape.name.quotedIdentifier)")
        let rows: String
        switch list {
        case _ where whole:
            rows = "SELECT \(rowid) FROM \(newTable)"
        case .deleted:
            rows = "SELECT o.\(rowid) FROM \(oldTable) AS o WHERE NOT EXISTS (SELECT 1 FROM \(newTable) AS n WHERE n.\(rowid) = o.\(rowid))"
        case .inserted:
            rows = "SELECT n.\(rowid) FROM \(newTable) AS n WHERE NOT EXISTS (SELECT 1 FROM \(oldTable) AS o WHERE o.\(rowid) = n.\(rowid))"
        case .updated:
            // Equal as the delta compares values: byte for byte and storage class for storage class.
            let same = shape.values.map { column -> String in
                let (n, o) = ("n." + column.quotedIdentifier, "o." + column.quotedIdentifier)
                return "(\(o) IS \(n) COLLATE BINARY AND typeof(\(o)) = typeof(\(n)))"
            }.joined(separator: " AND ")
            rows = "SELECT n.\(rowid) FROM \(newTable) AS n JOIN \(oldTable) AS o ON o.\(rowid) = n.\(rowid) WHERE NOT (\(same.isEmpty ? "1" : same))"
        case .moved:
            // A virtual table's rows are never matched by content, so they never move.
            return 0
        }
        try db.execute(sql: "CREATE TABLE \(name) (k1)")
        try db.execute(sql: "INSERT INTO \(name) (k1) SELECT * FROM (\(rows)) ORDER BY 1")
        let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(name)") ?? 0
        if count == 0 { try db.execute(sql: "DROP TABLE \(name)") }
        return count
    }
}
