import SystemPackage

/// An open file descriptor owned by exactly one value, closed exactly once.
///
/// The descriptor is closed by ``close()`` (which reports `close(2)`'s error) or, when
/// the value ends without it, by `deinit` (whose error nobody could act on). It cannot be
/// copied, and `close()` consumes it: a second close, which on Linux could close a
/// descriptor another thread has just been given the same number for, does not compile.
///
/// ```swift
/// let file = try directory.createExclusive(name)
/// try directory.write(bytes, to: file.raw, name: name)
/// try file.close()   // `file` cannot be used after this line
/// ```
package struct OwnedDescriptor: ~Copyable, Sendable {
    /// The descriptor number, for a system call while this value is alive. Never close it directly.
    package let raw: Int32

    /// Takes ownership of `raw`, which nobody else may close.
    package init(adopting raw: Int32) {
        self.raw = raw
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
