import Foundation
import GRDB
@testable import Reseed
import ReseedPackaging
import ReseedTestSupport
import Testing

/// Forged deltas for seeds with external-content FTS indexes: a delta built between two random
/// releases, then its index tables' row lists, its counts or its table order changed as a signing key's
/// holder could. Whatever a check accepts must be the new seed: its content hash, and an index that
/// answers every `MATCH` as the new seed's does.
@Suite struct SeedDeltaFullTextFuzzTests {
    /// The row lists a forgery may touch: an index table's rows are never matched by content, so it has no list of moves.
    static let rowLists: [SeedDelta.Names.List] = [.deleted, .updated, .inserted]

    static let words = ["rain", "snow", "sun", "wind", "sea", "river", "forged"]
    static let schema = """
        CREATE TABLE article(id INTEGER PRIMARY KEY, headline TEXT NOT NULL, text TEXT, stars INTEGER);
        CREATE VIRTUAL TABLE article_fts USING fts5(headline, text, content = 'article', content_rowid = 'id');
        CREATE VIRTUAL TABLE article_fts4 USING fts4(text, content="article")
        """
    static let indexes = ["article_fts", "article_fts4"]

    static func text(_ random: inout SplitMix64) -> String {
        (0..<random.int(1..<4)).map { _ in random.pick(words.dropLast()) }.joined(separator: " ")
    }

    /// What every index of the database at `path` answers: each word's `MATCH` (rowids and text, or the
    /// error), and each index's entries (see ``SeedDeltaFullTextTests/indexEntries(_:in:)``).
    static func answers(_ path: String) throws -> [String] {
        var answers: [String] = []
        for index in indexes {
            answers += try SeedDeltaFullTextTests.indexEntries(index, in: path)
            for word in words {
                let query = "SELECT rowid, text FROM \(index) WHERE \(index) MATCH '\(word)' ORDER BY rowid"
                do {
                    answers += try AdoptionCorpusTests.answers(query, in: URL(fileURLWithPath: path)).map { "\(index) \(word): \($0)" }
                } catch {
                    answers.append("\(index) \(word): \(error)")
                }
            }
        }
        return answers
    }

    /// Changes the delta at `path` the way `kind` says, at random.
    static func forge(_ path: String, _ kind: Int, _ random: inout SplitMix64) throws {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        try queue.write { db in
            let tables = try Row.fetchAll(db, sql: "SELECT idx, name FROM reseed_delta_tables ORDER BY idx").map { (index: $0["idx"] as Int, name: $0["name"] as String) }
            guard let target = tables.filter({ indexes.contains($0.name) }).randomElement(using: &random) ?? tables.first else { return }
            let list = random.pick(Self.rowLists)
            let name = SeedDelta.Names.table(target.index, list)
            func ensureList() throws {
                if try !db.tableExists(name) { try db.execute(sql: "CREATE TABLE \(name) (k1)") }
            }
            switch kind {
            case 0:
                // Values for the index's rows, in the format that carries them.
                for list in [SeedDelta.Names.List.updated, .inserted] {
                    let name = SeedDelta.Names.table(target.index, list)
                    guard try db.tableExists(name) else { continue }
                    let values = target.name == "article_fts" ? 2 : 1
                    try db.execute(sql: "ALTER TABLE \(name) RENAME TO forged_keys")
                    try db.execute(sql: "CREATE TABLE \(name) (\(SeedDelta.Names.columns(of: list, keys: 1, values: values).joined(separator: ", ")))")
                    let changed = list == .updated ? ["'\(String(repeating: "1", count: values))'"] : []
                    let forged = (0..<values).map { _ in "'\(random.pick(words))'" }
                    try db.execute(sql: "INSERT INTO \(name) SELECT \((["k1"] + changed + forged).joined(separator: ", ")) FROM forged_keys")
                    try db.execute(sql: "DROP TABLE forged_keys")
                }
            case 1:
                // A rowid more, of a row that may or may not exist.
                try ensureList()
                try db.execute(sql: "INSERT INTO \(name) (k1) VALUES (?)", arguments: [random.int(1..<16)])
            case 2:
                // A rowid less.
                if try db.tableExists(name) { try db.execute(sql: "DELETE FROM \(name) WHERE rowid IN (SELECT rowid FROM \(name) ORDER BY random() LIMIT 1)") }
            case 3:
                // A rowid moved to another list.
                let other = SeedDelta.Names.table(target.index, random.pick(Self.rowLists))
                if try db.tableExists(name) && db.tableExists(other) && db.columns(in: other).count == 1 {
                    try db.execute(sql: "INSERT INTO \(other) (k1) SELECT k1 FROM \(name) LIMIT 1")
                    try db.execute(sql: "DELETE FROM \(name) WHERE rowid IN (SELECT rowid FROM \(name) LIMIT 1)")
                }
            case 4:
                // The index table left out.
                for list in Self.rowLists { try db.execute(sql: "DROP TABLE IF EXISTS \(SeedDelta.Names.table(target.index, list))") }
                try db.execute(sql: "DELETE FROM reseed_delta_tables WHERE idx = ?", arguments: [target.index])
                return
            case 5:
                // The content table applied before its indexes: two tables swap their places.
                guard tables.count >= 2 else { return }
                let (a, b) = (tables[0].index, tables[1].index)
                for list in Self.rowLists {
                    let (nameA, nameB) = (SeedDelta.Names.table(a, list), SeedDelta.Names.table(b, list))
                    if try db.tableExists(nameA) { try db.execute(sql: "ALTER TABLE \(nameA) RENAME TO swapped") }
                    if try db.tableExists(nameB) { try db.execute(sql: "ALTER TABLE \(nameB) RENAME TO \(nameA)") }
                    if try db.tableExists("swapped") { try db.execute(sql: "ALTER TABLE swapped RENAME TO \(nameB)") }
                }
                try db.execute(sql: """
                    UPDATE reseed_delta_tables SET name = CASE idx WHEN ?1 THEN ?3 ELSE ?4 END,
                      (deleted, updated, inserted) = (SELECT deleted, updated, inserted FROM reseed_delta_tables AS o WHERE o.idx = CASE reseed_delta_tables.idx WHEN ?1 THEN ?2 ELSE ?1 END)
                    WHERE idx IN (?1, ?2)
                    """, arguments: [a, b, "swap-\(tables[1].name)", "swap-\(tables[0].name)"])
                try db.execute(sql: "UPDATE reseed_delta_tables SET name = substr(name, 6) WHERE name LIKE 'swap-%'")
                return
            default:
                // Another count in the header.
                try db.execute(sql: "UPDATE reseed_delta_tables SET \(list.rawValue) = \(list.rawValue) + ? WHERE idx = ?", arguments: [random.pick([-1, 1]), target.index])
                return
            }
            // Mostly, the header's counts follow the lists, so that only what the lists say is forged.
            if random.chance(0.8) {
                for list in Self.rowLists {
                    let name = SeedDelta.Names.table(target.index, list)
                    let count = try db.tableExists(name) ? Int.fetchOne(db, sql: "SELECT count(*) FROM \(name)") ?? 0 : 0
                    try db.execute(sql: "UPDATE reseed_delta_tables SET \(list.rawValue) = ? WHERE idx = ?", arguments: [count, target.index])
                }
            }
        }
    }

