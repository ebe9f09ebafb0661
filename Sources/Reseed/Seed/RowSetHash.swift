import CReseedSystem
import Crypto
import Foundation
import GRDBSQLite

/// A homomorphic hash of a multiset of rows: LtHash (Lewi, Kim, Maykov, Weis, "Securing Update
/// Propagation with Homomorphic Hashing", 2019) with 1,024 lanes of 16 bits, the parameters the
/// paper recommends for about 200 bits of security.
///
/// Each row is expanded to 2,048 bytes (the ChaCha20 key stream keyed by the SHA-256 of the row's
/// canonical encoding, nonce and counter zero), read as 1,024 little-endian 16-bit lanes, and added
/// lane by lane modulo 2¹⁶. Adding and removing rows commute, so the hash of a seed after a delta
/// follows from the hash before it and the rows the delta removed and added, without reading the
/// rest (see <doc:ContentHash>).
///
/// The expansion is the cost of hashing a row: a C kernel (`reseed_row_set_combine`) computes the
/// key stream of 4, 8 or 16 blocks at a time, as the CPU's vectors allow, and adds it into the
/// lanes in the registers it was computed in (measured in `Benchmarks/README.md`, figure 5).
struct RowSetHash: Equatable, Sendable {
    /// The number of 16-bit lanes.
    static let laneCount = 1024
    /// The size of ``bytes``.
    static let byteCount = 2 * laneCount

    private(set) var lanes: [UInt16]

    /// The hash of no rows: every lane zero.
    init() {
        lanes = Array(repeating: 0, count: Self.laneCount)
    }

    /// The hash from its ``bytes``; nil when they are not ``byteCount`` long.
    init?(bytes: [UInt8]) {
        guard bytes.count == Self.byteCount else { return nil }
        lanes = (0..<Self.laneCount).map { UInt16(bytes[2 * $0]) | UInt16(bytes[2 * $0 + 1]) << 8 }
    }

    /// The lanes as little-endian bytes.
    var bytes: [UInt8] {
        var bytes = [UInt8](repeating: 0, count: Self.byteCount)
        for (index, lane) in lanes.enumerated() {
            bytes[2 * index] = UInt8(truncatingIfNeeded: lane)
            bytes[2 * index + 1] = UInt8(truncatingIfNeeded: lane >> 8)
        }
        return bytes
    }

    /// Adds (`sign` 1) or removes (`sign` -1) the element whose canonical encoding has `digest`.
    ///
    /// - Throws: nothing: kept throwing for its callers, as when swift-crypto's ChaCha20 computed the expansion.
    mutating func combine(_ digest: SHA256.Digest, sign: Int) throws {
        digest.withUnsafeBytes { combine(digests: $0, sign: sign) }
    }

    /// Adds (`sign` 1) or removes (`sign` -1) the elements whose canonical encodings have the
    /// SHA-256 digests `digests` holds, 32 bytes each, back to back.
    mutating func combine(digests: UnsafeRawBufferPointer, sign: Int) {
        guard let keys = digests.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
        lanes.withUnsafeMutableBufferPointer { lanes in
            reseed_row_set_combine(lanes.baseAddress, keys, digests.count / SHA256.byteCount, sign < 0 ? 1 : 0)
        }
    }

    /// As ``combine(digests:sign:)``, with the kernel's implementation of `width` blocks at a time
    /// (16, 8 or 4); false when this CPU cannot run it. For the tests that compare them.
    mutating func combine(digests: UnsafeRawBufferPointer, sign: Int, width: Int32) -> Bool {
        guard let keys = digests.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return true }
        return lanes.withUnsafeMutableBufferPointer { lanes in
            reseed_row_set_combine_width(width, lanes.baseAddress, keys, digests.count / SHA256.byteCount, sign < 0 ? 1 : 0) == 0
        }
    }

    /// Adds the elements `other` holds: the hash of both multisets.
    mutating func add(_ other: RowSetHash) {
        for index in lanes.indices { lanes[index] &+= other.lanes[index] }
    }
}

