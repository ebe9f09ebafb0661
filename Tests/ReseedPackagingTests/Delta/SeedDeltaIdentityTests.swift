import Foundation
import GRDB
@testable import Reseed
import ReseedPackaging
import ReseedTestSupport
import Testing

/// Tables whose key does not identify their rows (no primary key, or one holding NULL): rows matched by
/// content, the new seed's rowids reproduced, rows that only shifted travelling as runs (format 3).
@Suite struct SeedDeltaIdentityTests {
    /// `INSERT INTO table (rowid, name, n) VALUES …` of `rows` (rowid, name), numbered from 1 unless given.
    static func insert(_ table: String, _ names: [String], rowids: [Int]? = nil) -> String {
        guard !names.isEmpty else { return "" }
        let values = names.enumerated().map { offset, name in "(\(rowids?[offset] ?? offset + 1), '\(name)', \(name.count))" }
        return "INSERT INTO \(table) (rowid, name, n) VALUES " + values.joined(separator: ", ")
    }

    /// The header's `moved` per table (nil: keyed by its key), the format, and the runs of each table keyed by rowid.
    static func keying(_ delta: String) throws -> (format: Int, moved: [String: Int?], runs: [String: Int]) {
        let queue = try DatabaseQueue(path: delta)
        defer { try? queue.close() }
        return try queue.read { db in
            let format = try Int.fetchOne(db, sql: "SELECT value FROM reseed_delta WHERE key = 'format'") ?? 0
            let hasMoved = try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM pragma_table_info('reseed_delta_tables') WHERE name = 'moved'") ?? false
            var moved: [String: Int?] = [:]
            var runs: [String: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT idx, name\(hasMoved ? ", moved" : ", NULL AS moved") FROM reseed_delta_tables") {
                let name: String = row["name"]
                let index: Int = row["idx"]
                moved[name] = row["moved"] as Int?
                if try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM sqlite_schema WHERE name = ?", arguments: ["reseed_delta_\(index)_moved"]) == true {
                    runs[name] = try Int.fetchOne(db, sql: "SELECT count(*) FROM reseed_delta_\(index)_moved")
                }
            }
            return (format, moved, runs)
        }
    }

    static func rows(_ path: String, _ sql: String) throws -> [[DatabaseValue]] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in try Row.fetchAll(db, sql: sql).map { Array($0.databaseValues) } }
    }

    func counts(_ built: SeedDeltaBuilder.Built?) -> [String: [Int]] {
        Dictionary(uniqueKeysWithValues: (built?.tables ?? []).map { ($0.name, [$0.deleted, $0.updated, $0.inserted, $0.moved]) })
    }

    @Test func insertsInTheMiddleOfAKeylessTableCostWhatTheyAdd() throws {
        let names = (1...300).map { "name\($0)" }
        var newNames = names
        newNames.insert("added-b", at: 200)
        newNames.insert("added-a", at: 100)
        newNames.remove(at: 50)  // name51
        newNames[250] = newNames[250] + "!"
        let schema = "CREATE TABLE alias (name TEXT NOT NULL, n INTEGER); CREATE INDEX alias_name ON alias (name)"
        let sandbox = try DeltaSandbox(schema: schema, old: Self.insert("alias", names), new: Self.insert("alias", newNames))
        let built = try sandbox.roundTrip()
        // One deleted, one changed in place, two inserted; the rows between the edits shifted, as runs.
        #expect(counts(built)["alias"]?[0...2] == [1, 1, 2])
        let keying = try Self.keying(sandbox.delta)
        #expect(keying.format == 3)
        // name52…name100 down one; name101…name200 stay; name201… (the changed one among them) up one.
        #expect(keying.runs["alias"] == 2)
        #expect(try Self.rows(sandbox.target, "SELECT rowid, * FROM alias ORDER BY rowid") == (try Self.rows(sandbox.new, "SELECT rowid, * FROM alias ORDER BY rowid")))
    }

    @Test func aKeylessTableWhoseRowsKeepTheirRowidsKeepsTheFirstFormat() throws {
        let names = (1...20).map { "n\($0)" }
        var newNames = names
        newNames[5] = "changed"
        let sandbox = try DeltaSandbox(
            schema: "CREATE TABLE t (name TEXT, n INTEGER)", old: Self.insert("t", names), new: Self.insert("t", newNames + ["tail"]))
        let built = try sandbox.roundTrip()
        #expect(counts(built) == ["t": [0, 1, 1, 0]])
        #expect(built?.format == 1)
        #expect(try Self.keying(sandbox.delta).moved == ["t": nil])
    }

    @Test func duplicateRowsCountAsAMultiset() throws {
        let unique = (1...20).map { "u\($0)" }
        let old = Array(unique[..<10]) + ["d", "d", "d"] + unique[10...]
        // One more copy of a duplicated row, and a row on top that shifts everything: two rows inserted.
        let more = ["top"] + unique[..<10] + ["d", "d", "d", "d"] + unique[10...]
        // One copy fewer, with the same shift: one row inserted, one deleted.
        let fewer = ["top"] + unique[..<10] + ["d", "d"] + unique[10...]
        for (new, carried) in [(more, [0, 0, 2]), (fewer, [1, 0, 1])] {
            let sandbox = try DeltaSandbox(schema: "CREATE TABLE t (name TEXT, n INTEGER)", old: Self.insert("t", old), new: Self.insert("t", new))
            let built = try sandbox.roundTrip()
            #expect(counts(built)["t"]?[0...2] == carried[...], "\(new)")
            #expect(try Self.rows(sandbox.target, "SELECT rowid, * FROM t ORDER BY rowid") == (try Self.rows(sandbox.new, "SELECT rowid, * FROM t ORDER BY rowid")))
        }
    }

    @Test func aDeclaredKeyHoldingNullMatchesRowsByContent() throws {
        // Like PROJ's usage: a two-column key that every row leaves NULL.
        let schema = """
            CREATE TABLE usage (auth_name TEXT, code TEXT, object TEXT NOT NULL, extent TEXT NOT NULL, CONSTRAINT pk PRIMARY KEY (auth_name, code));
            CREATE INDEX usage_object ON usage (object)
            """
        func rows(_ objects: [String]) -> String {
            "INSERT INTO usage (rowid, auth_name, code, object, extent) VALUES "
                + objects.enumerated().map { "(\($0.offset + 1), NULL, NULL, '\($0.element)', 'world')" }.joined(separator: ", ")
        }
        let objects = (1...120).map { "EPSG:\($0)" }
        var newObjects = objects
        newObjects.insert("EPSG:new", at: 40)
        newObjects.remove(at: 90)
        let sandbox = try DeltaSandbox(schema: schema, old: rows(objects), new: rows(newObjects) + "; UPDATE usage SET extent = 'europe' WHERE rowid = 100")
        let built = try sandbox.roundTrip()
        #expect(counts(built)["usage"]?[0...2] == [1, 1, 1])
        #expect(built?.format == 3)
        #expect(try Self.keying(sandbox.delta).moved["usage"] == .some(.some(counts(built)["usage"]?[3] ?? -1)))
        #expect(try Self.rows(sandbox.target, "SELECT rowid, * FROM usage ORDER BY rowid") == (try Self.rows(sandbox.new, "SELECT rowid, * FROM usage ORDER BY rowid")))
    }

    @Test func aTableThatCannotGoRowByRowTravelsWholeAndTheOthersStillGoRowByRow() throws {
        // Its key holds NULL and its columns hide the rowid: neither identifies its rows.
        let schema = """
            CREATE TABLE hidden (rowid TEXT, _rowid_ TEXT, oid TEXT, k TEXT PRIMARY KEY, v TEXT);
            CREATE INDEX hidden_v ON hidden (v);
            CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT)
            """
        let items = "INSERT INTO item VALUES " + (1...50).map { "(\($0), 'item \($0)')" }.joined(separator: ", ")
        let sandbox = try DeltaSandbox(
            schema: schema,
            old: items + "; INSERT INTO hidden VALUES ('a', 'b', 'c', NULL, 'one'), ('d', 'e', 'f', 'k', 'two')",
            new: items + "; UPDATE item SET name = 'renamed' WHERE id = 7; INSERT INTO hidden VALUES ('a', 'b', 'c', NULL, 'one'), ('g', 'h', 'i', NULL, 'three'), ('d', 'e', 'f', 'k', 'two')")
        let built = try sandbox.roundTrip()
        let hidden = built?.tables.first { $0.name == "hidden" }
        #expect(hidden?.carries == .wholeTable && hidden?.reason == .rowsNotMatchable && hidden?.inserted == 3)
        #expect(built?.tables.first { $0.name == "item" }.map { [$0.deleted, $0.updated, $0.inserted] } == [0, 1, 0])
        #expect(built?.schemaObjects.contains { $0.name == "hidden_v" && $0.change == .recreated } == true)
    }

    @Test func aTableWhoseRowsSQLiteRefusesRowByRowTravelsWhole() throws {
        // Two rows swap a UNIQUE value: updated one after the other, the first collides with the second.
        let schema = "CREATE TABLE code (id INTEGER PRIMARY KEY, code TEXT UNIQUE); CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT)"
        let sandbox = try DeltaSandbox(
            schema: schema,
            old: "INSERT INTO code VALUES (1, 'a'), (2, 'b'), (3, 'c'); INSERT INTO item VALUES (1, 'x'), (2, 'y')",
            new: "INSERT INTO code VALUES (1, 'b'), (2, 'a'), (3, 'c'); INSERT INTO item VALUES (1, 'x'), (2, 'z')")
        let built = try sandbox.roundTrip()
        let code = built?.tables.first { $0.name == "code" }
        #expect(code?.carries == .wholeTable && code?.reason == .rowsNotMatchable && code?.inserted == 3)
        #expect(built?.tables.first { $0.name == "item" }.map { [$0.deleted, $0.updated, $0.inserted] } == [0, 1, 0])
    }

    @Test func movesUpAndDownInOneDeltaNeverCollide() throws {
        // Rows leave the top (the rest shifts down), then rows arrive in the middle (what follows shifts up)
        // past where the shift down began, and a block moves far up past a gap.
        let names = (1...80).map { "r\($0)" }
        var newNames = Array(names.dropFirst(3))
        newNames.insert(contentsOf: ["m1", "m2", "m3", "m4", "m5"], at: 30)
        let rowids = Array(1...60) + Array(101...(100 + newNames.count - 60))
        let sandbox = try DeltaSandbox(
            schema: "CREATE TABLE t (name TEXT UNIQUE, n INTEGER)", old: Self.insert("t", names), new: Self.insert("t", newNames, rowids: rowids))
        let built = try sandbox.roundTrip()
        #expect(counts(built)["t"]?[0...2] == [3, 0, 5])
        #expect(try Self.keying(sandbox.delta).runs["t"] == 3)
        #expect(try Self.rows(sandbox.target, "SELECT rowid, * FROM t ORDER BY rowid") == (try Self.rows(sandbox.new, "SELECT rowid, * FROM t ORDER BY rowid")))
    }

    /// Rows arrive near the top (nearly every row moves: the whole table goes through the temp table) or near
    /// the end (a few rows move: only they do). Columns of each affinity hold values SQLite converts or keeps
    /// (text in INTEGER, 2.0 in INTEGER, 3 in REAL, '1.0' in NUMERIC, an integer in an untyped column), under a
    /// CHECK, a UNIQUE constraint and an index on two of them.
    @Test(arguments: [true, false]) func movedRowsKeepEveryValueTypeAndRowidTheSeedHeld(mostRowsMove: Bool) throws {
        let schema = """
            CREATE TABLE t (name TEXT NOT NULL CHECK (length(name) >= 2), n INTEGER, r REAL, num NUMERIC, b BLOB, plain, u TEXT UNIQUE);
            CREATE INDEX t_n ON t (n, num)
            """
        let values = ["'12', 3, '1.0', x'00ff', '7'", "' 12 ', 2.5, '1e3', 'text', 7", "2.0, NULL, 'x', 1.5, x''", "1.5, '4', 3, NULL, 2.0"]
        func rows(_ numbers: [Int]) -> String {
            "INSERT INTO t (name, n, r, num, b, plain, u) VALUES " + numbers.map { "('row\($0)', \(values[$0 % 4]), \($0))" }.joined(separator: ", ")
        }
        let old = Array(1...200)
        let new = mostRowsMove ? [1, 1001, 1002, 2] + Array(3...150) + [1003] + Array(151...199) : Array(1...185) + [1001, 1002] + Array(186...199) + [1003]
        let sandbox = try DeltaSandbox(schema: schema, old: rows(old), new: rows(new))
        let built = try sandbox.roundTrip()
        let moved = counts(built)["t"]?[3] ?? 0
        #expect(mostRowsMove ? moved > 150 : (1...20).contains(moved), "\(moved) rows moved")
        let everything = "SELECT rowid, name, n, typeof(n), r, typeof(r), num, typeof(num), b, typeof(b), plain, typeof(plain), u, typeof(u) FROM t ORDER BY rowid"
        #expect(try Self.rows(sandbox.target, everything) == (try Self.rows(sandbox.new, everything)))
        #expect(try Self.rows(sandbox.target, "PRAGMA integrity_check") == [["ok".databaseValue]])
    }

    @Test func anAppThatReadsFormatsOneAndTwoRefusesFormatThree() throws {
        let sandbox = try DeltaSandbox(
            schema: "CREATE TABLE t (name TEXT, n INTEGER)", old: Self.insert("t", ["a", "b", "c"]), new: Self.insert("t", ["z", "a", "b", "c"]))
        guard case .built(let built) = try sandbox.build() else { Issue.record("no delta"); return }
        #expect(built.format == 3)
        let queue = try DatabaseQueue(path: sandbox.delta)
        defer { try? queue.close() }
        let error = #expect(throws: ReseedError.self) {
            try queue.read { db in try SeedDelta.HeaderReader(db: db, schema: "main", path: sandbox.delta, readable: 1...2).read() }
        }
        #expect(error?.code == .invalidDelta)
        #expect(error?.message == "the delta has format 3; this Reseed reads formats 1 and 2 only")
    }

    @Test func forgedListsOfMovesAreRefusedWithTheSeedUnchanged() throws {
        let names = (1...12).map { "n\($0)" }
        let sandbox = try DeltaSandbox(
            schema: "CREATE TABLE t (name TEXT, n INTEGER)", old: Self.insert("t", names), new: Self.insert("t", ["new"] + names))
        guard case .built(let built) = try sandbox.build() else { Issue.record("no delta"); return }
        #expect(try Self.rows(sandbox.delta, "SELECT source, count, target FROM reseed_delta_1_moved") == [[1, 12, 2].map(\.databaseValue)])
        let damages = [
            "DROP TABLE reseed_delta_1_moved",
            "ALTER TABLE reseed_delta_1_moved ADD COLUMN extra",
            "UPDATE reseed_delta_1_moved SET count = 0",
            "UPDATE reseed_delta_1_moved SET count = 11",
            "UPDATE reseed_delta_1_moved SET count = '12'",
            "UPDATE reseed_delta_1_moved SET target = 1",
            "UPDATE reseed_delta_1_moved SET source = 9223372036854775800",
            "UPDATE reseed_delta_1_moved SET target = 9223372036854775800",
            "UPDATE reseed_delta_tables SET moved = 'twelve'",
            "UPDATE reseed_delta_tables SET moved = -1",
            "UPDATE reseed_delta_tables SET moved = 13",
            "ALTER TABLE reseed_delta_tables DROP COLUMN moved",
            "DROP TABLE reseed_delta_schema",
            // Overlapping runs; a run of rows the seed lacks; a run onto a row that stays.
            "UPDATE reseed_delta_1_moved SET count = 6; INSERT INTO reseed_delta_1_moved VALUES (5, 6, 20)",
            "UPDATE reseed_delta_1_moved SET source = 100",
            "UPDATE reseed_delta_1_moved SET count = 11; UPDATE reseed_delta_tables SET moved = 11, inserted = 2; INSERT INTO reseed_delta_1_inserted VALUES (13, 'n12', 3)",
            "INSERT INTO reseed_delta_1_moved SELECT source, count, target FROM reseed_delta_1_moved",
        ]
        try sandbox.expectEachDamageRefused(damages, built: built, incrementally: true)
        // A row arriving near the end: the three rows after it move, and only they go through the temp table.
        let few = try DeltaSandbox(
            schema: "CREATE TABLE t (name TEXT, n INTEGER)", old: Self.insert("t", names), new: Self.insert("t", Array(names[0..<9]) + ["new"] + names[9...]))
        guard case .built(let fewBuilt) = try few.build() else { Issue.record("no delta"); return }
        #expect(try Self.rows(few.delta, "SELECT source, count, target FROM reseed_delta_1_moved") == [[10, 3, 11].map(\.databaseValue)])
        try few.expectEachDamageRefused([
            "UPDATE reseed_delta_1_moved SET source = 100",
            "UPDATE reseed_delta_1_moved SET source = 11",
            "UPDATE reseed_delta_1_moved SET count = 2; INSERT INTO reseed_delta_1_moved VALUES (11, 1, 30)",
            // A run onto a row that stays; runs that swap rows.
            "UPDATE reseed_delta_1_moved SET count = 2; UPDATE reseed_delta_tables SET moved = 2, inserted = 2; INSERT INTO reseed_delta_1_inserted VALUES (13, 'n12', 3)",
            "UPDATE reseed_delta_1_moved SET count = 2, target = 12; INSERT INTO reseed_delta_1_moved VALUES (12, 1, 11)",
        ], built: fewBuilt, incrementally: true)
        // Runs that swap rows: the first row to move lands on one that has not moved yet.
        try sandbox.execute(sandbox.delta, "UPDATE reseed_delta_1_moved SET count = 11, target = 3; INSERT INTO reseed_delta_1_moved VALUES (12, 1, 2)")
        try sandbox.copyOld()
        let error = #expect(throws: ReseedError.self) {
            try SeedDelta.apply(deltaPath: sandbox.delta, to: sandbox.target, expectedContentHash: built.toContentHash)
        }
        #expect(error?.code == .deltaMismatch)
        #expect(try sandbox.hash(sandbox.target) == built.fromContentHash)
    }

    /// A run whose shift (target − source) overflows: the check must follow each row to the rowid the
    /// move gives it, never to a shift SQLite computed as a REAL and clamped.
    @Test func aRunWhoseShiftOverflowsIsFollowedToTheRowidItGives() throws {
        let sandbox = try DeltaSandbox(
            schema: "CREATE TABLE t (name TEXT, n INTEGER)",
            old: "INSERT INTO t (rowid, name, n) VALUES (-10, 'far', 1), (-9, 'next', 2)",
            new: "INSERT INTO t (rowid, name, n) VALUES (9223372036854775797, 'far', 1), (9223372036854775798, 'next', 2)")
        guard case .built(let built) = try sandbox.build() else { Issue.record("no delta"); return }
        #expect(try Self.rows(sandbox.delta, "SELECT source, count, target FROM reseed_delta_1_moved") == [[-10, 2, 9223372036854775797].map(\.databaseValue)])
        // The row lands 5 past where the new seed has it; a shift of Int64.max would put it where it belongs.
        // The moves are well formed: the result is what both checks refuse.
        try sandbox.expectEachDamageRefused(
            ["UPDATE reseed_delta_1_moved SET target = 9223372036854775802"], built: built, incrementally: true,
            refusedAs: [.verificationFailed])
    }

    @Test func aTableShapedLikeProjAliasesCostsWhatChanged() throws {
        // 4,000 aliases in the order an upstream SQL file lists them; the next release inserts 40 in 8 places and drops 4.
        let tables = ["geodetic_crs", "projected_crs", "vertical_crs", "ellipsoid"]
        func alias(_ n: Int) -> String {
            "('\(tables[n % 4])', 'EPSG', '\(4000 + n)', 'Alias number \(n) of a reference system', \(n % 3 == 0 ? "'OGP'" : "NULL"))"
        }
        var numbers = Array(0..<4000)
        for place in stride(from: 400, to: 4000, by: 450) { numbers.insert(contentsOf: (0..<5).map { 10_000 + place * 10 + $0 }, at: place) }
        for gone in [100, 1500, 2900, 3990] { numbers.removeAll { $0 == gone } }
        let schema = """
            CREATE TABLE alias_name (table_name TEXT NOT NULL CHECK (length(table_name) >= 1), auth_name TEXT NOT NULL, code TEXT NOT NULL,
              alt_name TEXT NOT NULL, source TEXT); CREATE INDEX idx_alias_name_code ON alias_name (code)
            """
        func rows(_ numbers: [Int]) -> String {
            "INSERT INTO alias_name (table_name, auth_name, code, alt_name, source) VALUES " + numbers.map(alias).joined(separator: ", ")
        }
        let sandbox = try DeltaSandbox(schema: schema, old: rows(Array(0..<4000)), new: rows(numbers))
        let built = try sandbox.roundTrip()
        #expect(counts(built)["alias_name"]?[0...2] == [4, 0, 40])
        // One run per stretch between two edits, not one updated row per shifted row.
        #expect((try Self.keying(sandbox.delta).runs["alias_name"] ?? 0) <= 13)
        // The same rows added at the end and removed, which moves no row: about the same size.
        let appended = try DeltaSandbox(
            schema: schema, old: rows(Array(0..<4000)), new: rows((0..<4000).filter { ![100, 1500, 2900, 3990].contains($0) } + numbers.filter { $0 >= 10_000 }))
        let atTheEnd = try appended.roundTrip()
        #expect(counts(atTheEnd)["alias_name"]?[0...2] == [4, 0, 40])
        #expect((built?.size ?? .max) <= (atTheEnd?.size ?? 0) + 2 * 4096, "\(String(describing: built?.size)) against \(String(describing: atTheEnd?.size))")
    }

    @Test func randomEditsOfTablesWithoutIdentityReproduceTheNewSeedExactly() throws {
        var random = SplitMix64(seed: 0x1D3A)
        var failures = FuzzFailures()
        var moved = 0
        for round in 0..<40 {
            // Rows drawn from a few values, so that duplicates are common; a key holding NULL in half the rounds.
            let pool = (0..<8).map { "'v\($0)'" } + ["NULL", "1", "1.0", "x'31'"]
            let nullKey = random.chance(0.5)
            var rows = (0..<random.int(0..<40)).map { _ in [random.pick(pool), random.pick(pool)] }
            let schema = nullKey
                ? "CREATE TABLE t (k TEXT, a, b, PRIMARY KEY (k)); CREATE INDEX t_a ON t (a)"
                : "CREATE TABLE t (a, b); CREATE INDEX t_a ON t (a)"
            func sql(_ rows: [[String]], gapsFrom gap: Int) -> String {
                guard !rows.isEmpty else { return "" }
                let values = rows.enumerated().map { offset, row in
                    "(\(offset + 1 + (offset >= gap ? 10 : 0)), \(nullKey ? "NULL, " : "")\(row.joined(separator: ", ")))"
                }
                return "INSERT INTO t (rowid, \(nullKey ? "k, " : "")a, b) VALUES " + values.joined(separator: ", ")
            }
            let old = sql(rows, gapsFrom: random.int(0..<50))
            for _ in 0..<random.int(0..<6) {
                switch random.int(0..<4) {
                case 0: rows.insert([random.pick(pool), random.pick(pool)], at: random.int(0..<(rows.count + 1)))
                case 1 where !rows.isEmpty: rows.remove(at: random.int(0..<rows.count))
                case 2 where !rows.isEmpty: rows[random.int(0..<rows.count)][random.int(0..<2)] = random.pick(pool)
                case 3 where !rows.isEmpty: rows.insert(rows[random.int(0..<rows.count)], at: random.int(0..<(rows.count + 1)))
                default: break
                }
            }
            let sandbox = try DeltaSandbox(schema: schema, old: old, new: sql(rows, gapsFrom: random.int(0..<50)))
            guard case .built(let built) = try sandbox.build() else {
                failures.check(false, "round \(round): no delta")
                continue
            }
            moved += built.tables.reduce(0) { $0 + $1.moved }
            for incremental in [false, true] {
                try sandbox.copyOld()
                _ = try SeedDelta.apply(
                    deltaPath: sandbox.delta, to: sandbox.target, expectedContentHash: built.toContentHash,
                    incremental: incremental
                        ? (from: nil, installed: try IncrementalContentHash.compute(path: sandbox.old).hash, expected: try IncrementalContentHash.compute(path: sandbox.new).hash)
                        : nil)
                let rowsWithRowids = "SELECT rowid, * FROM t ORDER BY rowid"
                failures.check(try Self.rows(sandbox.target, rowsWithRowids) == Self.rows(sandbox.new, rowsWithRowids), "round \(round): other rows or rowids")
            }
        }
        #expect(failures.count == 0, "\(failures.summary)")
        #expect(moved > 0, "no round moved a row")
    }
}