    @Test func noCheckAcceptsAForgedDeltaThatLeavesAnotherIndex() throws {
        let sandbox = try TemporaryDirectory(prefix: "reseed-fulltext-fuzz")
        var random = SplitMix64(seed: 0xF75)
        var failures = FuzzFailures()
        var accepted = 0
        var refused = 0
        for round in 0..<12 {
            let old = sandbox.appending("old-\(round).sqlite").path
            let new = sandbox.appending("new-\(round).sqlite").path
            let delta = sandbox.appending("delta-\(round)").path
            // A few rows (the index rebuilt whole) or a few of many (re-indexed row by row).
            let filler = random.chance(0.5) ? 40 : 0
            var rows: [Int: (String, String, Int)] = [:]
            for id in 1...random.int(1..<9) { rows[id] = (Self.text(&random), Self.text(&random), random.int(0..<5)) }
            var next = rows
            for id in rows.keys.sorted() {
                switch random.int(0..<5) {
                case 0: next[id] = nil
                case 1: next[id]?.1 = Self.text(&random)
                case 2: next[id]?.2 += 1
                default: break
                }
            }
            for id in 9..<(9 + random.int(0..<3)) { next[id] = (Self.text(&random), Self.text(&random), 0) }
            for (path, release) in [(old, rows), (new, next)] {
                let values = release.keys.sorted().map { id in "(\(id), '\(release[id]!.0)', '\(release[id]!.1)', \(release[id]!.2))" }
                let fill = filler > 0 ? "WITH RECURSIVE n(i) AS (SELECT 100 UNION ALL SELECT i + 1 FROM n WHERE i < \(99 + filler)) INSERT INTO article SELECT i, 'filler', 'still water', 0 FROM n;" : ""
                try DeltaSandbox.write(path, Self.schema + ";" + fill + (values.isEmpty ? "" : "INSERT INTO article VALUES \(values.joined(separator: ", "));")
                    + "INSERT INTO article_fts(article_fts) VALUES ('rebuild'); INSERT INTO article_fts4(article_fts4) VALUES ('rebuild')")
            }
            guard case .built(let built) = try SeedDeltaBuilder.build(from: old, to: new, into: delta) else {
                failures.check(false, "round \(round): no delta was built")
                continue
            }
            let expected = try Self.answers(new)
            let hashes: (from: String?, installed: String?, expected: String) =
                (nil, try IncrementalContentHash.compute(path: old).hash, try IncrementalContentHash.compute(path: new).hash)
            for attempt in 0..<4 {
                let forged = sandbox.appending("forged-\(round)-\(attempt)").path
                let target = sandbox.appending("target-\(round)-\(attempt).sqlite").path
                try FileManager.default.copyItem(atPath: delta, toPath: forged)
                let kinds = (0..<random.int(1..<3)).map { _ in random.int(0..<7) }
                for kind in kinds { try Self.forge(forged, kind, &random) }
                for incremental in [true, false] {
                    try? FileManager.default.removeItem(atPath: target)
                    try FileManager.default.copyItem(atPath: old, toPath: target)
                    do {
                        _ = try SeedDelta.apply(deltaPath: forged, to: target, expectedContentHash: built.toContentHash, incremental: incremental ? hashes : nil)
                    } catch {
                        refused += 1
                        continue
                    }
                    accepted += 1
                    let label = "round \(round), forgeries \(kinds), \(incremental ? "incremental" : "whole") check"
                    failures.check(try SeedContentHash.compute(path: target) == built.toContentHash, "\(label): another content hash")
                    let reached = try Self.answers(target)
                    failures.check(reached == expected, "\(label): \(Set(reached).symmetricDifference(expected).sorted().prefix(4))")
                }
            }
        }
        #expect(failures.count == 0, "\(failures.summary)")
        // Both outcomes happen: the forgeries are neither all harmless nor all refused.
        #expect(accepted > 10 && refused > 10, "\(accepted) accepted, \(refused) refused")
    }
}
