import _CryptoExtras
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

    private static let zeros = [UInt8](repeating: 0, count: byteCount)
    private static let nonce: Insecure.ChaCha20CTR.Nonce? = try? Insecure.ChaCha20CTR.Nonce(data: [UInt8](repeating: 0, count: 12))

    /// Adds (`sign` 1) or removes (`sign` -1) the element whose canonical encoding has `digest`.
    ///
    /// - Throws: `CryptoKitError` if ChaCha20 refuses the key, which a SHA-256 digest never is.
    mutating func combine(_ digest: SHA256.Digest, sign: Int) throws {
        guard let nonce = Self.nonce else { throw CryptoKitError.incorrectParameterSize }
        let stream = try Insecure.ChaCha20CTR.encrypt(Self.zeros, using: SymmetricKey(data: digest), nonce: nonce)
        stream.withUnsafeBytes { raw in
            lanes.withUnsafeMutableBufferPointer { lanes in
                for index in 0..<Self.laneCount {
                    let element = UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: 2 * index, as: UInt16.self))
                    lanes[index] = sign > 0 ? lanes[index] &+ element : lanes[index] &- element
                }
            }
        }
    }
}

/// Adds rows to (or removes them from) a ``RowSetHash`` as they are read: one row's element is the
/// SHA-256 of the canonical encoding of its table's name, whether the rowid is hashed, the column
/// count, a row mark, then the rowid when hashed and the row's values (see <doc:ContentHash>).
struct RowSetAccumulator {
    var hash = RowSetHash()
    private var element = ContentHasher(capacity: 1024)

    init(hash: RowSetHash = RowSetHash()) {
        self.hash = hash
    }

    /// Adds the current row of `statement` (its `count` columns: ``TableRows/selected``) of `rows`' table.
    mutating func add(_ statement: OpaquePointer, _ count: Int32, of rows: TableRows) throws {
        try hash.combine(digest(statement, count, of: rows), sign: 1)
    }

    /// Removes the current row of `statement`, as ``add(_:_:of:)`` adds it.
    mutating func remove(_ statement: OpaquePointer, _ count: Int32, of rows: TableRows) throws {
        try hash.combine(digest(statement, count, of: rows), sign: -1)
    }

    private mutating func digest(_ statement: OpaquePointer, _ count: Int32, of rows: TableRows) -> SHA256.Digest {
        element.reset()
        element.text(Array(rows.table.utf8))
        element.integer(rows.hashesRowid ? 1 : 0)
        element.integer(Int64(rows.columnCount))
        element.mark(.row)
        for index in 0..<count { element.value(statement, index) }
        return element.digest()
    }
}
