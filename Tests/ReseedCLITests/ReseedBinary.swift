#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Reseed
import ReseedSystem
import ReseedTestSupport

/// The built `reseed` executable, run as a real process.
enum ReseedBinary {
    /// The executable beside the test runner (SwiftPM builds it: the test target depends on it).
    static let url: URL = {
        let runnerFolder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [
            runnerFolder.appendingPathComponent("reseed"),
            Bundle.main.bundleURL.appendingPathComponent("reseed"),
            packageRoot.appendingPathComponent(".build/debug/reseed"),
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
    }()

    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        var stderrLines: [Substring] { stderr.split(separator: "\n") }
    }

    /// Starts `reseed arguments…` in `directory`; stdout and stderr are read concurrently, so neither pipe can fill and block it.
    ///
    /// `standardOutput` or `standardError`, when given, replace that pipe (`/dev/full`, a pipe already
    /// closed): the result then has no text for it. `environment` is added to this process's.
    static func start(_ arguments: [String], in directory: URL? = nil, executable: URL = url, prefix: [String] = [],
                      standardOutput: FileHandle? = nil, standardError: FileHandle? = nil,
                      environment: [String: String] = [:]) throws -> Running {
        let process = Process()
        process.executableURL = prefix.isEmpty ? executable : URL(fileURLWithPath: prefix[0])
        process.arguments = prefix.isEmpty ? arguments : Array(prefix.dropFirst()) + [executable.path] + arguments
        if let directory { process.currentDirectoryURL = directory }
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = standardOutput == nil ? Pipe() : nil
        let err = standardError == nil ? Pipe() : nil
        process.standardOutput = out ?? standardOutput
        process.standardError = err ?? standardError
        process.standardInput = FileHandle.nullDevice
        let running = Running(process: process, out: out, err: err)
        try process.run()
        running.startReading()
        return running
    }

    static func run(_ arguments: [String], in directory: URL? = nil) throws -> Result {
        try start(arguments, in: directory).wait()
    }

    final class Running: @unchecked Sendable {
        // @unchecked: the collected data is written by one reader thread each and read only after both signalled the group.
        let process: Process
        private let out: Pipe?
        private let err: Pipe?
        private let group = DispatchGroup()
        private var outData = Data()
        private var errData = Data()

        init(process: Process, out: Pipe?, err: Pipe?) {
            self.process = process
            self.out = out
            self.err = err
        }

        /// Reads each pipe to its end on a thread of its own: a read that blocks for the whole run
        /// on `DispatchQueue.global()` would hold a thread the tests' async tasks need.
        func startReading() {
            if let out {
                group.enter()
                startDetachedThread("test-stdout") { self.outData = readToEnd(out.fileHandleForReading); self.group.leave() }
            }
            if let err {
                group.enter()
                startDetachedThread("test-stderr") { self.errData = readToEnd(err.fileHandleForReading); self.group.leave() }
            }
        }

        func kill() {
            Glibc.kill(process.processIdentifier, SIGKILL)
        }

        func wait() -> Result {
            process.waitUntilExit()
            group.wait()
            return Result(status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                          stderr: String(decoding: errData, as: UTF8.self))
        }
    }
}

/// A `--json` line decoded.
func jsonObject(_ text: String) throws -> [String: Any] {
    let object = try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
    guard let dictionary = object as? [String: Any] else { throw CocoaError(.propertyListReadCorrupt) }
    return dictionary
}
