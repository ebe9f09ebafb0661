#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Reseed

/// A real web server from Debian, nginx or caddy, serving one channel folder as static files on
/// 127.0.0.1, as a mirror or a CDN would: its own `ETag`, `Last-Modified`, range and conditional
/// request handling, not `channel_server.py`'s. Started as the test's user, with its files in a
/// scratch folder; every request it answered is in ``requests()`` (read from its access log).
///
/// nginx also serves the folder on ``slowURL`` at 256 KB a second (`limit_rate`), so a download
/// cut there can be resumed from ``url``: the same files, hence the same validators.
///
/// It plays none of `channel_server.py`'s switches: ``set(_:)`` refuses any.
public final class WebServer: ChannelHost {
    public enum Kind: String, CaseIterable, Sendable, CustomStringConvertible {
        case nginx, caddy

        public var description: String { rawValue }

        /// The server's executable, or nil where it is not installed.
        public var executable: String? {
            let path = (ProcessInfo.processInfo.environment["PATH"] ?? "") + ":/usr/sbin:/usr/bin"
            return path.split(separator: ":").map { "\($0)/\(rawValue)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
        }
    }

    public let kind: Kind
    public let url: URL
    /// The same folder at 256 KB a second (nginx only).
    public let slowURL: URL?
    private let process: Process
    private let logURL: URL

    /// Starts `kind` on `root`, keeping its configuration, logs and temporary files in `scratch`.
    public init(_ kind: Kind, root: URL, scratch: URL) throws {
        guard let executable = kind.executable else { throw Self.failure("\(kind) is not installed") }
        self.kind = kind
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        logURL = scratch.appendingPathComponent("access.log")
        let errorLog = scratch.appendingPathComponent("error.log")
        let port = try Self.freePort(), slowPort = try Self.freePort()
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        var environment = ProcessInfo.processInfo.environment
        switch kind {
        case .nginx:
            let configuration = scratch.appendingPathComponent("nginx.conf")
            let temporary = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]
                .map { "\($0)_temp_path \(scratch.appendingPathComponent($0).path);" }.joined(separator: "\n  ")
            let server = { (port: Int, extra: String) in
                "server { listen 127.0.0.1:\(port); root \(root.path); location / { \(extra) } }"
            }
            try """
                daemon off;
                master_process off;
                pid \(scratch.appendingPathComponent("nginx.pid").path);
                error_log \(errorLog.path) info;
                events { worker_connections 64; }
                http {
                  \(temporary)
                  default_type application/octet-stream;
                  types { application/json json; }
                  log_format reseed escape=json '{"method":"$request_method","path":"$uri","range":"$http_range","ifRange":"$http_if_range",'
                    '"ifNoneMatch":"$http_if_none_match","ifModifiedSince":"$http_if_modified_since","status":$status,"sent":$body_bytes_sent}';
                  access_log \(logURL.path) reseed;
                  \(server(port, ""))
                  \(server(slowPort, "limit_rate 256k;"))
                }
                """.write(to: configuration, atomically: true, encoding: .utf8)
            process.arguments = ["-p", scratch.path, "-e", errorLog.path, "-c", configuration.path]
            slowURL = URL(string: "http://127.0.0.1:\(slowPort)/")
        case .caddy:
            let configuration = scratch.appendingPathComponent("Caddyfile")
            try """
                {
                  admin off
                  auto_https off
                }
                http://127.0.0.1:\(port) {
                  root * \(root.path)
                  file_server
                  log {
                    output file \(logURL.path)
                    format json
                  }
                }
                """.write(to: configuration, atomically: true, encoding: .utf8)
            process.arguments = ["run", "--config", configuration.path, "--adapter", "caddyfile"]
            for name in ["HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME"] { environment[name] = scratch.path }
            slowURL = nil
        }
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: Self.emptyFile(scratch.appendingPathComponent("stdout.log")))
        process.standardError = try FileHandle(forWritingTo: Self.emptyFile(scratch.appendingPathComponent("stderr.log")))
        try process.run()
        guard let url = URL(string: "http://127.0.0.1:\(port)/") else { throw Self.failure("no URL for port \(port)") }
        self.url = url

