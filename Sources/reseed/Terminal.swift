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
        try write(Array((line + "\n").utf8), to: .output)
    }

    /// Writes `bytes` to stdout as they are.
    ///
    /// - Throws: ``OutputError`` when the bytes cannot all be written.
    static func out(_ bytes: some Sequence<UInt8>) throws(OutputError) {
        try write(Array(bytes), to: .output)
    }

    /// Writes `reseed: line` to stderr; false when stderr cannot be written (there is nowhere
    /// left to say so: the exit status still tells).
    @discardableResult
    static func error(_ line: String) -> Bool {
        (try? write(Array(("reseed: " + line + "\n").utf8), to: .error)) != nil
    }

    /// Writes diagnostic text (progress) to stderr as it is; false when stderr cannot be written.
    @discardableResult
    static func diagnostic(_ text: String) -> Bool {
        (try? write(Array(text.utf8), to: .error)) != nil
    }

    static var stderrIsTerminal: Bool { StandardStream.error.isTerminal }

    /// Writes every byte to `stream` (see `StandardStream.write(_:)`: short writes go on, `EINTR`
    /// is retried, a full non-blocking stream is waited for).
    static func write(_ bytes: [UInt8], to stream: StandardStream) throws(OutputError) {
        do throws(Errno) {
            try stream.write(bytes)
        } catch {
            throw OutputError(stream: stream, errno: error)
        }
    }
}

/// A write to stdout or stderr failed.
struct OutputError: Error, CustomStringConvertible {
    var stream: StandardStream
    /// The `errno` of the failed call.
    var errno: Errno

    /// "stdout: cannot write: no space left on device; the command ran, but its output was lost".
    var description: String {
        ErrorSentence(location: stream.name, what: "cannot write", why: errno.phrase,
                      advice: "the command ran, but its output was lost").description
    }
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
