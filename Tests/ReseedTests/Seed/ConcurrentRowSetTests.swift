import Crypto
import Foundation
import GRDB
@testable import Reseed
import ReseedTestSupport
import Testing

/// The row set a package records is computed in batches on helper threads; it must be the sum
/// of every row's element, however the rows fall into batches.
@Suite struct ConcurrentRowSetTests {
    /// Short rows (thousands to a batch), rows of 20 KiB (a batch closes on its bytes before its
    /// row count), rows longer than a row's copied encoding (their elements digested as they are
    /// read), interleaved, in more rows than a batch holds, over two tables (the element's prefix
    /// changes inside a batch).
    static let mixedRows = """
        CREATE TABLE body (id INTEGER PRIMARY KEY, kind TEXT, data BLOB);
        CREATE TABLE tail (label TEXT, data BLOB);
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 6000)
        INSERT INTO body SELECT i,
            CASE WHEN i % 97 = 0 THEN 'long' WHEN i % 20 = 0 THEN 'medium' ELSE 'short' END,
            CASE WHEN i % 97 = 0 THEN randomblob(70000 + i) WHEN i % 20 = 0 THEN randomblob(20000) ELSE printf('row %d', i) END FROM n;
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50)
        INSERT INTO tail SELECT printf('tail %d', i), CASE WHEN i % 7 = 0 THEN randomblob(66000) ELSE x'00' END FROM n;
        """

    @Test func theRowSetIsTheSumOfEveryRowReadOneByOne() throws {
        let sandbox = try TemporaryDirectory()
        let path = sandbox.appending("mixed.sqlite").path
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { try $0.execute(sql: Self.mixedRows) }
        let oneByOne = try queue.read { db in
            var accumulator = RowSetAccumulator()
            for table in try ContentTables.read(db).tables {
                let rows = try TableRows(table.name, withoutRowid: table.withoutRowid, db)
                try rows.forEachRow(rows.selectAll, db) { raw, count in try accumulator.add(raw, count, of: rows) }
            }
            return accumulator.hash.bytes
        }
        try queue.close()
        let (_, incremental) = try SeedContentHash.computeWithIncremental(path: path)
        // Compared by their SHA-256, which a failure prints in a line (a row set is 2 KiB).
        #expect(SHA256.hash(data: incremental.rowSet).hexString == SHA256.hash(data: oneByOne).hexString)
        #expect(oneByOne != RowSetHash().bytes)
    }
}
