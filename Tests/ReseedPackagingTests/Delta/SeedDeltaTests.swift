import Foundation
import GRDB
@testable import Reseed
import ReseedPackaging
import ReseedTestSupport
import Testing

/// Two seeds written from SQL, the delta between them, and its application to a copy of the old one.
final class DeltaSandbox: Sendable {
    let directory: TemporaryDirectory
    var old: String { directory.appending("old.sqlite").path }
    var new: String { directory.appending("new.sqlite").path }
    var delta: String { directory.appending("seed.delta").path }
    var target: String { directory.appending("target.sqlite").path }

    /// Writes the old seed from `schema` + `oldRows` and the new one from `schema` + `newRows` (`newSchema` when given).
    init(schema: String, old oldRows: String, new newRows: String, newSchema: String? = nil) throws {
        directory = try TemporaryDirectory(prefix: "reseed-delta")
        try Self.write(old, schema + ";" + oldRows)
        try Self.write(new, (newSchema ?? schema) + ";" + newRows)
    }

    static func write(_ path: String, _ sql: String) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA journal_mode = DELETE")
            try db.inTransaction { try db.execute(sql: sql); return .commit }
        }
        try queue.close()
    }

    func build() throws -> SeedDeltaBuilder.Outcome {
        try? FileManager.default.removeItem(atPath: delta)
        return try SeedDeltaBuilder.build(from: old, to: new, into: delta)
    }

    /// A fresh copy of the old seed at ``target``.
    func copyOld() throws {
        try? FileManager.default.removeItem(atPath: target)
        try FileManager.default.copyItem(atPath: old, toPath: target)
    }

    func hash(_ path: String) throws -> String { try SeedContentHash.compute(path: path) }

    /// Builds the delta, checks it was built, applies it to a copy of the old seed and returns the counts.
    func roundTrip(sourceLocation: SourceLocation = #_sourceLocation) throws -> SeedDeltaBuilder.Built? {
        guard case .built(let built) = try build() else {
            Issue.record("no delta was built", sourceLocation: sourceLocation)
            return nil
        }
        try copyOld()
        let applied = try SeedDelta.apply(deltaPath: delta, to: target, expectedContentHash: built.toContentHash)
        #expect(applied.contentHash == (try hash(new)), sourceLocation: sourceLocation)
        #expect(try hash(target) == (try hash(new)), sourceLocation: sourceLocation)
        #expect(built.fromContentHash == (try hash(old)), sourceLocation: sourceLocation)
        // Again as an app applies it: the result checked from the rows the delta changed.
        try copyOld()
        let expected = try IncrementalContentHash.compute(path: new).hash
        let incremental = try SeedDelta.apply(
            deltaPath: delta, to: target, expectedContentHash: built.toContentHash,
            incremental: (from: nil, installed: try IncrementalContentHash.compute(path: old).hash, expected: expected))
        #expect(incremental.incrementalContentHash == expected, sourceLocation: sourceLocation)
        #expect(try hash(target) == (try hash(new)), sourceLocation: sourceLocation)
        return built
    }

    /// Applies the delta, damaged by each statement in turn, to a fresh copy of the old seed (and again with the
    /// incremental check when asked): each is refused as invalid, as not fitting or as unverified, and leaves the copy as it was.
    /// `refusedAs` are the codes accepted: by default a delta refused before its result is checked.
    func expectEachDamageRefused(
        _ damages: [String], built: SeedDeltaBuilder.Built, incrementally: Bool = false,
        refusedAs codes: [ReseedError.Code] = [.invalidDelta, .deltaMismatch], sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let pristine = try Data(contentsOf: URL(fileURLWithPath: delta))
        let incremental: (from: String?, installed: String?, expected: String) =
            (nil, try IncrementalContentHash.compute(path: old).hash, try IncrementalContentHash.compute(path: new).hash)
        for damage in damages {
            try pristine.write(to: URL(fileURLWithPath: delta))
            try execute(delta, damage)
            for check in incrementally ? [nil, incremental] : [nil] {
                try copyOld()
                let error = #expect(throws: ReseedError.self, "\(damage)", sourceLocation: sourceLocation) {
                    try SeedDelta.apply(deltaPath: delta, to: target, expectedContentHash: built.toContentHash, incremental: check)
                }
                #expect(error.map { codes.contains($0.code) } == true, "\(damage): \(String(describing: error))", sourceLocation: sourceLocation)
                #expect(try hash(target) == built.fromContentHash, "\(damage)", sourceLocation: sourceLocation)
            }
        }
        try pristine.write(to: URL(fileURLWithPath: delta))
    }

    func execute(_ path: String, _ sql: String) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.write { try $0.execute(sql: sql) }
        try queue.close()
    }
}

