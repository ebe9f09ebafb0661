import Crypto
import Foundation
import GRDB
@testable import Reseed
import ReseedTestSupport
import Testing

/// ``IncrementalContentHash`` and its ``RowSetHash``: rows combine by addition, in any order, and
/// the hash of a database follows from its schema and its rows' row set.
@Suite struct IncrementalContentHashTests {
    func digest(_ text: String) -> SHA256.Digest { SHA256.hash(data: Data(text.utf8)) }

    @Test func addingAndRemovingRowsCommute() throws {
        var forward = RowSetHash()
        var backward = RowSetHash()
        let rows = (0..<50).map { digest("row \($0)") }
        for row in rows { try forward.combine(row, sign: 1) }
        for row in rows.reversed() { try backward.combine(row, sign: 1) }
        #expect(forward == backward && forward != RowSetHash())
        // A row added twice is a multiset: removing it once leaves it once.
        var twice = forward
        try twice.combine(rows[0], sign: 1)
        #expect(twice != forward)
        try twice.combine(rows[0], sign: -1)
        #expect(twice == forward)
        for row in rows { try forward.combine(row, sign: -1) }
        #expect(forward == RowSetHash())
        #expect(RowSetHash(bytes: twice.bytes) == twice && RowSetHash(bytes: Array(twice.bytes.dropLast())) == nil)
    }

    /// The lanes of one row: a fixed vector, so a change of the expansion (key, nonce, byte order) is seen.
    @Test func aRowExpandsToTheChaCha20KeyStreamOfItsDigest() throws {
        var hash = RowSetHash()
        try hash.combine(SHA256.hash(data: Data()), sign: 1)
        // ChaCha20 (RFC 8439) keyed by SHA-256(""), nonce and counter 0: the key stream's first 8 bytes, as lanes.
        let bytes = hash.bytes
        #expect(bytes.count == 2048)
        let expected = try expectedKeyStreamPrefix()
        #expect(Array(bytes.prefix(8)) == expected)
    }

