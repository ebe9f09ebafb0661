import Crypto
import Foundation
import GRDB
import GRDBSQLite
@testable import Reseed
import ReseedTestSupport
import Testing

/// A delta's changes of the row set are computed on helper threads (``RowSetChanges``): each must
/// be the same as adding, removing or moving rows one by one, however the rows fall into batches
/// and threads.
@Suite struct RowSetChangesTests {
    /// Two tables whose rowid is hashed (no primary key), more rows than the reading thread can
    /// hand to its helpers (so it expands batches itself too), every storage class, rows of
    /// 20 KiB (a batch closes on its bytes) and rows longer than an element a batch copies
    /// (digested as they are read).
    static let rows = """
        CREATE TABLE body (kind TEXT, number, data BLOB);
        CREATE TABLE tail (label TEXT, data BLOB);
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 14000)
        INSERT INTO body (rowid, kind, number, data) SELECT 3 * i,
            CASE WHEN i % 97 = 0 THEN 'long' WHEN i % 50 = 0 THEN 'medium' ELSE printf('short %d', i) END,
            CASE i % 4 WHEN 0 THEN i WHEN 1 THEN i / 7.0 WHEN 2 THEN NULL ELSE printf('%d', i) END,
            CASE WHEN i % 97 = 0 THEN randomblob(70000 + i) WHEN i % 50 = 0 THEN randomblob(20000) ELSE x'00ff' END FROM n;
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
        INSERT INTO tail (rowid, label, data) SELECT -i, printf('tail %d', i), CASE WHEN i % 7 = 0 THEN randomblob(66000) ELSE NULL END FROM n;
        """

    /// The rowid the test moves a row of rowid `rowid` to: negative and positive, far from any taken.
    static func moved(_ rowid: Int64) -> Int64 { rowid > 0 ? rowid + 10_000_000 : rowid - 10_000_000 }

    @Test func movingRowsOnHelperThreadsIsMovingThemOneByOne() throws {
        let sandbox = try TemporaryDirectory()
        let path = sandbox.appending("moved.sqlite").path
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { try $0.execute(sql: Self.rows) }
        let before = try #require(RowSetHash(bytes: SeedContentHash.computeWithIncremental(path: path).incremental.rowSet))
        let (oneByOne, onHelpers) = try queue.read { db in
            var serial = before
            var element = RowElement()
            var accumulator = RowSetAccumulator(hash: before)
            for name in ["body", "tail"] {
                let rows = try TableRows(name, withoutRowid: false, db)
                #expect(rows.hashesRowid)
                let prefix = RowEncoding.elementPrefix(of: rows)
                try rows.forEachRow(rows.selectAll, db) { raw, count in
                    let rowid = Self.moved(sqlite3_column_int64(raw, 0))
                    try serial.combine(element.digest(raw, count, of: rows), sign: -1)
                    try serial.combine(element.digest(raw, count, of: rows, rowid: rowid), sign: 1)
                    accumulator.move(raw, count, of: rows, prefix: prefix, to: rowid)
                }
            }
            return (serial, accumulator.finish())
        }
        // The rows really moved, hashed whole: the same row set again.
        try queue.write { db in
            for name in ["body", "tail"] {
                try db.execute(sql: "UPDATE \(name) SET rowid = CASE WHEN rowid > 0 THEN rowid + 10000000 ELSE rowid - 10000000 END")
            }
        }
        try queue.close()
        let after = try SeedContentHash.computeWithIncremental(path: path).incremental.rowSet
        // Compared by their SHA-256, which a failure prints in a line (a row set is 2 KiB).
        #expect(SHA256.hash(data: onHelpers.bytes).hexString == SHA256.hash(data: oneByOne.bytes).hexString)
        #expect(SHA256.hash(data: onHelpers.bytes).hexString == SHA256.hash(data: after).hexString)
        #expect(onHelpers != before)
    }

    @Test func addingAndRemovingRowsOnHelperThreadsIsAddingAndRemovingThemOneByOne() throws {
        let sandbox = try TemporaryDirectory()
        let path = sandbox.appending("rows.sqlite").path
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { try $0.execute(sql: Self.rows) }
        try queue.close()
        let whole = try SeedContentHash.computeWithIncremental(path: path).incremental.rowSet
        let (added, removed) = try DatabaseQueue(path: path).read { db in
            var adding = RowSetAccumulator()
            var removing = RowSetAccumulator(hash: try #require(RowSetHash(bytes: whole)))
            for name in ["body", "tail"] {
                let rows = try TableRows(name, withoutRowid: false, db)
                let prefix = RowEncoding.elementPrefix(of: rows)
                try rows.forEachRow(rows.selectAll, db) { raw, count in
                    adding.change(raw, count, of: rows, prefix: prefix, sign: 1)
                    removing.change(raw, count, of: rows, prefix: prefix, sign: -1)
                }
            }
            return (adding.finish(), removing.finish())
        }
        #expect(SHA256.hash(data: added.bytes).hexString == SHA256.hash(data: whole).hexString)
        #expect(removed == RowSetHash())
    }
}
