import Foundation
import GRDB
@testable import Reseed
import ReseedPackaging
import ReseedTestSupport
import Testing

/// Random small seeds and random next releases, some with a schema change: the delta reproduces the new seed exactly, or is reported not expressible.
@Suite struct SeedDeltaFuzzTests {
    /// A random value of any storage class, including the ones that compare equal across classes.
    static func value(_ random: inout SplitMix64) -> DatabaseValue {
        switch random.int(0..<7) {
        case 0: return .null
        case 1: return Int64(random.int(-2..<3)).databaseValue
        case 2: return Double(random.int(-2..<3)).databaseValue
        case 3: return random.pick(["1", "a", "A", "", "é", "1.0"]).databaseValue
        case 4: return Data(random.pick([[0x31], [], [0, 255]])).databaseValue
        case 5: return (Double(random.int(0..<1000)) / 7).databaseValue
        default: return Int64(bitPattern: random.next()).databaseValue
        }
    }

    /// Key values: unique within a table, of a few storage classes.
    static func key(_ row: Int, _ random: inout SplitMix64) -> DatabaseValue {
        switch random.int(0..<3) {
        case 0: return Int64(row).databaseValue
        case 1: return "r\(row)".databaseValue
        default: return (row % 2 == 0 ? "K\(row)" : "k\(row)").databaseValue
        }
    }