        // Ready once both ports accept a connection; at most 20 seconds.
        let deadline = ContinuousClock.now.advanced(by: .seconds(20))
        while !([port] + (slowURL == nil ? [] : [slowPort])).allSatisfy(Self.accepts) {
            guard process.isRunning, ContinuousClock.now < deadline else {
                stop()
                let said = [errorLog, scratch.appendingPathComponent("stderr.log")]
                    .compactMap { try? String(contentsOf: $0, encoding: .utf8) }.joined(separator: "\n")
                throw Self.failure("\(kind) did not start on port \(port): \(said.suffix(2_000))")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    deinit { stop() }

    /// Kills the server (SIGKILL, as ``ChannelServer``).
    public func stop() { process.killAndWait() }

    /// Refuses every switch: a real server plays none of `channel_server.py`'s.
    public func set(_ control: [String: Any]) throws {
        guard control.isEmpty else { throw Self.failure("\(kind) plays no switch: \(control.keys.sorted())") }
    }

    /// The requests answered so far, in order (as the access log lists them: once answered).
    public func requests() throws -> [ChannelRequest] {
        try entries().map(\.request)
    }

    public func bodyBytesSent(to path: String, timeout: Duration) throws -> [Int] {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            let sent = try entries().filter { $0.request.path == path }.map(\.sent)
            if !sent.isEmpty || ContinuousClock.now >= deadline { return sent }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// Nothing to set: an updater reaches the server through the platform's engine.
    public func configure(_ configuration: inout ChannelUpdater.Configuration) {}

    /// Each answered request and the body bytes sent for it.
    private func entries() throws -> [(request: ChannelRequest, sent: Int)] {
        guard let data = FileManager.default.contents(atPath: logURL.path) else { return [] }
        return try String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            switch kind {
            case .nginx:
                func header(_ name: String) -> String? { (object[name] as? String).flatMap { $0.isEmpty ? nil : $0 } }
                guard let method = header("method"), let path = header("path") else { return nil }
                return (ChannelRequest(method: method, path: path, range: header("range"), ifRange: header("ifRange"),
                                       ifNoneMatch: header("ifNoneMatch"), ifModifiedSince: header("ifModifiedSince"),
                                       status: object["status"] as? Int), object["sent"] as? Int ?? 0)
            case .caddy:
                // {"request": {"method", "uri", "headers": {"Range": [..]}}, "status", "size"}
                guard let request = object["request"] as? [String: Any], let method = request["method"] as? String,
                      let uri = request["uri"] as? String else { return nil }
                let headers = request["headers"] as? [String: [String]] ?? [:]
                func header(_ name: String) -> String? { headers[name]?.first }
                return (ChannelRequest(method: method, path: String(uri.prefix { $0 != "?" }), range: header("Range"), ifRange: header("If-Range"),
                                       ifNoneMatch: header("If-None-Match"), ifModifiedSince: header("If-Modified-Since"),
                                       status: object["status"] as? Int), object["size"] as? Int ?? 0)
            }
        }
    }

    /// A port of 127.0.0.1 nothing listens on now (the kernel's pick for a socket bound to port 0).
    private static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw failure("socket: errno \(errno)") }
        defer { close(socket) }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(socket, address, length) == 0 && getsockname(socket, address, &length) == 0
            }
        }
        guard bound else { throw failure("bind: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether 127.0.0.1:`port` accepts a connection.
    private static func accepts(_ port: Int) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return false }
        defer { close(socket) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// 127.0.0.1:`port` (0: any port).
    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return address
    }

    private static func emptyFile(_ url: URL) throws -> URL {
        try Data().write(to: url)
        return url
    }

    private static func failure(_ message: String) -> Error {
        CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: message])
    }
}
