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
            incremental: (installed: try IncrementalContentHash.compute(path: from).hash, expected: try IncrementalContentHash.compute(path: to).hash))
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
}
