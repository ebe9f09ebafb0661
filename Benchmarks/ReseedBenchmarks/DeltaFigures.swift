import Foundation
import GRDB
import Reseed
import ReseedPackaging

/// Figure 13: applying a row-level delta (the apply and the content hash in one transaction) with
/// progress reported (the row lists in chunks, a closure every 1,024 rows) versus without, on the
/// same `rows`-row seed and delta (a tenth of the rows updated, a twentieth deleted and as many
/// inserted), interleaved; the median of `rounds` for each.
func deltaProgress(workDirectory: URL, rows: Int, rounds: Int) throws {
    try FileManager.default.createDirectory(at: workDirectory, withIntermediateDirectories: true)
    let old = workDirectory.appendingPathComponent("old.sqlite").path
    let new = workDirectory.appendingPathComponent("new.sqlite").path
    let delta = workDirectory.appendingPathComponent("delta.sqlite").path
    for path in [old, new, delta] { try? FileManager.default.removeItem(atPath: path) }
    let make = try DatabaseQueue(path: old)
    try make.write { db in
        try db.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT NOT NULL, weight REAL)")
        try db.execute(sql: """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows))
            INSERT INTO item SELECT i, 'item ' || i || ' ' || hex(i * 2654435761 % 4294967291), i * 0.5 FROM n
            """)
    }
    try make.close()
    try FileManager.default.copyItem(atPath: old, toPath: new)
    let edit = try DatabaseQueue(path: new)
    try edit.write { db in
        try db.execute(sql: "UPDATE item SET label = label || ' changed' WHERE id % 10 = 3")
        try db.execute(sql: "DELETE FROM item WHERE id % 20 = 7")
        try db.execute(sql: "INSERT INTO item SELECT id + \(rows), 'new ' || id, NULL FROM item WHERE id % 20 = 8")
    }
    try edit.close()
    guard case .built(let built) = try SeedDeltaBuilder.build(from: old, to: new, into: delta) else {
        throw NSError(domain: "ReseedBenchmarks", code: 1, userInfo: [NSLocalizedDescriptionKey: "no delta between the two seeds"])
    }
    let listed = built.tables.reduce(0) { $0 + $1.deleted + $1.updated + $1.inserted }
    let target = workDirectory.appendingPathComponent("target.sqlite").path
    var plain: [Double] = [], reporting: [Double] = []
    var calls = 0
    for _ in 0..<rounds {
        for withProgress in [false, true] {
            for path in [target, target + "-journal", target + "-wal", target + "-shm"] { try? FileManager.default.removeItem(atPath: path) }
            try FileManager.default.copyItem(atPath: old, toPath: target)
            var count = 0
            let seconds = try time {
                if withProgress {
                    _ = try SeedDelta.apply(deltaPath: delta, to: target, expectedContentHash: built.toContentHash,
                                            rowsApplied: { _, _ in count += 1 }, rowsHashed: { _, _ in count += 1 })
                } else {
                    _ = try SeedDelta.apply(deltaPath: delta, to: target, expectedContentHash: built.toContentHash)
                }
            }
            if withProgress { reporting.append(seconds); calls = count } else { plain.append(seconds) }
        }
    }
    let ratio = median(reporting) / median(plain)
    print("{\"withProgress\": \(median(reporting)), \"without\": \(median(plain)), \"ratio\": \(ratio), \"rows\": \(rows), \"deltaRows\": \(listed), \"progressCalls\": \(calls), \"rounds\": \(rounds)}")
}
