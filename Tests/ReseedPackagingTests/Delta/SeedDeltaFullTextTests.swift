import Foundation
import GRDB
@testable import Reseed
import ReseedPackaging
import ReseedTestSupport
import Testing

/// External-content FTS tables in deltas: the text travels once, in the content table's rows, and
/// the device rebuilds the index entries of the rows that changed, so no delta can write them.
@Suite struct SeedDeltaFullTextTests {
    static let schema = """
        CREATE TABLE article(id INTEGER PRIMARY KEY, headline TEXT NOT NULL, text TEXT);
        CREATE VIRTUAL TABLE article_fts USING fts5(headline, text, content = 'article', content_rowid = 'id')
        """
    static let oldRows = """
        INSERT INTO article VALUES (1, 'Storm warning', 'heavy rain expected'), (2, 'Sunny days', 'no rain at all'),
          (3, 'Old news', 'to be deleted'), (4, 'Calm', 'quiet sea');
        INSERT INTO article_fts(article_fts) VALUES ('rebuild')
        """
    static let newRows = """
        INSERT INTO article VALUES (1, 'Storm warning', 'heavy rain expected'), (2, 'Sunny days', 'some rain after all'),
          (4, 'Calm', 'quiet sea'), (5, 'Fresh', 'new article text');
        INSERT INTO article_fts(article_fts) VALUES ('rebuild')
        """

    /// The incremental check of `delta` applied to a copy of `from` (whose hashes it was recorded with) that must become `to`.
    static func applyIncrementally(_ delta: String, from: String, to: String, target: String) throws -> SeedDelta.Applied {
        try SeedDelta.apply(
            deltaPath: delta, to: target, expectedContentHash: try SeedContentHash.compute(path: to),
            incremental: (from: nil, installed: try IncrementalContentHash.compute(path: from).hash, expected: try IncrementalContentHash.compute(path: to).hash))
    }

    /// Rewrites the row lists `lists` of table `table` of the delta at `path` in the format that carries
    /// values, every value set to `text`: what a delta built to write the index itself would carry.
    static func forgeValues(of table: String, lists: [SeedDelta.Names.List], to text: String, in path: String) throws {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        try queue.write { db in
            guard let index = try Int.fetchOne(db, sql: "SELECT idx FROM reseed_delta_tables WHERE name = ?", arguments: [table]) else { return }
            for list in lists {
                let name = SeedDelta.Names.table(index, list)
                guard try db.tableExists(name) else { continue }
                try db.execute(sql: "ALTER TABLE \(name) RENAME TO forged_keys")
                let columns = SeedDelta.Names.columns(of: list, keys: 1, values: 2)
                try db.execute(sql: "CREATE TABLE \(name) (\(columns.joined(separator: ", ")))")
                let values = list == .updated ? "'11', ?, ?" : "?, ?"
                try db.execute(sql: "INSERT INTO \(name) SELECT k1, \(values) FROM forged_keys ORDER BY k1", arguments: [text, text])
                try db.execute(sql: "DROP TABLE forged_keys")
            }
        }
    }