@Suite struct SeedDeltaTests {
    func counts(_ built: SeedDeltaBuilder.Built?) -> [String: [Int]] {
        Dictionary(uniqueKeysWithValues: (built?.tables ?? []).map { ($0.name, [$0.deleted, $0.updated, $0.inserted]) })
    }

    @Test func mixedDeletesUpdatesAndInsertsRoundTrip() throws {
        let sandbox = try DeltaSandbox(
            schema: "CREATE TABLE song (id INTEGER PRIMARY KEY, title TEXT NOT NULL, year INTEGER, cover BLOB); CREATE INDEX song_year ON song (year)",
            old: "INSERT INTO song VALUES (1, 'One', 1990, NULL), (2, 'Two', 1991, x'00ff'), (3, 'Three', NULL, x''), (4, 'Four', 1994, NULL)",
            new: "INSERT INTO song VALUES (1, 'One', 1990, NULL), (2, 'Two', NULL, x'00fe'), (4, 'Four!', 1994, NULL), (5, 'Five', 1995, x'01')")
        let built = try sandbox.roundTrip()
        #expect(counts(built) == ["song": [1, 2, 1]])
    }

    /// A target vouched for by the content hash it holds (a seed built by `reseed package` records
    /// no incremental hash): the delta's own starting row set, signed with it, starts the incremental
    /// check when the delta starts from that content hash, and never when it starts elsewhere.
    @Test func theContentHashATargetHoldsVouchesForTheDeltasStartingRowSet() throws {
        let sandbox = try DeltaSandbox(
            schema: "CREATE TABLE song (id INTEGER PRIMARY KEY, title TEXT, plays INTEGER)",
            old: "INSERT INTO song VALUES (1, 'One', 5), (2, 'Two', 7), (3, 'Three', 0)",
            new: "INSERT INTO song VALUES (1, 'One', 6), (3, 'Three', 0), (4, 'Four', 1)")
        guard case .built(let built) = try sandbox.build() else {
            Issue.record("no delta was built")
            return
        }
        let expected = try IncrementalContentHash.compute(path: sandbox.new).hash
        for (from, incrementally) in [(built.fromContentHash, true), (try sandbox.hash(sandbox.new), false)] {
            try sandbox.copyOld()
            let applied = try SeedDelta.apply(deltaPath: sandbox.delta, to: sandbox.target, expectedContentHash: built.toContentHash,
                                              incremental: (from: from, installed: nil, expected: expected))
            #expect(applied.incrementalContentHash == (incrementally ? expected : nil), "from \(from)")
            #expect(try sandbox.hash(sandbox.target) == (try sandbox.hash(sandbox.new)))
        }
    }

    @Test func storageClassOnlyChangesRoundTrip() throws {
        let sandbox = try DeltaSandbox(
            schema: "CREATE TABLE t (k TEXT PRIMARY KEY, v)",
            old: "INSERT INTO t VALUES ('a', 1), ('b', 1.0), ('c', '1'), ('d', x'31'), ('e', NULL)",
            new: "INSERT INTO t VALUES ('a', 1.0), ('b', '1'), ('c', x'31'), ('d', 1), ('e', NULL)")
        #expect(counts(try sandbox.roundTrip()) == ["t": [0, 4, 0]])
    }

    @Test func caseOnlyChangeUnderNoCaseRoundTrips() throws {
        let sandbox = try DeltaSandbox(
            schema: "CREATE TABLE t (k TEXT COLLATE NOCASE PRIMARY KEY, v TEXT COLLATE NOCASE); CREATE INDEX t_v ON t (v)",
            old: "INSERT INTO t VALUES ('A', 'x'), ('b', 'Same'), ('c', 'y')",
            new: "INSERT INTO t VALUES ('a', 'x'), ('b', 'SAME'), ('c', 'y')")
        // 'A' → 'a' is another key: a delete and an insert; 'Same' → 'SAME' an update.
        #expect(counts(try sandbox.roundTrip()) == ["t": [1, 1, 1]])
    }

    @Test func keylessRowidTableRoundTrips() throws {
        let sandbox = try DeltaSandbox(
            schema: "CREATE TABLE log (line TEXT, n)",
            old: "INSERT INTO log (rowid, line, n) VALUES (1, 'a', 1), (2, 'b', NULL), (5, 'c', 3), (9, 'same', 0)",
            new: "INSERT INTO log (rowid, line, n) VALUES (1, 'a', 1), (2, 'b', 2), (6, 'c', 3), (9, 'same', 0)")
        // Matched by content: ('c', 3) only moved from rowid 5 to 6, and ('b', …) changed in place.
        #expect(counts(try sandbox.roundTrip()) == ["log": [0, 1, 0]])
    }