/// Adds rows to (or removes them from) a ``RowSetHash`` as they are read: one row's element is the
/// SHA-256 of the canonical encoding of its table's name, whether the rowid is hashed, the column
/// count, a row mark, then the rowid when hashed and the row's values (see <doc:ContentHash>).
struct RowSetAccumulator {
    /// The hash of the rows added and removed, but for the changes left to other threads until ``finish()``.
    private(set) var hash = RowSetHash()
    private var element = RowElement()
    /// The changes ``change(_:_:of:prefix:sign:)`` and ``move(_:_:of:prefix:to:)`` noted since the last ``finish()``.
    private var changes: RowSetChanges?

    init(hash: RowSetHash = RowSetHash()) {
        self.hash = hash
    }

    /// Adds the current row of `statement` (its `count` columns: ``TableRows/selected``) of `rows`' table.
    ///
    /// - Throws: nothing: kept throwing for its callers, as ``RowSetHash/combine(_:sign:)`` is.
    mutating func add(_ statement: OpaquePointer, _ count: Int32, of rows: TableRows) throws {
        try hash.combine(element.digest(statement, count, of: rows), sign: 1)
    }

    /// Removes the current row of `statement`, as ``add(_:_:of:)`` adds it.
    mutating func remove(_ statement: OpaquePointer, _ count: Int32, of rows: TableRows) throws {
        try hash.combine(element.digest(statement, count, of: rows), sign: -1)
    }

    /// Adds (`sign` 1) or removes (-1) the current row of `statement`, as ``add(_:_:of:)`` does, its
    /// digest and expansion computed on another thread (``RowSetChanges``) while the delta goes on:
    /// ``finish()`` adds them to ``hash``. `prefix` is the table's element prefix (``RowEncoding/elementPrefix(of:)``).
    mutating func change(_ statement: OpaquePointer, _ count: Int32, of rows: TableRows, prefix: [UInt8], sign: Int) {
        pendingChanges().change(statement, count, of: rows, prefix: prefix, sign: sign)
    }

    /// Removes the current row of `statement` of a table whose rowid is hashed (its first column)
    /// and adds it again at `rowid`, where the move puts it: a move keeps the row's values, so one
    /// read gives both elements. Computed on another thread, as ``change(_:_:of:prefix:sign:)`` is.
    mutating func move(_ statement: OpaquePointer, _ count: Int32, of rows: TableRows, prefix: [UInt8], to rowid: Int64) {
        pendingChanges().move(statement, count, of: rows, prefix: prefix, to: rowid)
    }

    private mutating func pendingChanges() -> RowSetChanges {
        if let changes { return changes }
        let changes = RowSetChanges()
        self.changes = changes
        return changes
    }

    /// ``hash`` with every change noted in it, waiting for the threads that compute them.
    mutating func finish() -> RowSetHash {
        if let changes {
            hash.add(changes.finish())
            self.changes = nil
        }
        return hash
    }
}

/// The digest of one row's element: the SHA-256 of its canonical encoding (see ``RowSetAccumulator``).
struct RowElement {
    private var hasher = ContentHasher(capacity: 1024)

    /// The digest of the current row of `statement` (its `count` columns: ``TableRows/selected``) of `rows`' table;
    /// with `rowid`, of that row with this rowid instead of its first column's (a table whose rowid is hashed).
    mutating func digest(_ statement: OpaquePointer, _ count: Int32, of rows: TableRows, rowid: Int64? = nil) -> SHA256.Digest {
        hasher.reset()
        hasher.text(rows.tableBytes)
        hasher.integer(rows.hashesRowid ? 1 : 0)
        hasher.integer(Int64(rows.columnCount))
        hasher.mark(.row)
        if let rowid { hasher.integer(rowid) } else if count > 0 { hasher.value(statement, 0) }
        for index in 1..<max(count, 1) { hasher.value(statement, index) }
        return hasher.digest()
    }
}
