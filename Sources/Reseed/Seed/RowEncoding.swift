import GRDBSQLite

/// One row's part of the content hash's canonical encoding (see <doc:ContentHash>): a row mark
/// and its values, in a buffer of its own, so that the row is read from SQLite and encoded once
/// for both the stream of ``SeedContentHash`` and the row's element of the incremental content
/// hash, which is the same bytes after a prefix naming the table (``elementPrefix(of:)``).
struct RowEncoding {
    /// The longest encoding kept: a longer row is hashed as it is read, value by value, and never
    /// copied, so a row of large values takes no memory of its own.
    static let limit = 1 << 16

    /// The encoding of the last row ``encode(_:_:)`` accepted.
    private(set) var bytes: [UInt8] = []

    init() {
        bytes.reserveCapacity(1024)
    }

    /// Encodes the current row of `statement` (its `count` columns: ``TableRows/selected``);
    /// false when its encoding is longer than ``limit`` (then ``bytes`` holds a part of it).
    mutating func encode(_ statement: OpaquePointer, _ count: Int32) -> Bool {
        bytes.removeAll(keepingCapacity: true)
        bytes.append(ContentHasher.Tag.row.rawValue)
        for index in 0..<count {
            guard ContentHasher.appendValue(statement, index, to: &bytes, inlineUpTo: Self.limit) == nil,
                  bytes.count <= Self.limit else { return false }
        }
        return true
    }

    /// What a row's element starts with before the row's encoding: the table's name, whether its
    /// rowid is hashed, and its column count (see ``RowElement``).
    static func elementPrefix(of rows: TableRows) -> [UInt8] {
        var bytes: [UInt8] = []
        ContentHasher.appendText(rows.tableBytes, to: &bytes)
        ContentHasher.appendInteger(rows.hashesRowid ? 1 : 0, to: &bytes)
        ContentHasher.appendInteger(Int64(rows.columnCount), to: &bytes)
        return bytes
    }
}
