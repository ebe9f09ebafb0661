import Foundation
import GRDB
import Reseed

/// The row lists of a rowid table whose key does not identify its rows: no primary key, or one that
/// holds NULL. Its rows are matched by content (``RowAlignment``), its lists are keyed by rowid, and
/// the rows whose rowid only shifted travel as runs, so the device's copy ends with the new seed's
/// rowids exactly (format 3).
extension DeltaWriter {
    typealias Lists = (written: [Names.List: Int], moved: Int?)

    /// The most runs a table's list of moves may hold: the applier's bound. Past it, the table's rows are matched by rowid.
    static let maxRuns = 1_000_000

    /// Whether the rows of `table` (whose shape is `shape`) are matched by content: a rowid table, not
    /// virtual, without a primary key, or whose key holds NULL in either seed.
    func matchesByContent(_ table: ContentTables.Table, _ shape: SeedDelta.TableShape, _ db: Database) throws -> Bool {
        guard table.kind == .stored, !table.withoutRowid else { return false }
        // A rowid table's key may hold NULL exactly when it declares one.
        return try !shape.keyMayBeNull || hasNullKey(shape, in: [Self.old, Self.new], db)
    }

    /// Writes the lists of the table at `index`: matched by rowid first, as formats 1 and 2 match a table
    /// without a key; when aligning the rows by content finds rows whose rowid moved and carries fewer
    /// rows, the lists keyed by rowid with the runs instead. `moved` is nil when the lists are those of
    /// format 1 (a table without a key whose rows kept their rowids), else the rows moved.
    func writeMatchedByContent(_ shape: SeedDelta.TableShape, index: Int, _ db: Database) throws -> Lists {
        guard case .success(let byRowid) = try SeedDelta.TableShape.read(shape.name, withoutRowid: false, in: Self.new, db, byRowid: true) else {
            throw DatabaseError(resultCode: .SQLITE_ERROR, message: "table \(shape.name) has no rowid a delta can key its rows by")
        }
        let rowLists = [Names.List.deleted, .updated, .inserted]
        var written: [Names.List: Int] = [:]
        for list in rowLists { written[list] = try writeList(list, of: byRowid, index: index, whole: false, db) }
        let sameRowid: Int? = byRowid.key == shape.key ? nil : 0
        guard written.values.contains(where: { $0 > 0 }) else { return (written, sameRowid) }

        let old = try digests(of: byRowid, in: Self.old, db)
        let new = try digests(of: byRowid, in: Self.new, db)
        let pairs = RowAlignment.pairs(old: old.digests, new: new.digests)
        let runs = RowAlignment.runs(of: pairs, oldRowids: old.rowids, newRowids: new.rowids)
        let paired = pairs.count
        // Rows carried each way: by rowid, the three lists; by content, every row not paired, the pairs that differ, the runs.
        let changed = pairs.filter { !$0.same }.count
        let byContent = (old.rowids.count - paired) + changed + (new.rowids.count - paired) + runs.count
        guard !runs.isEmpty, runs.count <= Self.maxRuns,
              byContent < written.values.reduce(0, +) else { return (written, sameRowid) }

        for list in rowLists where written[list] ?? 0 > 0 {
            try db.execute(sql: "DROP TABLE main.\(Names.table(index, list).quotedIdentifier)")
        }
        try db.execute(sql: "CREATE TEMP TABLE reseed_pairs (o INTEGER PRIMARY KEY, n INTEGER NOT NULL UNIQUE)")
        defer { try? db.execute(sql: "DROP TABLE temp.reseed_pairs") }
        let insertPair = try db.makeStatement(sql: "INSERT INTO temp.reseed_pairs (o, n) VALUES (?, ?)")
        for pair in pairs { try insertPair.execute(arguments: [old.rowids[pair.old], new.rowids[pair.new]]) }

        let table = byRowid.name.quotedIdentifier
        let rowid = byRowid.key[0].quotedIdentifier
        let selects: [Names.List: String] = [
            .deleted: "SELECT o.\(rowid) FROM \(Self.old).\(table) AS o WHERE o.\(rowid) NOT IN (SELECT o FROM temp.reseed_pairs) ORDER BY o.\(rowid)",
            .updated: Self.updatedRows(
                of: byRowid, keys: ["p.o"],
                from: "temp.reseed_pairs AS p JOIN \(Self.old).\(table) AS o ON o.\(rowid) = p.o JOIN \(Self.new).\(table) AS n ON n.\(rowid) = p.n",
                order: "p.o"),
            .inserted: "SELECT \(([byRowid.key[0]] + byRowid.values).quotedList(qualifier: "n")) FROM \(Self.new).\(table) AS n WHERE n.\(rowid) NOT IN (SELECT n FROM temp.reseed_pairs) ORDER BY n.\(rowid)",
        ]
        for list in rowLists {
            written[list] = try writeList(list, index: index, columns: Names.columns(of: list, keys: 1, values: byRowid.values.count), rows: selects[list] ?? "", db)
        }
        let moves = "main." + Names.table(index, .moved).quotedIdentifier
        try db.execute(sql: "CREATE TABLE \(moves) (\(Names.columns(of: .moved, keys: 1, values: 0).joined(separator: ", ")))")
        let insertRun = try db.makeStatement(sql: "INSERT INTO \(moves) VALUES (?, ?, ?)")
        for run in runs { try insertRun.execute(arguments: [run.source, run.count, run.target]) }
        return (written, runs.reduce(0) { $0 + Int($1.count) })
    }

    /// The rowids of the table in `schema`, ascending, and the digest of each row's stored values.
    private func digests(of shape: SeedDelta.TableShape, in schema: String, _ db: Database) throws -> (rowids: [Int64], digests: [RowAlignment.Digest]) {
        let rows = try RowAlignment.rows(of: "\(schema).\(shape.name.quotedIdentifier)", rowid: shape.key[0].quotedIdentifier, columns: shape.values, db)
        return (rows.rowids, rows.digests)
    }
}