    @Test func aDeltaCannotWriteTheIndexEntriesOfAnExternalContentTable() throws {
        let sandbox = try DeltaSandbox(schema: Self.schema, old: Self.oldRows, new: Self.newRows)
        guard case .built = try sandbox.build() else {
            Issue.record("no delta was built")
            return
        }
        // Signed by the channel's key like any delta, but its index rows say "forged" where the content says otherwise.
        try Self.forgeValues(of: "article_fts", lists: [.updated, .inserted], to: "forged", in: sandbox.delta)
        try sandbox.copyOld()
        _ = try Self.applyIncrementally(sandbox.delta, from: sandbox.old, to: sandbox.new, target: sandbox.target)
        let target = URL(fileURLWithPath: sandbox.target)
        let new = URL(fileURLWithPath: sandbox.new)
        for word in ["forged", "rain", "after", "fresh", "deleted", "quiet"] {
            let query = "SELECT rowid, text FROM article_fts WHERE article_fts MATCH '\(word)' ORDER BY rowid"
            #expect(try AdoptionCorpusTests.answers(query, in: target) == AdoptionCorpusTests.answers(query, in: new), "\(word)")
        }
        // The next release removes a row the forged entries named: its terms are removed as the content
        // says they were, so entries the content never had would point at a row that is gone.
        let newer = sandbox.directory.appending("newer.sqlite").path
        let next = sandbox.directory.appending("next.delta").path
        try DeltaSandbox.write(newer, Self.schema + ";" + Self.newRows + "; DELETE FROM article WHERE id = 5; INSERT INTO article_fts(article_fts) VALUES ('rebuild')")
        guard case .built = try SeedDeltaBuilder.build(from: sandbox.new, to: newer, into: next) else {
            Issue.record("no next delta was built")
            return
        }
        _ = try Self.applyIncrementally(next, from: sandbox.new, to: newer, target: sandbox.target)
        do {
            #expect(try AdoptionCorpusTests.answers("SELECT rowid, text FROM article_fts WHERE article_fts MATCH 'forged OR fresh'", in: target).isEmpty)
        } catch {
            Issue.record("MATCH fails on the store the next delta made: \(error)")
        }
    }

    /// An external-content index and the rows of two releases of its content.
    struct Shape: CustomTestStringConvertible, Sendable {
        var testDescription: String
        var schema: String
        var index: String
        var old: String
        var new: String
        /// Rows `i` from 100 to 139 that neither release changes, for a delta that re-indexes a few rows of many.
        var filler: String

        /// The two releases, each with its index built, and `filler` in both when `many`.
        func sandbox(many: Bool) throws -> DeltaSandbox {
            let rows = (many ? "WITH RECURSIVE n(i) AS (SELECT 100 UNION ALL SELECT i + 1 FROM n WHERE i < 139) \(filler);" : "")
            let rebuild = "; INSERT INTO \(index)(\(index)) VALUES ('rebuild')"
            return try DeltaSandbox(schema: schema, old: rows + old + rebuild, new: rows + new + rebuild)
        }
    }

    static let articles = "INSERT INTO article SELECT i, 'Filler ' || i, 'unchanged text ' || i FROM n"

    static let shapes: [Shape] = [
        Shape(testDescription: "FTS5, content_rowid the content table's key", schema: schema, index: "article_fts", old: oldRows, new: newRows, filler: articles),
        Shape(testDescription: "FTS5 over a table without a declared key, and fewer columns than it", schema: """
            CREATE TABLE note(title, body, stars INTEGER);
            CREATE VIRTUAL TABLE note_fts USING fts5(body, content = 'note')
            """, index: "note_fts",
            old: "INSERT INTO note (rowid, title, body, stars) VALUES (3, 'a', 'river delta', 1), (7, 'b', 'mountain pass', 2), (9, 'c', 'open sea', 3)",
            new: "INSERT INTO note (rowid, title, body, stars) VALUES (3, 'a', 'river mouth', 1), (7, 'B', 'mountain pass', 5), (11, 'd', 'deep sea', 4)",
            filler: "INSERT INTO note (rowid, title, body, stars) SELECT i, 't', 'filler body ' || i, 0 FROM n"),
        Shape(testDescription: "FTS5, content_rowid a column that is not the content table's key", schema: """
            CREATE TABLE item(code TEXT PRIMARY KEY, n INTEGER NOT NULL UNIQUE, label TEXT);
            CREATE VIRTUAL TABLE item_fts USING fts5(label, content = 'item', content_rowid = 'n')
            """, index: "item_fts",
            old: "INSERT INTO item VALUES ('a', 1, 'red apple'), ('b', 2, 'green pear'), ('c', 3, 'yellow lemon')",
            new: "INSERT INTO item VALUES ('a', 1, 'red apple pie'), ('b', 20, 'green pear'), ('d', 4, 'blue plum')",
            filler: "INSERT INTO item SELECT 'f' || i, i, 'filler ' || i FROM n"),
        Shape(testDescription: "FTS5 over a view", schema: """
            CREATE TABLE article(id INTEGER PRIMARY KEY, headline TEXT NOT NULL, text TEXT);
            CREATE VIEW article_view AS SELECT id, headline, upper(text) AS text FROM article;
            CREATE VIRTUAL TABLE view_fts USING fts5(headline, text, content = 'article_view', content_rowid = 'id')
            """, index: "view_fts", old: oldRows.replacingOccurrences(of: "article_fts", with: "view_fts"),
            new: newRows.replacingOccurrences(of: "article_fts", with: "view_fts"), filler: articles),
        Shape(testDescription: "FTS4 content=", schema: """
            CREATE TABLE article(id INTEGER PRIMARY KEY, headline TEXT NOT NULL, text TEXT);
            CREATE VIRTUAL TABLE article_fts4 USING fts4(headline, text, content="article", tokenize=porter)
            """, index: "article_fts4", old: oldRows.replacingOccurrences(of: "article_fts", with: "article_fts4"),
            new: newRows.replacingOccurrences(of: "article_fts", with: "article_fts4"), filler: articles),
    ]

