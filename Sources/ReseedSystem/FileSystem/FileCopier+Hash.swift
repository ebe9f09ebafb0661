import Crypto
import SystemPackage

extension FileCopier {
    /// SHA-256 of a whole file, read sequentially in large blocks.
    package static func hash(_ file: borrowing OwnedDescriptor) throws(Errno) -> (bytes: Int64, sha256: String) {
        try hash(file.raw)
    }

    /// SHA-256 of the whole file `name` of `directory`, read while another thread fsyncs it
    /// (through the seam): on 2 cores the fsync then costs nothing beside the hash, which reads
    /// from the page cache.
    ///
    /// - Throws: the fsync's failure (a ``FileSystemFailure`` or the observer's error) first, else
    ///   the read's ``FileSystemFailure`` (operation `read`, naming `path`).
    package static func hash(
        _ file: borrowing OwnedDescriptor, path: String, syncingIn directory: Directory, name: String
    ) throws -> (bytes: Int64, sha256: String) {
        let fd = file.raw
        // `file` is borrowed until both threads are done: the syncer is joined before this returns.
        let syncer = BlockingThread.start("reseed-fsync") { Swift.Result { () throws in try directory.sync(fd, name: name) } }
        let hashed = Swift.Result { () throws(FileSystemFailure) in
            try FileSystem().reading("read", path) { () throws(Errno) in try hash(fd) }
        }
        try syncer.join().get()
        return try hashed.get()
    }

    private static func hash(_ fd: Int32) throws(Errno) -> (bytes: Int64, sha256: String) {
        Syscalls.adviseSequential(fd)
        var hasher = SHA256()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 4096)
        defer { buffer.deallocate() }
        var total: Int64 = 0
        var offset: Int64 = 0
        while true {
            let count = try Syscalls.pread(fd, into: buffer, at: offset)
            if count == 0 { break }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            total += Int64(count)
            offset += Int64(count)
        }
        return (total, hasher.finalize().hexString)
    }
}
