import Foundation
import GRDB
import GRDBSQLite
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
            if let rows, rows.hashesRowid { try trackMoves(of: table, shape: shape, rows: rows, into: &rowSet) }
            try move(runs, of: table, shape: shape, step: step)
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

    /// The temp table that holds the rows of the runs while they move.
    static let movingRows = "temp.reseed_moving_rows"

    /// Gives each row of the runs its new rowid in a few statements a table, whatever the number of
    /// rows: the rows of each run are copied (with their new rowids) into a temp table and deleted,
    /// then inserted back in rowid order. One `UPDATE … SET rowid` a row costs a search, a delete and
    /// an insert in the table and in each index; this reads and appends. When at least two thirds of
    /// the table's rows move, the rows that stay go through the temp table too (with their rowids)
    /// and the table is emptied at once, which spares deleting each row from each index. The values
    /// stay as they were read: the temp table's columns have no type (no affinity), and the table's
    /// own affinity leaves a value it stored unchanged; CHECK constraints, which those values passed,
    /// are not evaluated again (`ignore_check_constraints`), and the content hash checks the result.
    ///
    /// The runs must keep the rows' order (as a builder's do) and each must move rows the seed has;
    /// a rowid a run moves onto that another row keeps is refused by SQLite, and the delta does not fit.
    private func move(_ runs: [Run], of table: SeedDelta.Header.Table, shape: SeedDelta.TableShape, step: (Int) -> Void) throws {
        let ordered = runs.sorted { $0.source < $1.source }
        for (earlier, later) in zip(ordered, ordered.dropFirst()) where earlier.target > later.target {
            throw mismatch(.moved, table, "its runs do not keep the rows' order", nil)
        }
        let rowid = shape.key[0].quotedIdentifier
        let target = "main.\(shape.name.quotedIdentifier)"
        let values = shape.values.quotedList()
        let columns = (0..<shape.values.count).map { "v\($0)" }
        let rows = try Int64.fetchOne(db, sql: "SELECT count(*) FROM \(target)") ?? 0
        let whole = 3 * Int64(table.count(.moved)) >= 2 * rows
        try db.execute(sql: "CREATE TEMP TABLE \(Self.movingRows) (moved_to INTEGER PRIMARY KEY\(columns.map { ", \($0)" }.joined()))")
        defer { try? db.execute(sql: "DROP TABLE IF EXISTS \(Self.movingRows)") }
        let copy = try db.makeStatement(sql: """
            INSERT INTO \(Self.movingRows) SELECT ?2 + (\(rowid) - ?1), \(values) FROM \(target) WHERE \(rowid) BETWEEN ?1 AND ?3
            """)
        let delete = try db.makeStatement(sql: "DELETE FROM \(target) WHERE \(rowid) BETWEEN ?1 AND ?2")
        var copied: Int64 = 0
        do {
            for run in ordered {
                let last = run.source + (run.count - 1)
                try copy.execute(arguments: [run.source, run.target, last])
                guard db.changesCount == run.count else {
                    throw mismatch(.moved, table, "the seed lacks rows of rowids \(run.source)…\(last) the delta moves", nil)
                }
                copied += run.count
                if !whole { try delete.execute(arguments: [run.source, last]) }
            }
            if whole {
                let stay = try db.makeStatement(sql: "INSERT INTO \(Self.movingRows) SELECT \(rowid), \(values) FROM \(target) WHERE \(rowid) BETWEEN ?1 AND ?2")
                for range in Self.unmoved(ordered) {
                    try stay.execute(arguments: [range.lowerBound, range.upperBound])
                    copied += Int64(db.changesCount)
                }
                try db.execute(sql: "DELETE FROM \(target)")
                guard Int64(db.changesCount) == copied else {
                    throw mismatch(.moved, table, "the table held \(db.changesCount) rows; \(copied) were set aside to move", nil)
                }
            }
            try db.execute(sql: "PRAGMA ignore_check_constraints = ON")
            defer { try? db.execute(sql: "PRAGMA ignore_check_constraints = OFF") }
            try db.execute(sql: """
                INSERT OR ABORT INTO \(target) (\(rowid), \(values)) SELECT moved_to, \(columns.joined(separator: ", ")) FROM \(Self.movingRows) ORDER BY moved_to
                """)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            throw mismatch(.moved, table, "a rowid it moves rows to is taken", error)
        }
        step(Int(clamping: table.count(.moved)))
    }

    /// The rowids no run moves, as closed ranges, from the runs sorted by their first old rowid (checked: no overlap, no overflow).
    static func unmoved(_ ordered: [Run]) -> [ClosedRange<Int64>] {
        var ranges: [ClosedRange<Int64>] = []
        var next: Int64? = .min
        for run in ordered {
            if let low = next, low < run.source { ranges.append(low...(run.source - 1)) }
            let last = run.source + (run.count - 1)
            next = last == .max ? nil : last + 1
        }
        if let low = next { ranges.append(low...Int64.max) }
        return ranges
    }

    /// Removes from `rowSet` the rows of the runs at their old rowids and adds them at their new ones,
    /// each row read once, before the move (which keeps its values); they must be as many as the runs move.
    private func trackMoves(
        of table: SeedDelta.Header.Table, shape: SeedDelta.TableShape, rows: TableRows, into rowSet: inout RowSetAccumulator?
    ) throws {
        let runs = "\(Self.delta).\(SeedDelta.Names.table(table.index, .moved).quotedIdentifier)"
        let rowid = "t.\(shape.key[0].quotedIdentifier)"
        // The row's columns as the content hash reads them, then the rowid its run moves it to: the offset in the run
        // (0 to count − 1) added to the run's target, which readRuns checked cannot overflow. Never the shift
        // target − source, which can: SQLite would compute it as a REAL and clamp it, and the check would follow the
        // row to another rowid than the move gives it.
        let sql = """
            SELECT \(rows.selected.map { "t.\($0)" }.joined(separator: ", ")), m.target + (\(rowid) - m.source)
            FROM \(runs) AS m CROSS JOIN main.\(shape.name.quotedIdentifier) AS t ON \(rowid) BETWEEN m.source AND m.source + (m.count - 1)
            """
        let prefix = RowEncoding.elementPrefix(of: rows)
        let count = try rows.forEachRow(sql, db) { statement, columns in
            rowSet?.move(statement, columns, of: rows, prefix: prefix, to: sqlite3_column_int64(statement, columns))
        }
        guard count == Int64(table.count(.moved)) else {
            throw mismatch(.moved, table, "\(count) row(s) of the seed have the rowids of the \(table.count(.moved)) the delta moves", nil)
        }
    }
}
