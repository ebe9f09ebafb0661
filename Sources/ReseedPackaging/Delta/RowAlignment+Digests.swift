import Crypto
import GRDB
import GRDBSQLite

extension RowAlignment {
    /// The rows of a rowid table: their rowids, ascending, and the digest of each one's values.
    struct Rows {
        var rowids: [Int64] = []
        var digests: [Digest] = []
    }

    /// Reads `table` (a qualified, quoted name such as `old."t"`) in rowid order and digests each row's
    /// `columns`: every value with its storage class (`1`, `1.0` and `'1'` differ), text as the UTF-8
    /// bytes SQLite gives (an embedded NUL or bytes that are not UTF-8 included, as stored), blobs as
    /// stored. `rowid` is a quoted name that reaches the rowid.
    ///
    /// Memory holds 24 bytes per row; the values are read once and not kept.
    static func rows(of table: String, rowid: String, columns: [String], _ db: Database) throws -> Rows {
        let selected = ([rowid] + columns.map(\.quotedIdentifier)).joined(separator: ", ")
        var rows = Rows()
        var bytes: [UInt8] = []
        try forEachRow(db, "SELECT \(selected) FROM \(table) ORDER BY \(rowid)") { statement in
            rows.rowids.append(sqlite3_column_int64(statement, 0))
            bytes.removeAll(keepingCapacity: true)
            for column in 1..<sqlite3_column_count(statement) {
                switch sqlite3_column_type(statement, column) {
                case SQLITE_NULL: bytes.append(0)
                case SQLITE_INTEGER: bytes.append(1); append(UInt64(bitPattern: sqlite3_column_int64(statement, column)), to: &bytes)
                case SQLITE_FLOAT: bytes.append(2); append(sqlite3_column_double(statement, column).bitPattern, to: &bytes)
                case SQLITE_TEXT:
                    let text = sqlite3_column_text(statement, column)
                    let count = Int(sqlite3_column_bytes(statement, column))
                    bytes.append(3); append(UInt64(count), to: &bytes)
                    if let text { bytes += UnsafeBufferPointer(start: text, count: count) }
                default:
                    let blob = sqlite3_column_blob(statement, column)
                    let count = Int(sqlite3_column_bytes(statement, column))
                    bytes.append(4); append(UInt64(count), to: &bytes)
                    if let blob { bytes += UnsafeRawBufferPointer(start: blob, count: count) }
                }
            }
            let hash = Array(SHA256.hash(data: bytes))
            rows.digests.append(Digest(
                high: hash[0..<8].reduce(0) { $0 << 8 | UInt64($1) }, low: hash[8..<16].reduce(0) { $0 << 8 | UInt64($1) }))
            return true
        }
        return rows
    }

    private static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }
}
