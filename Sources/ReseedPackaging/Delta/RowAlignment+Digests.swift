import Crypto
import GRDB

extension RowAlignment {
    /// The rows of a rowid table: their rowids, ascending, and the digest of each one's values.
    struct Rows {
        var rowids: [Int64] = []
        var digests: [Digest] = []
    }

    /// Reads `table` (a qualified, quoted name such as `old."t"`) in rowid order and digests each row's
    /// `columns`: every value with its storage class (`1`, `1.0` and `'1'` differ), text as UTF-8
    /// whatever the database's encoding. `rowid` is a quoted name that reaches the rowid.
    ///
    /// Memory holds 24 bytes per row; the values are read once and not kept.
    static func rows(of table: String, rowid: String, columns: [String], _ db: Database) throws -> Rows {
        let selected = ([rowid] + columns.map(\.quotedIdentifier)).joined(separator: ", ")
        let cursor = try Row.fetchCursor(db, sql: "SELECT \(selected) FROM \(table) ORDER BY \(rowid)")
        var rows = Rows()
        var bytes: [UInt8] = []
        while let row = try cursor.next() {
            bytes.removeAll(keepingCapacity: true)
            for (index, value) in row.databaseValues.enumerated() {
                switch value.storage {
                case .int64(let number) where index == 0:
                    rows.rowids.append(number)
                    continue
                case .null: bytes.append(0)
                case .int64(let number): bytes.append(1); append(UInt64(bitPattern: number), to: &bytes)
                case .double(let number): bytes.append(2); append(number.bitPattern, to: &bytes)
                case .string(let text): bytes.append(3); append(UInt64(text.utf8.count), to: &bytes); bytes += text.utf8
                case .blob(let data): bytes.append(4); append(UInt64(data.count), to: &bytes); bytes += data
                }
            }
            let hash = Array(SHA256.hash(data: bytes))
            rows.digests.append(Digest(
                high: hash[0..<8].reduce(0) { $0 << 8 | UInt64($1) }, low: hash[8..<16].reduce(0) { $0 << 8 | UInt64($1) }))
        }
        return rows
    }

    private static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }
}
