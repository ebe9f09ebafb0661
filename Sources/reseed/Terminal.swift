#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Reseed
import ReseedSystem
import Synchronization
import SystemPackage

/// The process's standard streams, written with `write(2)` and every failure handled.
///
/// `FileHandle.write(_:)` traps when a write fails (a full disk, a closed pipe), killing the
/// process after its work is done; these functions return or throw instead. The CLI ignores
/// `SIGPIPE` (see ``ReseedCommand/main()``), so a reader that went away is an `EPIPE` here.
enum Terminal {
    /// Writes `line` and a newline to stdout.
    ///
    /// - Throws: ``OutputError`` when the bytes cannot all be written.
    static func out(_ line: String) throws(OutputError) {
        try write(Array((line + "\n").utf8), to: .standardOutput)
    }

    /// Writes `bytes` to stdout as they are.
    ///
    /// - Throws: ``OutputError`` when the bytes cannot all be written.
    static func out(_ bytes: some Sequence<UInt8>) throws(OutputError) {
        try write(Array(bytes), to: .standardOutput)
    }

    /// Writes `reseed: line` to stderr; false when stderr cannot be written (there is nowhere
    /// left to say so: the exit status still tells).
    @discardableResult
    static func error(_ line: String) -> Bool {
        (try? write(Array(("reseed: " + line + "\n").utf8), to: .standardError)) != nil
    }

    /// Writes diagnostic text (progress) to stderr as it is; false when stderr cannot be written.
    @discardableResult
    static func diagnostic(_ text: String) -> Bool {
        (try? write(Array(text.utf8), to: .standardError)) != nil
    }

    static var stderrIsTerminal: Bool { isatty(Stream.standardError.rawValue) == 1 }

    /// A standard stream.
    enum Stream: Int32 {
        case standardOutput = 1
        case standardError = 2

        var name: String { self == .standardOutput ? "stdout" : "stderr" }
    }

    /// `write(2)` until every byte is written: a short write goes on, `EINTR` is retried, and a
    /// non-blocking descriptor that is full (`EAGAIN`) is waited for with `poll(2)`.
    static func write(_ bytes: [UInt8], to stream: Stream) throws(OutputError) {
        var failure: Int32?
        bytes.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count, let base = buffer.baseAddress {
                let count = system_write(stream.rawValue, base + done, buffer.count - done)
                if count > 0 {
                    done += count
                    continue
                }
                let code = count == 0 ? EIO : errno
                switch code {
                case EINTR:
                    continue
                case EAGAIN, EWOULDBLOCK:
                    var request = pollfd(fd: stream.rawValue, events: Int16(POLLOUT), revents: 0)
                    if poll(&request, 1, -1) < 0, errno != EINTR {
                        failure = errno
                        return
                    }
                default:
                    failure = code
                    return
                }
            }
        }
        if let failure { throw OutputError(stream: stream, code: failure) }
    }
}

/// A write to stdout or stderr failed.
struct OutputError: Error, CustomStringConvertible {
    var stream: Terminal.Stream
    /// The `errno` of the failed call.
    var code: Int32

    /// "stdout: cannot write: no space left on device; the command ran, but its output was lost".
    var description: String {
        ErrorSentence(location: stream.name, what: "cannot write", why: Errno(rawValue: code).phrase,
                      advice: "the command ran, but its output was lost").description
    }
}

/// `write(2)` itself, outside Swift's overloads.
private func system_write(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Darwin)
    Darwin.write(fd, buffer, count)
    #elseif canImport(Musl)
    Musl.write(fd, buffer, count)
    #else
    Glibc.write(fd, buffer, count)
    #endif
}

/// Progress text on stderr that stops, without failing the command, once stderr cannot be written.
final class ProgressOutput: Sendable {
    private let enabled = Mutex(true)

    /// Writes `text` unless an earlier write failed.
    func write(_ text: String) {
        enabled.withLock { enabled in
            if enabled { enabled = Terminal.diagnostic(text) }
        }
    }
}
