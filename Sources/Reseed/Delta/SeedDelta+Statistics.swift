import Foundation
import GRDB
import ReseedSystem

extension SeedDelta {
    /// The most rows one statistics section may hold: far more than `ANALYZE` writes for a seed
    /// (a row per index in `sqlite_stat1`, a few dozen samples per index in `sqlite_stat4`).
    static let maxStatisticsRows = 1_000_000

    /// Makes `sqlite_stat1`, `sqlite_stat4` and `sqlite_sequence` of the target the new seed's, from the
    /// sections a delta carries (``Names/statistics``), inside the caller's transaction, after the rows.
    ///
    /// Whole, not row by row: they are small, SQLite rewrites them itself while the rows change (a
    /// dropped table takes its statistics along, an insert raises a counter), and so the result does
    /// not depend on the statistics the target had. Neither content hash covers them; this is their check:
    /// each section must have exactly its columns and integer rowids, and every row must land.
    struct StatisticsApplier {
        var db: Database
        var deltaPath: String

        private static let delta = Names.attached

        func run() throws {
            var carried: Set<String> = []
            for (_, section, columns) in Names.statistics where try exists(section, in: Self.delta) {
                try check(section, columns: columns)
                carried.insert(section)
            }
            // ANALYZE of a table without indexes writes no row: it creates sqlite_stat1 (and sqlite_stat4 where
            // this SQLite has it), which no statement may create by name.
            var missing = false
            for (table, section, _) in Names.statistics where table.hasPrefix("sqlite_stat") && carried.contains(section) {
                if try !exists(table, in: "main") { missing = true }
            }
            if missing { try db.execute(sql: "ANALYZE main.sqlite_schema") }
            for (table, section, columns) in Names.statistics {
                let target = "main.\(table)"
                guard try exists(table, in: "main") else {
                    // sqlite_stat4 where this SQLite lacks it (it neither creates nor reads one), sqlite_sequence
                    // without an AUTOINCREMENT table (none reads it): nothing to set.
                    continue
                }
                guard carried.contains(section) else {
                    // SQLite never drops sqlite_sequence; the statistics a new seed lacks go with their table.
                    try db.execute(sql: table == "sqlite_sequence" ? "DELETE FROM \(target)" : "DROP TABLE \(target)")
                    continue
                }
                try db.execute(sql: "DELETE FROM \(target)")
                let source = "\(Self.delta).\(section)"
                let list = columns.joined(separator: ", ")
                let inserted: Int
                do {
                    try db.execute(sql: "INSERT INTO \(target) (rowid, \(list)) SELECT n, \(list) FROM \(source) ORDER BY n")
                    inserted = db.changesCount
                } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT || error.resultCode == .SQLITE_MISMATCH {
                    throw invalid("SQLite refused a row of its \(section) (\(error.message ?? "constraint failed"))")
                }
                let rows = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(source)") ?? -1
                guard inserted == rows else {
                    throw invalid("its \(section) holds \(rows) rows, of which \(inserted) were written")
                }
            }
        }

        /// A section must be a table of exactly `n` and the columns of its SQLite table, `n` an integer, not too many rows.
        private func check(_ section: String, columns: [String]) throws {
            let listed = try String.fetchOne(db, sql: "SELECT type FROM pragma_table_list WHERE schema = ? AND name = ?", arguments: [Self.delta, section])
            let found = try String.fetchAll(db, sql: "SELECT name FROM pragma_table_xinfo(?, ?)", arguments: [section, Self.delta])
            guard listed == "table", found == ["n"] + columns else {
                throw invalid("its \(section) has columns (\(found.prefix(8).joined(separator: ", "))), not (\((["n"] + columns).joined(separator: ", ")))")
            }
            let source = "\(Self.delta).\(section)"
            let rows = try Int.fetchOne(db, sql: "SELECT count(*) FROM (SELECT 1 FROM \(source) LIMIT \(maxStatisticsRows + 1))") ?? 0
            guard rows <= maxStatisticsRows else { throw invalid("its \(section) holds more than \(maxStatisticsRows) rows") }
            let malformed = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(source) WHERE typeof(n) <> 'integer'") ?? 0
            guard malformed == 0 else { throw invalid("\(malformed) row(s) of its \(section) have no integer n") }
        }

        private func exists(_ table: String, in schema: String) throws -> Bool {
            try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM \(schema).sqlite_schema WHERE type = 'table' AND name = ?", arguments: [table]) ?? false
        }

        private func invalid(_ detail: String) -> ReseedError {
            ReseedError(.invalidDelta, step: .applyDelta, path: deltaPath, message: "the delta's statistics are malformed: \(detail)")
        }
    }
}
