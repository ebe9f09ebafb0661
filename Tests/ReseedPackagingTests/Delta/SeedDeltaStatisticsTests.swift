import Foundation
import GRDB
@testable import Reseed
import ReseedPackaging
import ReseedTestSupport
import Testing

/// A delta carries the new seed's ANALYZE statistics and AUTOINCREMENT counters, so a store updated
/// by a delta plans its queries as a fresh install of the new seed does.
@Suite struct SeedDeltaStatisticsTests {
    static let schema = """
        CREATE TABLE place (id INTEGER PRIMARY KEY, a INTEGER, b INTEGER);
        CREATE INDEX place_a ON place (a); CREATE INDEX place_b ON place (b);
        CREATE TABLE grid (id INTEGER PRIMARY KEY, x TEXT); CREATE INDEX grid_x ON grid (x);
        CREATE TABLE log (id INTEGER PRIMARY KEY AUTOINCREMENT, msg TEXT)
        """
    /// `grid` gains a column: it is shipped whole, and SQLite drops its statistics with it.
    static let newSchema = schema.replacingOccurrences(of: "x TEXT)", with: "x TEXT, y TEXT)")
    static let places = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200) INSERT INTO place SELECT i, i % 5, i % 7 FROM n"
    /// ANALYZE, then statistics as a release states them (as `reseed init` carries them): `selective` is the index they call selective.
    static func statistics(selective: String) -> String {
        let other = selective == "place_a" ? "place_b" : "place_a"
        return "ANALYZE; DELETE FROM sqlite_stat1 WHERE tbl = 'place'; INSERT INTO sqlite_stat1 VALUES ('place', '\(selective)', '1000 1'), ('place', '\(other)', '1000 500')"
    }
    static let oldRows = places + "; INSERT INTO grid VALUES (1, 'p'), (2, 'q'), (3, 'q'); INSERT INTO log (msg) VALUES ('a'), ('b'), ('c'); " + statistics(selective: "place_a")
    /// A changed row in each table; `log` counts to 5 and keeps 3 rows, so its counter is not its largest key.
    static let newRows = places + "; UPDATE place SET b = 99 WHERE id = 7; INSERT INTO grid VALUES (1, 'p', 'r'), (2, 'q', NULL), (3, 'q', NULL);"
        + " INSERT INTO log (msg) VALUES ('a'), ('B'), ('c'), ('d'), ('e'); DELETE FROM log WHERE id > 3; " + statistics(selective: "place_b")
    static let query = "SELECT id FROM place WHERE a = 1 AND b = 1"

    /// `sqlite_stat1` and `sqlite_sequence` of the database at `path`, row by row with their rowids; nil for a table it lacks.
    static func statistics(_ path: String) throws -> [String: [[DatabaseValue]]] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            var tables: [String: [[DatabaseValue]]] = [:]
            for table in ["sqlite_stat1", "sqlite_stat4", "sqlite_sequence"] where try db.tableExists(table) {
                tables[table] = try Row.fetchAll(db, sql: "SELECT rowid, * FROM \(table) ORDER BY rowid").map { Array($0.databaseValues) }
            }
            return tables
        }
    }

    /// EXPLAIN QUERY PLAN of `sql` on a fresh connection to `path` (SQLite reads the statistics when it opens).
    static func plan(_ sql: String, on path: String) throws -> [String] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { try Row.fetchAll($0, sql: "EXPLAIN QUERY PLAN \(sql)").map { $0["detail"] ?? "" } }
    }

    @Test func aDeltaLeavesTheNewSeedsStatisticsAndCountersAndItsQueryPlans() throws {
        let sandbox = try DeltaSandbox(schema: Self.schema, old: Self.oldRows, new: Self.newRows, newSchema: Self.newSchema)
        let built = try #require(try sandbox.roundTrip())
        #expect(built.tables.contains { $0.name == "grid" && $0.carries == .wholeTable })
        let expected = try Self.statistics(sandbox.new)
        #expect(expected["sqlite_stat1"]?.contains { $0[1] == "grid".databaseValue } == true)
        #expect(expected["sqlite_sequence"] == [[1.databaseValue, "log".databaseValue, 5.databaseValue]])
        #expect(try Self.statistics(sandbox.target) == expected)
        // The statistics decide the plan: the old seed's pick the other index.
        let fresh = try Self.plan(Self.query, on: sandbox.new)
        #expect(try Self.plan(Self.query, on: sandbox.old) != fresh)
        #expect(try Self.plan(Self.query, on: sandbox.target) == fresh)
    }

    @Test func statisticsTheNewSeedLacksAreGoneAfterTheDelta() throws {
        let sandbox = try DeltaSandbox(schema: Self.schema, old: Self.oldRows, new: Self.places + "; UPDATE place SET b = 99 WHERE id = 7")
        _ = try #require(try sandbox.roundTrip())
        #expect(try Self.statistics(sandbox.new)["sqlite_stat1"] == nil)
        #expect(try Self.statistics(sandbox.target) == (try Self.statistics(sandbox.new)))
    }

    @Test func aStoreWhoseStatisticsAreStaleGetsTheNewSeedsWhole() throws {
        let sandbox = try DeltaSandbox(schema: Self.schema, old: Self.oldRows, new: Self.newRows, newSchema: Self.newSchema)
        guard case .built(let built) = try sandbox.build() else { Issue.record("no delta"); return }
        // As an app that ignored the statistics left it: none at all, and another counter.
        try sandbox.copyOld()
        try sandbox.execute(sandbox.target, "DROP TABLE sqlite_stat1; UPDATE sqlite_sequence SET seq = 1000")
        _ = try SeedDelta.apply(deltaPath: sandbox.delta, to: sandbox.target, expectedContentHash: built.toContentHash)
        #expect(try Self.statistics(sandbox.target) == (try Self.statistics(sandbox.new)))
    }

    @Test func aDeltaWithoutStatisticsLeavesTheStoresAsTheyWere() throws {
        let sandbox = try DeltaSandbox(schema: Self.schema, old: Self.oldRows, new: Self.newRows, newSchema: Self.newSchema)
        guard case .built(let built) = try sandbox.build() else { Issue.record("no delta"); return }
        // As a builder before statistics travelled wrote it.
        try sandbox.execute(sandbox.delta, """
            DELETE FROM reseed_delta WHERE key = 'statistics'; DROP TABLE IF EXISTS reseed_delta_stat1;
            DROP TABLE IF EXISTS reseed_delta_stat4; DROP TABLE IF EXISTS reseed_delta_sequence
            """)
        try sandbox.copyOld()
        let before = try Self.statistics(sandbox.target)
        _ = try SeedDelta.apply(deltaPath: sandbox.delta, to: sandbox.target, expectedContentHash: built.toContentHash)
        #expect(try sandbox.hash(sandbox.target) == built.toContentHash)
        let after = try Self.statistics(sandbox.target)
        #expect(after["sqlite_stat1"]?.contains { $0[1] == "grid".databaseValue } == false)
        #expect(after["sqlite_stat1"]?.filter { $0[1] == "place".databaseValue } == before["sqlite_stat1"]?.filter { $0[1] == "place".databaseValue })
    }

    /// A `sqlite_stat4` as a SQLite built with `SQLITE_ENABLE_STAT4` leaves it (this one may lack it:
    /// the table is renamed into place, as no statement may create it by name).
    static func stat4(_ samples: String) -> String {
        """
        ; CREATE TABLE s4 (tbl, idx, neq, nlt, ndlt, sample); INSERT INTO s4 VALUES \(samples);
        PRAGMA writable_schema = ON;
        UPDATE sqlite_schema SET name = 'sqlite_stat4', tbl_name = 'sqlite_stat4', sql = 'CREATE TABLE sqlite_stat4(tbl,idx,neq,nlt,ndlt,sample)' WHERE name = 's4';
        PRAGMA writable_schema = OFF
        """
    }

    @Test func stat4SamplesAreTheNewSeedsWhereTheStoreHasTheTable() throws {
        let sandbox = try DeltaSandbox(
            schema: Self.schema, old: Self.oldRows + Self.stat4("('place', 'place_a', '40 1', '0 0', '0 0', x'0201')"),
            new: Self.newRows + Self.stat4("('place', 'place_b', '30 1', '5 5', '1 1', x'0203'), ('place', 'place_b', '30 1', '9 9', '2 2', x'0207')"),
            newSchema: Self.newSchema)
        _ = try #require(try sandbox.roundTrip())
        let expected = try Self.statistics(sandbox.new)
        #expect(expected["sqlite_stat4"]?.count == 2)
        #expect(try Self.statistics(sandbox.target) == expected)
    }

    /// `reseed_delta_stat1` again, its `n` without a type.
    static let untyped = """
        CREATE TABLE bad (n, tbl, idx, stat); INSERT INTO bad SELECT * FROM reseed_delta_stat1;
        DROP TABLE reseed_delta_stat1; ALTER TABLE bad RENAME TO reseed_delta_stat1;
        """

    @Test func malformedStatisticsAreRefusedWithoutTouchingTheSeed() throws {
        let sandbox = try DeltaSandbox(schema: Self.schema, old: Self.oldRows, new: Self.newRows, newSchema: Self.newSchema)
        guard case .built(let built) = try sandbox.build() else { Issue.record("no delta"); return }
        let pristine = try Data(contentsOf: URL(fileURLWithPath: sandbox.delta))
        let damages = [
            "ALTER TABLE reseed_delta_stat1 ADD COLUMN extra",
            "UPDATE reseed_delta SET value = 2 WHERE key = 'statistics'",
            Self.untyped + " UPDATE reseed_delta_stat1 SET n = 'x' WHERE rowid = (SELECT min(rowid) FROM reseed_delta_stat1)",
            Self.untyped + " INSERT INTO reseed_delta_stat1 SELECT * FROM reseed_delta_stat1 LIMIT 1",
        ]
        for damage in damages {
            try pristine.write(to: URL(fileURLWithPath: sandbox.delta))
            try sandbox.execute(sandbox.delta, damage)
            try sandbox.copyOld()
            let before = try Self.statistics(sandbox.target)
            let error = #expect(throws: ReseedError.self, "\(damage)") {
                try SeedDelta.apply(deltaPath: sandbox.delta, to: sandbox.target, expectedContentHash: built.toContentHash)
            }
            #expect(error?.code == .invalidDelta, "\(damage): \(String(describing: error))")
            #expect(try sandbox.hash(sandbox.target) == built.fromContentHash, "\(damage)")
            #expect(try Self.statistics(sandbox.target) == before, "\(damage)")
        }
    }
}
