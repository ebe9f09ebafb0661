import Crypto
import Foundation
import GRDB
@testable import Reseed
import ReseedSystem
import ReseedTestSupport
import Testing

/// Devices record the content hashes of the seeds they hold, and a channel's deltas start from
/// them: the hashes of a seed never change, however the code computing them does. These are the
/// values the first version of each hash gave for a few seeds, pinned.
@Suite struct PinnedContentHashTests {
    /// A seed with every kind of table the encodings treat apart and every storage class, a text
    /// and a blob longer than the hasher's 64 KiB buffer, a UTF-16 text encoding, and 20,000 rows
    /// of a table (more than any batch the row set is hashed in).
    static let everyKind = """
        PRAGMA encoding = 'UTF-16le';
        PRAGMA user_version = 7;
        PRAGMA application_id = 1381188932;
        CREATE TABLE level (id INTEGER PRIMARY KEY, name TEXT NOT NULL, weight REAL);
        CREATE TABLE code (code TEXT PRIMARY KEY, label TEXT, data BLOB);
        CREATE TABLE pair (a TEXT, b INTEGER, note, PRIMARY KEY (a, b)) WITHOUT ROWID;
        CREATE TABLE log (message TEXT, value);
        CREATE TABLE computed (x INTEGER PRIMARY KEY, y INTEGER, doubled INTEGER GENERATED ALWAYS AS (y * 2) STORED);
        CREATE TABLE reading (id INTEGER PRIMARY KEY, station TEXT NOT NULL, value REAL, note TEXT, raw BLOB);
        CREATE INDEX code_label ON code (label);
        CREATE VIEW heavy AS SELECT * FROM level WHERE weight > 1;
        CREATE TRIGGER level_guard BEFORE DELETE ON level BEGIN SELECT RAISE(ABORT, 'no'); END;
        INSERT INTO level VALUES (1, 'one', 1.5), (2, 'two', 2.0), (3, 'three', NULL), (9223372036854775807, 'max', 1e308),
            (-9223372036854775808, 'min', -0.0);
        INSERT INTO code VALUES ('b', 'bee', x'00ff'), ('a', 'ay', x''), ('é', 'e acute', NULL), ('Z', 'zed', x'5a'),
            ('long', printf('%.*c', 100000, 'x'), zeroblob(70000)), ('', '', '');
        INSERT INTO pair VALUES ('x', 2, 1), ('x', 1, 1.0), ('w', 7, '1'), ('v', 0, -0.0), ('v', 1, x'01');
        INSERT INTO log (rowid, message, value) VALUES (5, 'first', 1), (9, 'second', 'two'), (12, 'first', 1), (13, NULL, NULL);
        INSERT INTO computed (x, y) VALUES (1, 21), (2, NULL);
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
        INSERT INTO reading SELECT i, printf('ST%04d', (i * 7919) % 1000), (i % 1000) / 8.0 - 50,
            CASE WHEN i % 10 = 0 THEN NULL ELSE printf('note %d, checked', i) END,
            CASE WHEN i % 3 = 0 THEN zeroblob(i % 17) WHEN i % 3 = 1 THEN CAST(printf('%x', i) AS BLOB) ELSE i END FROM n;
        """

    /// A seed with a full-text and an R-tree table, read through their modules: the content hash's version 2.
    static let virtualTables = """
        CREATE TABLE article (id INTEGER PRIMARY KEY, title TEXT, body TEXT);
        CREATE VIRTUAL TABLE article_text USING fts5(title, body, content='article', content_rowid='id');
        CREATE VIRTUAL TABLE note_text USING fts4(body);
        CREATE VIRTUAL TABLE place USING rtree(id, minX, maxX, minY, maxY);
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
        INSERT INTO article SELECT i, printf('title %d', i), printf('the body of article %d, word%d', i, i % 7) FROM n;
        INSERT INTO article_text (rowid, title, body) SELECT id, title, body FROM article;
        INSERT INTO note_text (rowid, body) VALUES (3, 'three notes'), (8, 'eight');
        INSERT INTO place VALUES (1, 0, 1, 0, 1), (2, -5.5, 5.5, 2, 3);
        """

    /// An empty database: no tables, no rows.
    static let empty = "PRAGMA user_version = 0"

    func build(_ sql: String, in sandbox: TemporaryDirectory) throws -> String {
        let path = sandbox.appending(UUID().uuidString + ".sqlite").path
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { try $0.execute(sql: sql) }
        try queue.close()
        return path
    }

    /// The content hash, the incremental hash and the SHA-256 of its row set, computed together and alone.
    func hashes(of path: String) throws -> [String] {
        let (contentHash, incremental) = try SeedContentHash.computeWithIncremental(path: path)
        #expect(try SeedContentHash.compute(path: path) == contentHash)
        #expect(try IncrementalContentHash.compute(path: path) == incremental)
        return [contentHash, incremental.hash, SHA256.hash(data: incremental.rowSet).hexString]
    }

    @Test func theHashesOfKnownSeedsNeverChange() throws {
        let sandbox = try TemporaryDirectory()
        let everyKind = try hashes(of: build(Self.everyKind, in: sandbox))
        #expect(everyKind == [
            "1d729bc784aef79aa711ac770625c90be56bc8db185f9b6fe6dfc7cc1e8ef07b",
            "8e9088328fbb4391633c980cd9ca443e18497f2e7302e0a8c93fadcebcdae302",
            "54f6b7e34c41f0362df0729577c3c645ce39b6a7e452c5c1c7c1f12dd419b5fc",
        ])
        let virtualTables = try hashes(of: build(Self.virtualTables, in: sandbox))
        #expect(virtualTables == [
            "00abfb24eed0d71c7c12e99743f3c72d98cb10bc085cc89713469f2bc2731886",
            "8d04132803e4546a9c50279d53b6bd8705fd925c744feef1a1fdcec5f8e54ec3",
            "a8c3290c68ea7a1fdbc98c4b85f3b1c943308159375611d13e0e6da86fb2c25e",
        ])
        let empty = try hashes(of: build(Self.empty, in: sandbox))
        #expect(empty == [
            "a471b8cfa3903496f4a1656810e89f48ec571a4fbbdbfe6babc6993697fb2957",
            "41a98c3dca6d13e157be4e85d4824315517397dccd9340218755bc7899fa8d9d",
            "e5a00aa9991ac8a5ee3109844d84a55583bd20572ad3ffcd42792f3c36b183ad",
        ])
    }

    /// The row set of a delta's rows: removed rows subtract what added rows add.
    @Test func rowsRemovedAndAddedMoveTheRowSetAsPinned() throws {
        var rowSet = RowSetHash()
        for index in 0..<100 { try rowSet.combine(SHA256.hash(data: Data("row \(index)".utf8)), sign: 1) }
        for index in stride(from: 0, to: 100, by: 3) { try rowSet.combine(SHA256.hash(data: Data("row \(index)".utf8)), sign: -1) }
        try rowSet.combine(SHA256.hash(data: Data("row 1".utf8)), sign: -1)
        #expect(SHA256.hash(data: rowSet.bytes).hexString == "8c9bfe4b536f68435a847d746a81e8c67335d9b3af85d6b631c9c961ba436c94")
        #expect(Array(rowSet.bytes.prefix(8)) == [21, 175, 212, 207, 103, 119, 170, 83])
    }
}
