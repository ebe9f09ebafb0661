import SystemPackage

/// The process's standard output or standard error, written with `write(2)` through the seam.
///
/// `FileHandle.write(_:)` traps when a write fails (a full disk, a closed pipe), killing the
/// process after its work is done; ``write(_:)`` throws instead. A tool that ignores `SIGPIPE`
/// sees a reader that went away as `EPIPE`.
///
/// ```swift
/// try StandardStream.output.write(Array("done\n".utf8))
/// ```
package enum StandardStream: Sendable {
    case output
    case error

    /// "stdout" or "stderr".
    package var name: String { self == .output ? "stdout" : "stderr" }

    /// `isatty(3)`: whether the stream is a terminal.
    package var isTerminal: Bool { Syscalls.isTerminal(descriptor) }

    /// `write(2)` until every byte is written: a short write goes on, `EINTR` is retried, and a
    /// non-blocking stream that is full (`EAGAIN`) is waited for with `poll(2)`.
    ///
    /// - Throws: `Errno` of the failed `write(2)` or `poll(2)`; `EIO` for a write of nothing.
    package func write(_ bytes: [UInt8]) throws(Errno) {
        try Syscalls.writeAllWaiting(descriptor, bytes)
    }

    /// `STDOUT_FILENO` or `STDERR_FILENO`.
    private var descriptor: Int32 { self == .output ? 1 : 2 }
}