    @Test func withoutRowidCompositeKeyRoundTrips() throws {
        let sandbox = try DeltaSandbox(
            schema: "CREATE TABLE pair (a TEXT, b INTEGER, v, w, PRIMARY KEY (b, a)) WITHOUT ROWID",
            old: "INSERT INTO pair VALUES ('x', 1, 'p', 1), ('x', 2, 'q', 2), ('y', 1, 'r', 3)",
            new: "INSERT INTO pair VALUES ('x', 1, 'p', 10), ('y', 1, 'r', 3), ('y', 2, NULL, NULL)")
        let built = try sandbox.roundTrip()
        #expect(counts(built) == ["pair": [1, 1, 1]])
    }

    @Test func userVersionAndApplicationIDChangesRoundTrip() throws {
        let sandbox = try DeltaSandbox(
            schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, v)",
            old: "PRAGMA user_version = 3; INSERT INTO t VALUES (1, 'a')",
            new: "PRAGMA user_version = 4; PRAGMA application_id = 77; INSERT INTO t VALUES (1, 'a')")
        #expect(try sandbox.roundTrip()?.tables == [])
        let queue = try DatabaseQueue(path: sandbox.target)
        #expect(try queue.read { try Int.fetchOne($0, sql: "PRAGMA user_version") } == 4)
        #expect(try queue.read { try Int.fetchOne($0, sql: "PRAGMA application_id") } == 77)
    }

    @Test func sameContentGivesAnEmptyDelta() throws {
        let rows = "INSERT INTO t VALUES (1, 'a'), (2, 'b')"
        let sandbox = try DeltaSandbox(schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, v)", old: rows, new: rows)
        let built = try sandbox.roundTrip()
        #expect(built?.tables == [])
        #expect(built?.fromContentHash == built?.toContentHash)
    }

    @Test func tableEmptiedAndTableFilledRoundTrip() throws {
        let sandbox = try DeltaSandbox(
            schema: "CREATE TABLE gone (id INTEGER PRIMARY KEY, v); CREATE TABLE fresh (k TEXT PRIMARY KEY, v)",
            old: "INSERT INTO gone VALUES (1, 'a'), (2, 'b')",
            new: "INSERT INTO fresh VALUES ('x', 1), ('y', 2), ('z', 3)")
        #expect(counts(try sandbox.roundTrip()) == ["fresh": [0, 0, 3], "gone": [2, 0, 0]])
    }

    @Test func triggersDoNotFireWhileApplying() throws {
        let schema = """
            CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT); CREATE TABLE audit (id INTEGER PRIMARY KEY, what TEXT);
            CREATE TRIGGER item_added AFTER INSERT ON item BEGIN INSERT INTO audit (what) VALUES ('added ' || new.name); END
            """
        let sandbox = try DeltaSandbox(schema: schema, old: "INSERT INTO item VALUES (1, 'a')", new: "INSERT INTO item VALUES (1, 'a'), (2, 'b')")
        // The new seed's audit rows came from its trigger; the delta carries them as rows, once.
        #expect(counts(try sandbox.roundTrip()) == ["audit": [0, 0, 1], "item": [0, 0, 1]])
    }

    @Test func nullInAPrimaryKeyMatchesRowsByRowid() throws {
        let sandbox = try DeltaSandbox(
            schema: "CREATE TABLE t (k TEXT PRIMARY KEY, v)", old: "INSERT INTO t VALUES (NULL, 'a')", new: "INSERT INTO t VALUES (NULL, 'b')")
        let built = try sandbox.roundTrip()
        #expect(counts(built) == ["t": [0, 1, 0]])
        #expect(built?.format == 3)
    }

    @Test func existingDeltaFileIsRefused() throws {
        let sandbox = try DeltaSandbox(schema: "CREATE TABLE t (id INTEGER PRIMARY KEY)", old: "", new: "")
        try Data("keep".utf8).write(to: URL(fileURLWithPath: sandbox.delta))
        let error = #expect(throws: PackagingError.self) { try SeedDeltaBuilder.build(from: sandbox.old, to: sandbox.new, into: sandbox.delta) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.step == .buildDelta)
        #expect(error?.path == sandbox.delta)
        #expect(try Data(contentsOf: URL(fileURLWithPath: sandbox.delta)) == Data("keep".utf8))
    }

    @Test func sameSeedsGiveByteIdenticalDeltas() throws {
        let sandbox = try DeltaSandbox(
            schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, v)",
            old: "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')", new: "INSERT INTO t VALUES (1, 'A'), (3, 'c'), (4, 'd')")
        _ = try sandbox.build()
        let first = try Data(contentsOf: URL(fileURLWithPath: sandbox.delta))
        _ = try sandbox.build()
        #expect(try Data(contentsOf: URL(fileURLWithPath: sandbox.delta)) == first)
    }

    /// An update that changes only columns no index covers leaves the index's pages as they were:
    /// SQLite rewrites the entry of every index on a column a `SET` names, even to the same value,
    /// so the apply names only the columns a row's `changed` mask marks. Three masks (body, rank,
    /// both), applied in one pass and in progress chunks.
    @Test func updatesLeaveThePagesOfIndexesOnColumnsTheyDoNotChange() throws {
        let rows = """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)
            INSERT INTO item SELECT i, 'label ' || i, 'body ' || i, i FROM n
            """
        let sandbox = try DeltaSandbox(
            schema: "CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT NOT NULL, body TEXT NOT NULL, rank INTEGER NOT NULL); CREATE INDEX item_label ON item (label)",
            old: rows, new: rows + "; UPDATE item SET body = body || ' changed' WHERE id % 7 = 0; UPDATE item SET rank = rank + 1 WHERE id % 11 = 0")
        guard case .built(let built) = try sandbox.build() else { Issue.record("no delta"); return }
        #expect(counts(built)["item"] == [0, 714 + 454 - 64, 0])
        let queue = try DatabaseQueue(path: sandbox.old)
        let (pageSize, indexPages) = try queue.read { db in
            (try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 0, try Int.fetchAll(db, sql: "SELECT pageno FROM dbstat WHERE name = 'item_label'"))
        }
        try queue.close()
        #expect(indexPages.count > 10)
        for chunked in [false, true] {
            try sandbox.copyOld()
            _ = try SeedDelta.apply(deltaPath: sandbox.delta, to: sandbox.target, expectedContentHash: built.toContentHash,
                                    rowsApplied: chunked ? { _, _ in } : nil)
            #expect(try sandbox.hash(sandbox.target) == (try sandbox.hash(sandbox.new)))
            let old = try Data(contentsOf: URL(fileURLWithPath: sandbox.old)), result = try Data(contentsOf: URL(fileURLWithPath: sandbox.target))
            let rewritten = indexPages.filter { page in
                let range = (page - 1) * pageSize..<page * pageSize
                return old[range] != result[range]
            }
            #expect(rewritten.isEmpty, "chunked \(chunked): \(rewritten.count) of the index's \(indexPages.count) pages were written")
        }
    }

    /// Rows changing 63 different sets of columns, more than the apply makes a statement for each:
    /// one statement sets every column, to itself where a row's mask says unchanged; in one pass and
    /// in progress chunks, the result is the new seed's.
    @Test func updatesWithManyDifferentMasksRoundTrip() throws {
        let rows = """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 640)
            INSERT INTO wide SELECT i, i, i, i, i, i, i FROM n
            """
        // Row i changes column k when bit k of i % 64 is set: every non-empty subset of the six columns.
        let changes = (0..<6).map { "UPDATE wide SET c\($0) = c\($0) + 1000 WHERE (id % 64) & \(1 << $0) != 0" }.joined(separator: "; ")
        let sandbox = try DeltaSandbox(
            schema: "CREATE TABLE wide (id INTEGER PRIMARY KEY, c0, c1, c2, c3, c4, c5); CREATE INDEX wide_c0 ON wide (c0)",
            old: rows, new: rows + "; " + changes)
        let built = try #require(try sandbox.roundTrip())
        #expect(counts(built)["wide"] == [0, 630, 0])
        try sandbox.copyOld()
        _ = try SeedDelta.apply(deltaPath: sandbox.delta, to: sandbox.target, expectedContentHash: built.toContentHash, rowsApplied: { _, _ in })
        #expect(try sandbox.hash(sandbox.target) == (try sandbox.hash(sandbox.new)))
    }

    /// A store the app changed (one row) is not the delta's starting point: the apply fails and leaves it untouched.
    @Test func applyToAnotherContentThrowsAndRollsBack() throws {
        let sandbox = try DeltaSandbox(
            schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, v)",
            old: "INSERT INTO t VALUES (1, 'a'), (2, 'b')", new: "INSERT INTO t VALUES (1, 'a'), (2, 'B'), (3, 'c')")
        guard case .built(let built) = try sandbox.build() else { Issue.record("no delta"); return }
        // One value changed: every statement fits, only the content hash tells.
        try sandbox.copyOld()
        try sandbox.execute(sandbox.target, "UPDATE t SET v = 'changed' WHERE id = 1")
        let before = try Data(contentsOf: URL(fileURLWithPath: sandbox.target))
        let error = #expect(throws: ReseedError.self) {
            try SeedDelta.apply(deltaPath: sandbox.delta, to: sandbox.target, expectedContentHash: built.toContentHash)
        }
        #expect(error?.code == .verificationFailed)
        #expect(error?.message.contains(built.toContentHash) == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: sandbox.target)) == before)
        // A row the delta updates is gone: the update does not fit.
        try sandbox.copyOld()
        try sandbox.execute(sandbox.target, "DELETE FROM t WHERE id = 2")
        let mismatch = #expect(throws: ReseedError.self) {
            try SeedDelta.apply(deltaPath: sandbox.delta, to: sandbox.target, expectedContentHash: built.toContentHash)
        }
        #expect(mismatch?.code == .deltaMismatch)
        // A row the delta inserts is there already.
        try sandbox.copyOld()
        try sandbox.execute(sandbox.target, "INSERT INTO t VALUES (3, 'c')")
        let inserted = #expect(throws: ReseedError.self) {
            try SeedDelta.apply(deltaPath: sandbox.delta, to: sandbox.target, expectedContentHash: built.toContentHash)
        }
        #expect(inserted?.code == .deltaMismatch)
        #expect(try DatabaseQueue(path: sandbox.target).read { try String.fetchOne($0, sql: "SELECT v FROM t WHERE id = 2") } == "b")
    }

    @Test func tamperedDeltaFailsVerification() throws {
        let sandbox = try DeltaSandbox(
            schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, v)",
            old: "INSERT INTO t VALUES (1, 'a')", new: "INSERT INTO t VALUES (1, 'a'), (2, 'b')")
        guard case .built(let built) = try sandbox.build() else { Issue.record("no delta"); return }
        try sandbox.execute(sandbox.delta, "UPDATE reseed_delta_1_inserted SET v1 = 'evil'")
        try sandbox.copyOld()
        let before = try sandbox.hash(sandbox.target)
        let error = #expect(throws: ReseedError.self) {
            try SeedDelta.apply(deltaPath: sandbox.delta, to: sandbox.target, expectedContentHash: built.toContentHash)
        }
        #expect(error?.code == .verificationFailed)
        #expect(try sandbox.hash(sandbox.target) == before)
    }

    @Test func unknownFormatIsRefusedClearly() throws {
        let sandbox = try DeltaSandbox(
            schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, v)", old: "", new: "INSERT INTO t VALUES (1, 'a')")
        guard case .built(let built) = try sandbox.build() else { Issue.record("no delta"); return }
        try sandbox.execute(sandbox.delta, "UPDATE reseed_delta SET value = 5 WHERE key = 'format'")
        try sandbox.copyOld()
        let error = #expect(throws: ReseedError.self) {
            try SeedDelta.apply(deltaPath: sandbox.delta, to: sandbox.target, expectedContentHash: built.toContentHash)
        }
        #expect(error?.code == .invalidDelta)
        #expect(error?.message == "the delta has format 5; this Reseed reads formats 1, 2, 3 and 4 only")
        #expect(throws: ReseedError.self) { try SeedDelta.readHeader(path: sandbox.delta) }
    }

    @Test func malformedDeltasAreRefusedWithoutTouchingTheSeed() throws {
        let sandbox = try DeltaSandbox(
            schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, v)", old: "INSERT INTO t VALUES (1, 'a')", new: "INSERT INTO t VALUES (2, 'b')")
        guard case .built(let built) = try sandbox.build() else { Issue.record("no delta"); return }
        let damages = [
            "DROP TABLE reseed_delta_1_deleted",
            "ALTER TABLE reseed_delta_1_inserted ADD COLUMN v2",
            "INSERT INTO reseed_delta_1_inserted VALUES (3, 'c')",
            "UPDATE reseed_delta_tables SET name = 'missing'",
            "UPDATE reseed_delta SET value = 'short' WHERE key = 'fromContentHash'",
            "DELETE FROM reseed_delta WHERE key = 'userVersion'",
            "DROP TABLE reseed_delta",
        ]
        try sandbox.expectEachDamageRefused(damages, built: built)
        try Data("not a database at all, not even close to one".utf8).write(to: URL(fileURLWithPath: sandbox.delta))
        let garbage = #expect(throws: ReseedError.self) { try SeedDelta.readHeader(path: sandbox.delta) }
        #expect(garbage?.code == .invalidDelta)
    }
}