    /// Every entry of the index of FTS table `table` in the database at `path`: (term, rowid, column,
    /// offset) for FTS5; for FTS4, each term's documents and occurrences per column, and what its
    /// `integrity-check` (which compares the index with the content) says.
    static func indexEntries(_ table: String, in path: String) throws -> [String] {
        let copy = path + "-entries"
        try? FileManager.default.removeItem(atPath: copy)
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        defer { try? FileManager.default.removeItem(atPath: copy) }
        let queue = try DatabaseQueue(path: copy)
        defer { try? queue.close() }
        return try queue.writeWithoutTransaction { db in
            let sql = try String.fetchOne(db, sql: "SELECT sql FROM sqlite_schema WHERE name = ?", arguments: [table]) ?? ""
            if sql.lowercased().contains("fts5") {
                try db.execute(sql: "CREATE VIRTUAL TABLE temp.entries USING fts5vocab(main, '\(table)', 'instance')")
                return try String.fetchAll(db, sql: "SELECT term || ' ' || doc || ' ' || col || ' ' || offset FROM temp.entries ORDER BY term, doc, col, offset")
            }
            try db.execute(sql: "CREATE VIRTUAL TABLE temp.entries USING fts4aux(main, '\(table)')")
            var entries = try String.fetchAll(db, sql: "SELECT term || ' ' || col || ' ' || documents || ' ' || occurrences FROM temp.entries ORDER BY term, col")
            do {
                try db.execute(sql: "INSERT INTO \(table)(\(table)) VALUES ('integrity-check')")
            } catch let error as DatabaseError {
                entries.append("integrity-check: \(error.message ?? "failed")")
            }
            return entries
        }
    }

