import SystemPackage

/// An open file descriptor owned by exactly one value, closed exactly once.
///
/// The descriptor is closed by ``close()`` (which reports `close(2)`'s error) or, when
/// the value ends without it, by `deinit` (whose error nobody could act on). It cannot be
/// copied, and `close()` consumes it: a second close, which on Linux could close a
/// descriptor another thread has just been given the same number for, does not compile.
///
/// Its number never leaves this module: callers read, write and examine the file through the
/// methods below and ``Directory``'s, which borrow the value, so the file stays open for as long
/// as a call uses it. Work that outlives one scope (an async download, a thread of its own)
/// shares it as a ``SharedDescriptor``.
///
/// ```swift
/// let file = try directory.createExclusive(name)
/// try directory.write(bytes, to: file, name: name)
/// try file.close()   // `file` cannot be used after this line
/// ```
package struct OwnedDescriptor: ~Copyable, Sendable {
    /// The descriptor number, for a system call while this value is alive. Never close it directly.
    let raw: Int32

    /// Takes ownership of `raw`, which nobody else may close.
    init(adopting raw: Int32) {
        self.raw = raw
    }

    /// Opens `path` (`openat(2)` from the working directory, with `O_CLOEXEC`), outside the
    /// file-system seam's observer: for files no durability depends on (a key to read, `/dev/null`).
    ///
    /// - Throws: `Errno` from `openat(2)`.
    package static func open(
        _ path: String, _ access: FileDescriptor.AccessMode, options: FileDescriptor.OpenOptions = []
    ) throws(Errno) -> OwnedDescriptor {
        OwnedDescriptor(adopting: try Syscalls.openat(Syscalls.currentDirectory, path, access, options))
    }

    /// `close(2)`, reporting its failure; the descriptor is released either way.
    ///
    /// - Throws: `Errno` from `close(2)` (a write error reported late, on some file systems).
    package consuming func close() throws(Errno) {
        let raw = self.raw
        discard self
        try Syscalls.close(raw)
    }

    deinit {
        try? Syscalls.close(raw)
    }
}

extension OwnedDescriptor {
    /// `fstat(2)`: what the open file is (its kind, size, owner, permissions).
    package func status() throws(Errno) -> FileStatus {
        try Syscalls.fstat(raw)
    }

    /// `read(2)` at the current offset into `buffer`; returns the count read, 0 at end of file.
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try Syscalls.read(raw, into: buffer)
    }

    /// `pread(2)` until `buffer` is full or end of file; returns the count read. The offset is left as it is.
    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(Errno) -> Int {
        try Syscalls.pread(raw, into: buffer, at: offset)
    }

    /// `pread(2)` of up to `count` bytes at `offset`; fewer at end of file.
    package func read(count: Int, at offset: Int64) throws(Errno) -> [UInt8] {
        try Syscalls.pread(raw, count: count, at: offset)
    }

    /// `write(2)` of all of `bytes` at the current offset, outside the seam's observer
    /// (``Directory/write(_:to:name:)`` is the observed write).
    func writeAll(_ bytes: [UInt8]) throws(Errno) {
        try Syscalls.writeAll(raw, bytes)
    }

    /// `write(2)` until all of `buffer` is written at the current offset, outside the seam's observer.
    func writeAll(_ buffer: UnsafeRawBufferPointer) throws(Errno) {
        try Syscalls.writeAll(raw, buffer)
    }

    /// `posix_fadvise(POSIX_FADV_SEQUENTIAL)`: a hint only, so failures are ignored.
    func adviseSequential() {
        Syscalls.adviseSequential(raw)
    }

    /// `sync_file_range(SYNC_FILE_RANGE_WRITE)` of `count` bytes from `offset`: starts writing
    /// them to disk now, without waiting. A hint only: failures are ignored.
    func startWriteback(from offset: Int64, count: Int64) {
        Syscalls.startWriteback(raw, from: offset, count: count)
    }

    /// `fchmod(2)`: sets exactly `permissions`, whatever the umask.
    package func setPermissions(_ permissions: FilePermissions) throws(Errno) {
        try Syscalls.fchmod(raw, permissions)
    }
}
