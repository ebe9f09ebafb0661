import Foundation
import GRDB
import ReseedSystem

extension SeedDelta.DeltaApplier {
    /// Rows that keep their order and take new rowids: the old rowids `source`…`source+count-1` become
    /// `target`…`target+count-1` (one row of a list of moves, format 3).
    struct Run: Equatable {
        var source: Int64
        var count: Int64
        var target: Int64
    }

    /// The most runs one table's list of moves may hold; a builder ships a table needing more whole.
    static let maxRuns = 1_000_000

    /// Applies the lists of a table keyed by rowid (format 3): deletes by old rowid, updates by old
    /// rowid, then the moves, then inserts with their new rowids, so the table ends with the new seed's
    /// rowids exactly. Its rows are read only from the table itself, so `rowSet` follows each step
    /// as it runs: the rows a step changes leave it before the step and join it after.
    func applyKeyedByRowid(
        _ table: SeedDelta.Header.Table, shape: SeedDelta.TableShape, rows: TableRows?, rowSet: inout RowSetAccumulator?, step: (Int) -> Void
    ) throws {
        func track(_ list: SeedDelta.Names.List, adding: Bool) throws {
            guard let rows, table.count(list) > 0 else { return }
            try self.track(list, of: table, shape: shape, rows: rows, into: &rowSet, adding: adding)
        }
        try track(.deleted, adding: false)
        if table.deleted > 0 { try apply(.deleted, of: table, shape: shape, step: step) }
        try track(.updated, adding: false)
        if table.updated > 0 { try apply(.updated, of: table, shape: shape, step: step) }
        try track(.updated, adding: true)
        if table.count(.moved) > 0 {
            let runs = try readRuns(of: table)
            // A move changes a row's element of the row set only where the content hash carries the rowid.
            let tracked = rows.flatMap { $0.hashesRowid ? $0 : nil }
            if let tracked { try trackRuns(of: table, shape: shape, rows: tracked, at: "source", into: &rowSet, adding: false) }
            try move(runs, of: table, shape: shape, step: step)
            if let tracked { try trackRuns(of: table, shape: shape, rows: tracked, at: "target", into: &rowSet, adding: true) }
        }
        if table.inserted > 0 { try apply(.inserted, of: table, shape: shape, step: step) }
        try track(.inserted, adding: true)
    }

    /// The runs of the table's list of moves, checked: integers, each moving at least one row to another
    /// rowid without overflow, no two moving the same rowid or to the same rowid, as many rows as the header says.
    func readRuns(of table: SeedDelta.Header.Table) throws -> [Run] {
        let source = "\(Self.delta).\(SeedDelta.Names.table(table.index, .moved).quotedIdentifier)"
        let cursor = try Row.fetchCursor(db, sql: "SELECT source, count, target FROM \(source) ORDER BY rowid LIMIT \(Self.maxRuns + 1)")
        var runs: [Run] = []
        var total: Int64 = 0
        while let row = try cursor.next() {
            guard runs.count < Self.maxRuns else { throw invalid("table \(table.name): its list of moves holds more than \(Self.maxRuns) runs") }
            guard case .int64(let from) = (row[0] as DatabaseValue).storage, case .int64(let count) = (row[1] as DatabaseValue).storage,
                  case .int64(let to) = (row[2] as DatabaseValue).storage, count >= 1, from != to,
                  !from.addingReportingOverflow(count - 1).overflow, !to.addingReportingOverflow(count - 1).overflow else {
                throw invalid("table \(table.name): a run of its list of moves is malformed")
            }
            let sum = total.addingReportingOverflow(count)
            guard !sum.overflow else { throw invalid("table \(table.name): its list of moves moves too many rows") }
            total = sum.partialValue
            runs.append(Run(source: from, count: count, target: to))
        }
        guard total == Int64(table.count(.moved)) else {
            throw invalid("table \(table.name): its list of moves moves \(total) rows; the header says \(table.count(.moved))")
        }
        for side in [\Run.source, \Run.target] {
            let sorted = runs.sorted { $0[keyPath: side] < $1[keyPath: side] }
            for (earlier, later) in zip(sorted, sorted.dropFirst()) where earlier[keyPath: side] + (earlier.count - 1) >= later[keyPath: side] {
                throw invalid("table \(table.name): two runs of its list of moves overlap")
            }
        }
        return runs
    }

    /// Gives each row of the runs its new rowid, one row at a time in an order where no row lands on
    /// one that has not moved yet: rows moving up from the highest, then rows moving down from the
    /// lowest. That holds when the moves keep the rows' order, as a builder's do; otherwise SQLite
    /// refuses a rowid that is taken and the delta does not fit.
    private func move(_ runs: [Run], of table: SeedDelta.Header.Table, shape: SeedDelta.TableShape, step: (Int) -> Void) throws {
        let rowid = shape.key[0].quotedIdentifier
        let statement = try db.makeStatement(sql: "UPDATE main.\(shape.name.quotedIdentifier) SET \(rowid) = ? WHERE \(rowid) = ?")
        let up = runs.filter { $0.target > $0.source }.sorted { $0.source > $1.source }
        let down = runs.filter { $0.target < $0.source }.sorted { $0.source < $1.source }
        for (run, offsets) in up.map({ ($0, stride(from: $0.count - 1, through: 0, by: -1)) }) + down.map({ ($0, stride(from: 0, through: $0.count - 1, by: 1)) }) {
            for offset in offsets {
                do {
                    try statement.execute(arguments: [run.target + offset, run.source + offset])
                } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                    throw mismatch(.moved, table, "rowid \(run.target + offset) is taken", error)
                }
                guard db.changesCount == 1 else {
                    throw mismatch(.moved, table, "the seed lacks the row of rowid \(run.source + offset) the delta moves", nil)
                }
            }
            step(Int(clamping: run.count))
        }
    }

    /// Removes from (or adds to) `rowSet` the rows of the runs at their old rowids (`side` `source`) or new ones (`target`);
    /// they must be as many as the runs move.
    private func trackRuns(
        of table: SeedDelta.Header.Table, shape: SeedDelta.TableShape, rows: TableRows, at side: String, into rowSet: inout RowSetAccumulator?, adding: Bool
    ) throws {
        let source = "\(Self.delta).\(SeedDelta.Names.table(table.index, .moved).quotedIdentifier)"
        // Every rowid of every run, from the checked runs: no overflow, no rowid twice.
        let rowids = """
            WITH RECURSIVE r(x, last) AS (SELECT \(side), \(side) + count - 1 FROM \(source) UNION ALL SELECT x + 1, last FROM r WHERE x < last) SELECT x FROM r
            """
        let count = try rows.forEachRow(rows.select(where: "\(shape.key[0].quotedIdentifier) IN (\(rowids))"), db) { statement, columns in
            if adding { try rowSet?.add(statement, columns, of: rows) } else { try rowSet?.remove(statement, columns, of: rows) }
        }
        guard count == Int64(table.count(.moved)) else {
            throw mismatch(.moved, table, "\(count) row(s) of the seed have the rowids of the \(table.count(.moved)) the delta moves", nil)
        }
    }
}
