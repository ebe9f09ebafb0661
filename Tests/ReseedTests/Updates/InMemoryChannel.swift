import Foundation
@testable import Reseed
import ReseedSystem
import ReseedTestSupport
import Synchronization

/// A channel folder served in memory: an updater reaches it through its transport
/// (``HTTPTransport``), with no socket, no server process and no waiting.
///
/// It answers as `channel_server.py` does: `ETag` (of the bytes) and `Last-Modified`, `304` to a
/// matching `If-None-Match` (or, without one, to an `If-Modified-Since` not older than the file),
/// `206` to a `Range` honouring `If-Range`, `416` past the end, `404` for a file it does not have.
/// It plays the script's switches about what the server says (`status`, `cut`, `once`,
/// `rangeStatus`, `ignoreRange`, `rangeFlipped`, `contentRange`, `validators`) and refuses the
/// ones about time and the wire (`hang`, `stall`, `trickle`, `rate`, `oversize`, `gzip`,
/// `redirect`): those tests run against ``ChannelServer``, where the HTTP engine is under test.
final class InMemoryChannel: ChannelHost, HTTPTransport, Sendable {
    /// What the script's switches ask, as far as this host plays them.
    struct Switches: Sendable {
        var status: [String: Int] = [:]
        var cut: [String: Int] = [:]
        var once: [String: String] = [:]
        var rangeStatus: [String: Int] = [:]
        var ignoreRange: Set<String> = []
        var rangeFlipped: Set<String> = []
        var contentRange: [String: String] = [:]
        var etag = true
        var lastModified: String?
        var date: String?

        init() {}

        init(_ control: [String: Any]) throws {
            for (name, value) in control {
                switch name {
                case "status": status = try Self.read(value, as: [String: Int].self, name)
                case "cut": cut = try Self.read(value, as: [String: Int].self, name)
                case "once": once = try Self.read(value, as: [String: String].self, name)
                case "rangeStatus": rangeStatus = try Self.read(value, as: [String: Int].self, name)
                case "ignoreRange": ignoreRange = Set(try Self.read(value, as: [String].self, name))
                case "rangeFlipped": rangeFlipped = Set(try Self.read(value, as: [String].self, name))
                case "contentRange": contentRange = try Self.read(value, as: [String: String].self, name)
                case "validators":
                    let validators = try Self.read(value, as: [String: Any].self, name)
                    etag = validators["etag"] as? Bool ?? true
                    lastModified = validators["lastModified"] as? String
                    date = validators["date"] as? String
                default:
                    throw Refusal(message: "the in-memory channel does not play '\(name)': test it against ChannelServer")
                }
            }
        }

        private static func read<T>(_ value: Any, as type: T.Type, _ name: String) throws -> T {
            guard let typed = value as? T else { throw Refusal(message: "the switch '\(name)' is not a \(T.self)") }
            return typed
        }
    }

    /// A switch this host cannot play, or one written wrong.
    struct Refusal: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    /// One answer: the status line, the headers (names lowercased), the body, and where it is cut.
    private struct Answer {
        var status: Int
        var headers: [String: String]
        var body = Data()
        var cut: Int?
    }

    private struct State {
        var switches = Switches()
        var stopped = false
        var requests: [ChannelRequest] = []
        /// (path, body bytes sent) for each response that ended.
        var sent: [(path: String, bytes: Int)] = []
    }

    /// `http://channel.invalid/`: the `.invalid` top-level domain never resolves, so a request
    /// that missed this transport fails at once.
    let url: URL
    private let root: URL
    private let state = Mutex(State())

    init(root: URL) throws {
        guard let url = URL(string: "http://channel.invalid/") else { throw Refusal(message: "no URL for the in-memory channel") }
        self.url = url
        self.root = root
    }

    func set(_ control: [String: Any]) throws {
        let switches = try Switches(control)
        state.withLock { $0.switches = switches }
    }

    func requests() throws -> [ChannelRequest] {
        state.withLock { $0.requests }
    }

    func bodyBytesSent(to path: String, timeout: Duration) throws -> [Int] {
        state.withLock { $0.sent.filter { $0.path == path }.map(\.bytes) }
    }

    func stop() {
        state.withLock { $0.stopped = true }
    }

    func configure(_ configuration: inout ChannelUpdater.Configuration) {
        configuration.transport = self
    }

    func get(
        _ request: HTTPTransfer.Request,
        onResponse: @escaping @Sendable (HTTPTransfer.Response) throws(ReseedError) -> Void,
        onData: @escaping @Sendable (Data) throws(ReseedError) -> Void
    ) async throws(ReseedError) -> HTTPTransfer.Response {
        // On a thread of its own, as libcurl's callbacks come: what they do must not lean on the caller's.
        try await offload("reseed-test-channel") { () throws(ReseedError) in
            try self.serve(request, onResponse: onResponse, onData: onData)
        }
    }

