import Foundation

/// The first 100 bytes of a SQLite database file, decoded.
///
/// See <https://www.sqlite.org/fileformat2.html#the_database_header>.
package struct StoreHeader: Sendable, Equatable {
    /// "SQLite format 3" and a NUL: the first 16 bytes of every SQLite 3 database.
    package static let magic: [UInt8] = Array("SQLite format 3\0".utf8)
    package static let size = 100

    package var pageSize: Int
    /// 1 for rollback journal, 2 for WAL.
    var writeVersion: UInt8
    var readVersion: UInt8
    package var userVersion: Int32
    package var applicationID: Int32

    /// True when `bytes` start with the SQLite magic.
    package static func hasMagic(_ bytes: some Collection<UInt8>) -> Bool {
        bytes.count >= magic.count && bytes.prefix(magic.count).elementsEqual(magic)
    }

    /// True when the regular file at `path` has bytes that do not start with the SQLite magic: it
    /// is not a database (SQLite takes an empty file for an empty one). False when it cannot be read.
    package static func fileIsNotADatabase(_ path: String) -> Bool {
        do {
            let file = try FileSystem.openRegularFile(path)
            let bytes = try file.read(count: magic.count, at: 0)
            return !bytes.isEmpty && !hasMagic(bytes)
        } catch {
            return false
        }
    }

    /// Decodes a header; nil when the bytes are not a SQLite 3 header.
    package init?(_ bytes: [UInt8]) {
        guard bytes.count >= Self.size, Self.hasMagic(bytes) else { return nil }
        func bigEndian(_ offset: Int, _ count: Int) -> UInt32 {
            bytes[offset..<offset + count].reduce(0) { $0 << 8 | UInt32($1) }
        }
        let rawPageSize = Int(bigEndian(16, 2))
        pageSize = rawPageSize == 1 ? 65536 : rawPageSize
        writeVersion = bytes[18]
        readVersion = bytes[19]
        userVersion = Int32(bitPattern: bigEndian(60, 4))
        applicationID = Int32(bitPattern: bigEndian(68, 4))
    }

    /// True when the file is in rollback-journal mode (not WAL), as a seed must be.
    package var isRollbackJournal: Bool { writeVersion == 1 && readVersion == 1 }
}
