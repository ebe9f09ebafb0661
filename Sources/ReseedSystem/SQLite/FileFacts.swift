import Foundation
import SystemPackage

/// A database file's size, SHA-256 and header, read in one pass.
package struct FileFacts: Sendable {
    package var size: Int64
    /// Lowercase hex SHA-256 of the whole file.
    package var sha256: String
    /// Nil when the file does not start with a SQLite header.
    package var header: StoreHeader?

    /// Reads the file at `path`; when `directory` is given, fsyncs it first through the seam (`name` is its name there).
    package init(path: String, directory: Directory? = nil, name: String? = nil) throws {
        let file = try FileSystem.openRegularFile(path)
        let digest: (bytes: Int64, sha256: String)
        if let directory, let name {
            // fsync on another thread while this one hashes (from the page cache): on 2 cores, one costs nothing.
            digest = try FileCopier.hash(file, path: path, syncingIn: directory, name: name)
        } else {
            digest = try FileSystem().reading("read", path) { () throws(Errno) in try FileCopier.hash(file) }
        }
        let headerBytes = try FileSystem().reading("read", path) { () throws(Errno) in
            try file.read(count: StoreHeader.size, at: 0)
        }
        self.size = digest.bytes
        self.sha256 = digest.sha256
        self.header = StoreHeader(headerBytes)
    }
}