    /// The columns of each row list of table `table` in the delta at `path`.
    static func listColumns(of table: String, in path: String) throws -> [String: [String]] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            guard let index = try Int.fetchOne(db, sql: "SELECT idx FROM reseed_delta_tables WHERE name = ?", arguments: [table]) else { return [:] }
            var lists: [String: [String]] = [:]
            for list in SeedDelta.Names.List.allCases where try db.tableExists(SeedDelta.Names.table(index, list)) {
                lists[list.rawValue] = try db.columns(in: SeedDelta.Names.table(index, list)).map(\.name)
            }
            return lists
        }
    }

    @Test(arguments: shapes, [false, true]) func theIndexTravelsAsRowidsAndFollowsItsContent(_ shape: Shape, many: Bool) throws {
        let sandbox = try shape.sandbox(many: many)
        let built = try #require(try sandbox.roundTrip())
        let counts = try #require(built.tables.first { $0.name == shape.index })
        #expect(counts.deleted + counts.updated + counts.inserted > 0)
        let lists = try Self.listColumns(of: shape.index, in: sandbox.delta)
        #expect(!lists.isEmpty && lists.values.allSatisfy { $0 == ["k1"] }, "\(lists)")
        #expect(try Self.indexEntries(shape.index, in: sandbox.target) == Self.indexEntries(shape.index, in: sandbox.new))
    }

    /// Removes table `table` and its row lists from the delta at `path`, as if its rows had not changed.
    static func removeLists(of table: String, in path: String) throws {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        try queue.write { db in
            guard let index = try Int.fetchOne(db, sql: "SELECT idx FROM reseed_delta_tables WHERE name = ?", arguments: [table]) else { return }
            for list in SeedDelta.Names.List.allCases { try db.execute(sql: "DROP TABLE IF EXISTS \(SeedDelta.Names.table(index, list))") }
            try db.execute(sql: "DELETE FROM reseed_delta_tables WHERE idx = ?", arguments: [index])
        }
    }

    @Test(arguments: shapes, [false, true]) func theIndexFollowsTheContentRowsEvenWhereTheDeltaListsNoneOfItsRows(_ shape: Shape, many: Bool) throws {
        let sandbox = try shape.sandbox(many: many)
        guard case .built(let built) = try sandbox.build() else {
            Issue.record("no delta was built")
            return
        }
        try Self.removeLists(of: shape.index, in: sandbox.delta)
        // The row set misses the index table's rows: the incremental check refuses.
        try sandbox.copyOld()
        let refused = try #require(throws: ReseedError.self) {
            try Self.applyIncrementally(sandbox.delta, from: sandbox.old, to: sandbox.new, target: sandbox.target)
        }
        #expect(refused.code == .verificationFailed, "\(refused)")
        // The whole content hash reads the index table's rows from its content table, so it cannot tell:
        // the entries are rebuilt from the content rows the delta changes (a view's, whole).
        try sandbox.copyOld()
        _ = try SeedDelta.apply(deltaPath: sandbox.delta, to: sandbox.target, expectedContentHash: built.toContentHash)
        #expect(try Self.indexEntries(shape.index, in: sandbox.target) == Self.indexEntries(shape.index, in: sandbox.new))
    }

    @Test(arguments: [
        // The content table changes its definition: it and its index are shipped whole.
        ("CREATE TABLE article(id INTEGER PRIMARY KEY, headline TEXT NOT NULL, text TEXT COLLATE NOCASE)", schema.components(separatedBy: ";\n")[1]),
        // The index changes its tokenizer: it is shipped whole, its content table row by row.
        (schema.components(separatedBy: ";\n")[0], "CREATE VIRTUAL TABLE article_fts USING fts5(headline, text, content = 'article', content_rowid = 'id', tokenize = 'porter')"),
    ]) func anIndexShippedWholeTravelsAsRowidsAndIsRebuiltFromItsContent(_ table: String, _ index: String) throws {
        let sandbox = try DeltaSandbox(schema: Self.schema, old: Self.oldRows, new: Self.newRows, newSchema: table + ";\n" + index)
        let built = try #require(try sandbox.roundTrip())
        #expect(built.tables.first { $0.name == "article_fts" }?.carries == .wholeTable)
        #expect(try Self.listColumns(of: "article_fts", in: sandbox.delta) == ["inserted": ["k1"]])
        #expect(try Self.indexEntries("article_fts", in: sandbox.target) == Self.indexEntries("article_fts", in: sandbox.new))
    }

    @Test(arguments: [
        (touched: 0, rows: 0 as Int?, whole: true),
        (touched: 1, rows: 100, whole: false),
        (touched: 37, rows: 100, whole: false),
        (touched: 38, rows: 100, whole: true),
        (touched: 200, rows: 100, whole: true),
        // A view's rows are not counted: its index is re-indexed row by row.
        (touched: 200, rows: nil, whole: false),
    ]) func anIndexIsRebuiltWholeFromThreeEighthsOfItsRows(_ touched: Int, _ rows: Int?, _ whole: Bool) {
        #expect(SeedDelta.FollowingIndexes.rebuildsWhole(touched: touched, rows: rows) == whole)
    }
}