    /// Every implementation of the expansion (16, 8 or 4 blocks at a time, those this CPU runs)
    /// gives each row the whole 2,048 bytes of ChaCha20's key stream, as `openssl enc` computes it,
    /// and sums any batch of rows, added or removed, as one row at a time does.
    @Test func everyExpansionIsTheKeyStreamOfOpenSSL() throws {
        var random = SplitMix64(seed: 34)
        let keys = (0..<3).map { _ in (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) } }
        for key in keys {
            let stream = try keyStream(key: key, bytes: RowSetHash.byteCount)
            for width: Int32 in [4, 8, 16] {
                var hash = RowSetHash()
                guard key.withUnsafeBytes({ hash.combine(digests: $0, sign: 1, width: width) }) else { continue }
                #expect(hash.bytes == stream, "width \(width)")
            }
        }
        // Batches of every length around the widths, added and removed, against one row at a time.
        let digests = (0..<40 * 32).map { _ in UInt8.random(in: 0...255, using: &random) }
        for count in [1, 3, 4, 5, 15, 16, 17, 40] {
            var oneByOne = RowSetHash()
            for row in 0..<count {
                digests[(32 * row)..<(32 * row + 32)].withUnsafeBytes { _ = oneByOne.combine(digests: $0, sign: row % 3 == 0 ? -1 : 1, width: 4) }
            }
            for width: Int32 in [4, 8, 16] {
                var batched = RowSetHash()
                let added = (0..<count).filter { $0 % 3 != 0 }, removed = (0..<count).filter { $0 % 3 == 0 }
                let ran = digests.withUnsafeBytes { all in
                    [(added, 1), (removed, -1)].allSatisfy { rows, sign in
                        let batch = rows.flatMap { all[(32 * $0)..<(32 * $0 + 32)] }
                        return batch.withUnsafeBytes { batched.combine(digests: $0, sign: sign, width: width) }
                    }
                }
                guard ran else { continue }
                #expect(batched == oneByOne, "width \(width), \(count) rows")
            }
        }
    }

    /// The first 8 bytes of ChaCha20 with key SHA-256("") from `openssl enc`, the reference.
    func expectedKeyStreamPrefix() throws -> [UInt8] {
        try keyStream(key: Array(SHA256.hash(data: Data())), bytes: 8)
    }

    /// The first `bytes` bytes of ChaCha20's key stream under `key` (nonce and counter 0), from `openssl enc`.
    func keyStream(key: [UInt8], bytes: Int) throws -> [UInt8] {
        let key = key.map { String(format: "%02x", $0) }.joined()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        // openssl's chacha20 IV is the 4-byte little-endian counter then the 12-byte nonce.
        process.arguments = ["enc", "-chacha20", "-K", key, "-iv", String(repeating: "0", count: 32)]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        try input.fileHandleForWriting.write(contentsOf: Data(count: bytes))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Array(data)
    }

    /// The hash of a database is its schema with the row set of its rows: the row set moved by the
    /// rows of a change gives the changed database's hash.
    @Test func theHashFollowsFromTheChangedRows() throws {
        let sandbox = try TemporaryDirectory()
        let path = sandbox.appending("items.sqlite").path
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(sql: """
                CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT, weight REAL);
                CREATE TABLE note (body TEXT);
                INSERT INTO item VALUES (1, 'one', 1.5), (2, 'two', NULL);
                INSERT INTO note VALUES ('a'), ('b');
                """)
        }
        let before = try IncrementalContentHash.compute(path: path)
        let tracked = try queue.write { db in
            let rows = try TableRows("item", withoutRowid: false, db)
            var accumulator = RowSetAccumulator(hash: try #require(RowSetHash(bytes: before.rowSet)))
            try rows.forEachRow(rows.select(where: "id = 2"), db) { try accumulator.remove($0, $1, of: rows) }
            try db.execute(sql: "UPDATE item SET name = 'deux' WHERE id = 2")
            try rows.forEachRow(rows.select(where: "id = 2"), db) { try accumulator.add($0, $1, of: rows) }
            try db.execute(sql: "INSERT INTO item VALUES (3, 'three', 3.0)")
            try rows.forEachRow(rows.select(where: "id = 3"), db) { try accumulator.add($0, $1, of: rows) }
            return accumulator.hash
        }
        try queue.close()
        // Read again whole, from the file: the same row set and hash.
        let recomputed = try IncrementalContentHash.compute(path: path)
        #expect(recomputed != before)
        #expect(tracked.bytes == recomputed.rowSet, "the row sets differ")
        let digest = try DatabaseQueue(path: path).read { try IncrementalContentHash.digest($0, rowSet: tracked) }
        #expect(digest == recomputed.hash)
    }

    /// The same rows in another table, or under another schema, hash otherwise.
    @Test func rowsAreBoundToTheirTableAndTheSchema() throws {
        let sandbox = try TemporaryDirectory()
        func hash(_ sql: String) throws -> String {
            let path = sandbox.appending(UUID().uuidString + ".sqlite").path
            let queue = try DatabaseQueue(path: path)
            try queue.write { try $0.execute(sql: sql) }
            try queue.close()
            return try IncrementalContentHash.compute(path: path).hash
        }
        let hashes = try [
            hash("CREATE TABLE a (x); CREATE TABLE b (x); INSERT INTO a VALUES (1)"),
            hash("CREATE TABLE a (x); CREATE TABLE b (x); INSERT INTO b VALUES (1)"),
            hash("CREATE TABLE a (x); CREATE TABLE b (y); INSERT INTO a VALUES (1)"),
            hash("CREATE TABLE a (x); CREATE TABLE b (x); INSERT INTO a VALUES (1); PRAGMA user_version = 2"),
            hash("CREATE TABLE a (x); CREATE TABLE b (x); INSERT INTO a VALUES (1); INSERT INTO a VALUES (1)"),
        ]
        #expect(Set(hashes).count == hashes.count)
    }
}