    @Test func buildAndApplyReproduceTheNewSeedOrSayNotExpressible() throws {
        let sandbox = try TemporaryDirectory(prefix: "reseed-delta-fuzz")
        var random = SplitMix64(seed: 0xDE17A)
        var failures = FuzzFailures()
        var built = 0
        var schemaChanges = 0
        for round in 0..<40 {
            let oldPath = sandbox.appending("old-\(round).sqlite").path
            let newPath = sandbox.appending("new-\(round).sqlite").path
            let deltaPath = sandbox.appending("delta-\(round)").path
            let tables = (0..<random.int(1..<4)).map { index -> (name: String, create: String, keyed: Bool) in
                let types = ["", " INTEGER", " REAL", " TEXT", " BLOB", " NUMERIC", " TEXT COLLATE NOCASE"]
                let columns = (0..<random.int(1..<4)).map { "c\($0)\(random.pick(types))" }.joined(separator: ", ")
                switch random.int(0..<4) {
                case 0: return ("t\(index)", "CREATE TABLE t\(index) (id INTEGER PRIMARY KEY, \(columns))", true)
                // Not INTEGER alone: that key would be the rowid, which holds no text.
                case 1: return ("t\(index)", "CREATE TABLE t\(index) (k\(random.pick(types.filter { $0 != " INTEGER" })) PRIMARY KEY, \(columns))", true)
                case 2: return ("t\(index)", "CREATE TABLE t\(index) (k\(random.pick(types)), j, \(columns), PRIMARY KEY (j, k)) WITHOUT ROWID", true)
                default: return ("t\(index)", "CREATE TABLE t\(index) (\(columns))", false)
                }
            }
            let old = try DatabaseQueue(path: oldPath)
            try old.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA journal_mode = DELETE")
                for table in tables { try db.execute(sql: table.create) }
                for table in tables {
                    let columns = try db.columns(in: table.name).map(\.name)
                    for row in 0..<random.int(0..<12) {
                        let values = columns.map { name -> DatabaseValue in
                            name == "id" ? Int64(row).databaseValue : (name == "k" || name == "j") ? Self.key(row, &random) : Self.value(&random)
                        }
                        try db.execute(
                            sql: "INSERT OR IGNORE INTO \(table.name) (\(table.keyed ? "" : "rowid, ")\(columns.joined(separator: ", "))) VALUES (\(table.keyed ? "" : "\(row * 3), ")\(Array(repeating: "?", count: columns.count).joined(separator: ", ")))",
                            arguments: StatementArguments(values))
                    }
                }
            }
            try old.close()
            try FileManager.default.copyItem(atPath: oldPath, toPath: newPath)
            let schemaChange = random.chance(0.3)
            let new = try DatabaseQueue(path: newPath)
            try new.write { db in
                if schemaChange {
                    // One change of each kind a format-2 delta carries, picked at random.
                    switch random.int(0..<6) {
                    case 0: try db.execute(sql: "CREATE INDEX i0 ON t0 (c0)")
                    case 1: try db.execute(sql: "CREATE TABLE added (id INTEGER PRIMARY KEY, v); INSERT INTO added VALUES (1, 'a'), (2, x'00')")
                    case 2: try db.execute(sql: "DROP TABLE \(random.pick(tables).name)")
                    case 3: try db.execute(sql: "ALTER TABLE \(random.pick(tables).name) ADD COLUMN added DEFAULT 'd'")
                    case 4: try db.execute(sql: "CREATE VIEW v0 AS SELECT * FROM t0; CREATE TRIGGER g0 AFTER INSERT ON t0 BEGIN SELECT 1; END")
                    default: try db.execute(sql: "CREATE VIRTUAL TABLE ft USING fts5(body); INSERT INTO ft (rowid, body) VALUES (3, 'some text'), (9, 'more')")
                    }
                }
                if random.chance(0.3) { try db.execute(sql: "PRAGMA user_version = \(random.int(0..<5))") }
                for table in tables {
                    guard try db.tableExists(table.name) else { continue }
                    let columns = try db.columns(in: table.name).map(\.name).filter { $0.hasPrefix("c") }
                    // Deterministic picks (SQLite's random() has no seed): by a hash of the row's text.
                    try db.execute(sql: "DELETE FROM \(table.name) WHERE (length(quote(c0)) * 7 + unicode(quote(c0)) + ?) % 4 = 0", arguments: [random.int(0..<4)])
                    for column in columns where random.chance(0.5) {
                        try db.execute(sql: "UPDATE \(table.name) SET \(column) = ? WHERE (length(quote(c0)) + unicode(quote(c0)) + ?) % 3 = 0", arguments: [Self.value(&random), random.int(0..<3)])
                    }
                    let keyColumns = try db.columns(in: table.name).map(\.name).filter { !$0.hasPrefix("c") }
                    for row in 20..<(20 + random.int(0..<4)) {
                        let names = keyColumns + columns
                        let values = keyColumns.map { $0 == "id" ? Int64(row).databaseValue : Self.key(row, &random) } + columns.map { _ in Self.value(&random) }
                        try db.execute(
                            sql: "INSERT OR IGNORE INTO \(table.name) (\(table.keyed ? "" : "rowid, ")\(names.joined(separator: ", "))) VALUES (\(table.keyed ? "" : "\(row * 3), ")\(Array(repeating: "?", count: names.count).joined(separator: ", ")))",
                            arguments: StatementArguments(values))
                    }
                }
            }
            try new.close()

            switch try SeedDeltaBuilder.build(from: oldPath, to: newPath, into: deltaPath) {
            case .notExpressible(let reason):
                failures.check(reason.contains("does not reproduce"), "round \(round): not expressible: \(reason)")
            case .built(let delta):
                built += 1
                schemaChanges += schemaChange ? 1 : 0
                let target = sandbox.appending("target-\(round).sqlite").path
                try FileManager.default.copyItem(atPath: oldPath, toPath: target)
                let expected = try IncrementalContentHash.compute(path: newPath).hash
                let applied = try SeedDelta.apply(
                    deltaPath: deltaPath, to: target, expectedContentHash: delta.toContentHash,
                    incremental: (from: nil, installed: try IncrementalContentHash.compute(path: oldPath).hash, expected: expected))
                failures.check(applied.incrementalContentHash == expected, "round \(round): not checked incrementally")
                failures.check(try SeedContentHash.compute(path: target) == SeedContentHash.compute(path: newPath), "round \(round): applied ≠ new")
            }
        }
        #expect(failures.count == 0, "\(failures.summary)")
        #expect(built >= 30, "only \(built) of 40 rounds built a delta")
        #expect(schemaChanges >= 5, "only \(schemaChanges) deltas across a schema change")
    }
}
