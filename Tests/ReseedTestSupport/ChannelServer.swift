#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Reseed
import Synchronization

/// `channel_server.py`, serving one channel folder on an ephemeral port of 127.0.0.1 for one test:
/// the host of the tests where the HTTP itself is under test (libcurl's or `URLSession`'s timeouts,
/// redirects, a body refused on its headers) and of the tests that run `reseed`.
///
/// Switches (a cut connection, a hang, an error status, an oversized manifest, a gzip bomb,
/// validators of a host without ETag) are set with
/// ``set(_:)``; every request it received is in ``requests()``. It stops when released.
public final class ChannelServer: ChannelHost {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("channel_server.py")

    /// The channel's URL, with a final slash.
    public let url: URL
    private let process: Process
    private let controlURL: URL
    private let logURL: URL

    /// Starts the server on `root`, keeping its control and log files in `scratch`.
    public init(root: URL, scratch: URL) throws {
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        controlURL = scratch.appendingPathComponent("control.json")
        logURL = scratch.appendingPathComponent("requests.jsonl")
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Self.script.path, root.path, "--control", controlURL.path, "--log", logURL.path]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.standardError
        process.standardInput = FileHandle.nullDevice
        try process.run()

        // The first line is "PORT <n>"; wait for it at most 20 seconds.
        let line = LineReader(out.fileHandleForReading)
        guard let first = line.firstLine(timeout: 20), first.hasPrefix("PORT "), let port = Int(first.dropFirst(5)),
              let url = URL(string: "http://127.0.0.1:\(port)/") else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "channel_server.py did not say its port"])
        }
        self.url = url
    }

    deinit { stop() }

    /// Kills the server.
    public func stop() { process.killAndWait() }

    /// Replaces the switches: a JSON object as the script's documentation describes; `[:]` for none.
    public func set(_ control: [String: Any]) throws {
        let data = try JSONSerialization.data(withJSONObject: control)
        try data.write(to: controlURL, options: .atomic)
    }

    /// The requests received so far, in order.
    public func requests() throws -> [ChannelRequest] {
        try logLines().compactMap { line in
            guard let method = line["method"] as? String, let path = line["path"] as? String else { return nil }
            return ChannelRequest(method: method, path: path, range: line["range"] as? String, ifRange: line["ifRange"] as? String,
                           ifNoneMatch: line["ifNoneMatch"] as? String, ifModifiedSince: line["ifModifiedSince"] as? String,
                           status: line["status"] as? Int)
        }
    }

    /// The body bytes sent for each finished response to `path`, waiting up to `timeout` for at least one.
    public func bodyBytesSent(to path: String, timeout: Duration) throws -> [Int] {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            let sent = try logLines().compactMap { $0["done"] as? String == path ? $0["sent"] as? Int : nil }
            if !sent.isEmpty || ContinuousClock.now >= deadline { return sent }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// Nothing to set: an updater reaches the server through the platform's engine.
    public func configure(_ configuration: inout ChannelUpdater.Configuration) {}

    private func logLines() throws -> [[String: Any]] {
        guard let data = FileManager.default.contents(atPath: logURL.path) else { return [] }
        return try String(decoding: data, as: UTF8.self).split(separator: "\n").map { line in
            try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
        }
    }
}

extension Process {
    /// Kills the process, if it runs, and waits for it: SIGKILL, as a test runner's threads may block
    /// SIGTERM, and children inherit the mask.
    func killAndWait() {
        guard isRunning else { return }
        kill(processIdentifier, SIGKILL)
        waitUntilExit()
    }
}

/// Reads the first line of a pipe on another thread, so the wait for it can be bounded.
private final class LineReader: Sendable {
    private let handle: FileHandle
    private let done = DispatchSemaphore(value: 0)
    private let line = Mutex<String?>(nil)

    init(_ handle: FileHandle) {
        self.handle = handle
    }

    func firstLine(timeout seconds: Double) -> String? {
        Thread.detachNewThread { [self] in
            let bytes = readToEnd(handle, stopAfterNewline: true)
            line.withLock { $0 = String(decoding: bytes, as: UTF8.self).split(separator: "\n").first.map(String.init) }
            done.signal()
        }
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        return line.withLock { $0 }
    }
}