    private func serve(
        _ request: HTTPTransfer.Request,
        onResponse: @Sendable (HTTPTransfer.Response) throws(ReseedError) -> Void,
        onData: @Sendable (Data) throws(ReseedError) -> Void
    ) throws(ReseedError) -> HTTPTransfer.Response {
        let prefix = url.absoluteString
        let address = request.url.absoluteString
        guard address.hasPrefix(prefix), !state.withLock({ $0.stopped }) else {
            throw ReseedError(.download, step: request.step, url: request.url, message: "cannot connect: the in-memory channel does not answer")
        }
        let name = String(address.dropFirst(prefix.count))
        func header(_ field: String) -> String? { request.headers.first { $0.key.lowercased() == field.lowercased() }?.value }
        let switches = state.withLock { state in
            defer { state.switches.once[name] = nil }
            return state.switches
        }
        let answer = answer(name, switches: switches, range: header("Range"), ifRange: header("If-Range"),
                            ifNoneMatch: header("If-None-Match"), ifModifiedSince: header("If-Modified-Since"))
        let path = "/" + name
        state.withLock {
            $0.requests.append(ChannelRequest(method: "GET", path: path, range: header("Range"), ifRange: header("If-Range"),
                                              ifNoneMatch: header("If-None-Match"), ifModifiedSince: header("If-Modified-Since"),
                                              status: answer.status))
        }
        let sent = Mutex(0)
        defer { state.withLock { $0.sent.append((path, sent.withLock { $0 })) } }
        let response = HTTPTransfer.Response(status: answer.status, headers: answer.headers)
        try onResponse(response)
        let end = min(answer.cut ?? answer.body.count, answer.body.count)
        var offset = 0
        while offset < end {
            let piece = Data(answer.body[offset..<min(offset + 64 << 10, end)])
            try onData(piece)
            offset += piece.count
            sent.withLock { $0 = offset }
        }
        if end < answer.body.count {
            throw ReseedError(.download, step: request.step, url: request.url,
                              message: "the connection broke: transfer closed with \(answer.body.count - end) bytes remaining to read")
        }
        return response
    }

    /// What `channel_server.py` answers to a GET of `name`.
    private func answer(_ name: String, switches: Switches, range wanted: String?, ifRange: String?,
                        ifNoneMatch: String?, ifModifiedSince: String?) -> Answer {
        if let status = switches.status[name] { return Self.text(status, "switched to \(status)\n") }
        if wanted != nil, let status = switches.rangeStatus[name] { return Self.text(status, "switched to \(status)\n") }
        let file = root.appendingPathComponent(switches.once[name] ?? name)
        guard !name.isEmpty, !name.contains("/"), !name.hasPrefix("."),
              let body = try? Data(contentsOf: file), let sha256 = try? fileSHA256(file),
              let modifiedAt = (try? FileManager.default.attributesOfItem(atPath: file.path))?[.modificationDate] as? Date else {
            return Self.text(404, "not found\n")
        }
        let etag = switches.etag ? "\"\(sha256.prefix(16))\"" : nil
        let modified = switches.lastModified ?? Self.httpDate(modifiedAt)
        var headers = ["last-modified": modified, "date": switches.date ?? Self.httpDate(Date())]
        if let etag { headers["etag"] = etag }
        if let tags = ifNoneMatch {
            let matches = tags.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            if tags.trimmingCharacters(in: .whitespaces) == "*" || (etag.map(matches.contains) ?? false) {
                return Answer(status: 304, headers: headers.merging(["content-length": "0"]) { $1 })
            }
        } else if let since = ifModifiedSince.flatMap(HTTPDate.seconds), let seconds = HTTPDate.seconds(modified), seconds <= since {
            return Answer(status: 304, headers: headers.merging(["content-length": "0"]) { $1 })
        }
        let size = body.count
        var (start, end, status) = (0, size - 1, 200)
        if let wanted, !switches.ignoreRange.contains(name), ifRange == nil || ifRange == etag || ifRange == modified {
            let bounds = wanted.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "bytes=", with: "").split(separator: "-", omittingEmptySubsequences: false)
            start = bounds.first.flatMap { Int($0) } ?? 0
            end = bounds.count > 1 ? Int(bounds[1]).map { min($0, size - 1) } ?? size - 1 : size - 1
            if start >= size {
                return Answer(status: 416, headers: ["content-range": "bytes */\(size)", "content-length": "0"])
            }
            status = 206
        }
        headers["accept-ranges"] = "bytes"
        headers["content-length"] = String(end - start + 1)
        if status == 206 { headers["content-range"] = switches.contentRange[name] ?? "bytes \(start)-\(end)/\(size)" }
        var sent = start <= end ? Data(body[start...end]) : Data()
        if status == 206, switches.rangeFlipped.contains(name) { sent = Data(sent.map { $0 ^ 0xFF }) }
        return Answer(status: status, headers: headers, body: sent, cut: switches.cut[name])
    }

    private static func text(_ status: Int, _ text: String) -> Answer {
        // A 304 has no body, as channel_server.py sends it.
        let body = status == 304 ? Data() : Data(text.utf8)
        return Answer(status: status, headers: ["content-type": "text/plain", "content-length": String(body.count)], body: body)
    }

    /// An IMF-fixdate, as servers send `Date` and `Last-Modified`.
    private static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}

extension ChannelSandbox {
    /// A sandbox whose channel is served in memory (``InMemoryChannel``).
    static func inMemory() throws -> ChannelSandbox {
        try ChannelSandbox(host: { root, _ in try InMemoryChannel(root: root) })
    }
}
