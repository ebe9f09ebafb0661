#if canImport(FoundationNetworking)
import CReseedCurl
import Foundation
import ReseedSystem
import Synchronization

/// The engine of ``HTTPTransfer`` on Linux: each GET a ``CurlExchange``.
struct CurlTransport: HTTPTransport {
    func get(
        _ request: HTTPTransfer.Request,
        onResponse: @escaping @Sendable (HTTPTransfer.Response) throws(ReseedError) -> Void,
        onData: @escaping @Sendable (Data) throws(ReseedError) -> Void
    ) async throws(ReseedError) -> HTTPTransfer.Response {
        try await CurlExchange(request, onResponse: onResponse, onData: onData).run()
    }
}

/// One GET through libcurl, called directly.
///
/// `curl_easy_perform` runs on a thread of its own (never Swift's cooperative pool); the
/// awaiting task resumes when it returns. libcurl calls back on that thread with header lines
/// (gathered into the final response, past `1xx` and the redirects libcurl follows, and handed
/// to `onResponse` at the blank line that ends them), with pieces of the body (`onData`) and
/// with progress, at least once a second, where the idle timeout, the deadline, the minimum rate
/// (``HTTPTransfer/Exchange``'s check, rather than libcurl's own `CURLOPT_LOW_SPEED_LIMIT`: the same
/// check and sentence as the `URLSession` engine) and a cancellation end the transfer. Any callback that refuses ends it at once: libcurl reads
/// nothing more. libcurl adds no `Accept-Encoding` of its own and decodes no body
/// (`CURLOPT_HTTP_CONTENT_DECODING` off): what `onData` gets is the bytes on the wire.
final class CurlExchange: Sendable {
    /// The largest header section kept (libcurl bounds each line; this bounds their number).
    static let maximumHeaderBytes = 256 << 10
    /// The largest body of a response that is not the final one (a redirect's) that is read and dropped.
    static let maximumIgnoredBodyBytes = 64 << 10

    /// The exchange, and the header lines of the response that is arriving (libcurl hands them over one at a time).
    private struct State {
        var exchange: HTTPTransfer.Exchange
        /// The status of the response whose header lines are arriving.
        var status: Int?
        var headers: [String: String] = [:]
        var lastName: String?
        var headerBytes = 0
        var ignoredBodyBytes = 0
    }

    private let request: HTTPTransfer.Request
    private let onResponse: @Sendable (HTTPTransfer.Response) throws(ReseedError) -> Void
    private let onData: @Sendable (Data) throws(ReseedError) -> Void
    private let state: Mutex<State>

    init(_ request: HTTPTransfer.Request,
         onResponse: @escaping @Sendable (HTTPTransfer.Response) throws(ReseedError) -> Void,
         onData: @escaping @Sendable (Data) throws(ReseedError) -> Void) {
        self.request = request
        self.onResponse = onResponse
        self.onData = onData
        self.state = Mutex(State(exchange: HTTPTransfer.Exchange(request)))
    }

    /// Runs the transfer on a thread of its own; a cancelled task stops it within a second.
    func run() async throws(ReseedError) -> HTTPTransfer.Response {
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<HTTPTransfer.Response, ReseedError>, Never>) in
                // Without a thread of its own, the transfer runs here, on the task's thread.
                if !spawnThread("reseed-transfer", { continuation.resume(returning: self.perform()) }) {
                    continuation.resume(returning: self.perform())
                }
            }
        } onCancel: {
            self.state.withLock { $0.exchange.cancelled = true }
        }
        return try result.get()
    }

    /// A failure before the transfer began (libcurl cannot be loaded or set up).
    private func failure(_ message: String) -> ReseedError {
        ReseedError(.download, step: request.step, url: request.url, message: message)
    }

    private func perform() -> Result<HTTPTransfer.Response, ReseedError> {
        guard reseed_curl_load() == 0 else {
            return .failure(failure("cannot use libcurl: \(String(cString: reseed_curl_load_error()))"))
        }
        guard let handle = reseed_curl_easy_init() else { return .failure(failure("libcurl cannot start a transfer (curl_easy_init)")) }
        defer { reseed_curl_easy_cleanup(handle) }
        var list: UnsafeMutableRawPointer?
        defer { reseed_curl_slist_free_all(list) }
        // libcurl sends no User-Agent of its own; some hosts refuse a request without one.
        var lines = request.headers
        if !lines.keys.contains(where: { $0.lowercased() == "user-agent" }) { lines["User-Agent"] = "Reseed" }
        for (name, value) in lines.sorted(by: { $0.key < $1.key }) {
            guard let longer = reseed_curl_slist_append(list, "\(name): \(value)") else {
                return .failure(failure("libcurl cannot build the request headers (curl_slist_append)"))
            }
            list = longer
        }
        var errorText = [CChar](repeating: 0, count: Int(RESEED_CURL_ERROR_SIZE))
        let context = Unmanaged.passUnretained(self).toOpaque()
        let code = errorText.withUnsafeMutableBufferPointer { buffer -> Int32 in
            let configured = configure(handle, headers: list, errorBuffer: buffer.baseAddress, context: context)
            let code = configured != RESEED_CURLE_OK ? configured : reseed_curl_perform(handle)
            // The buffer lives only in this closure: libcurl must not keep its address.
            _ = reseed_curl_setopt_pointer(handle, RESEED_CURLOPT_ERRORBUFFER, nil)
            return code
        }
        let written = errorText.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        let detail = inSentence(written.isEmpty ? String(cString: reseed_curl_strerror(code)) : String(decoding: written, as: UTF8.self))
        return outcome(code, detail: detail)
    }

    /// Sets every option; returns the first failing CURLcode, or CURLE_OK.
    private func configure(_ handle: UnsafeMutableRawPointer, headers: UnsafeMutableRawPointer?,
                           errorBuffer: UnsafeMutablePointer<CChar>?, context: UnsafeMutableRawPointer) -> Int32 {
        let milliseconds = Self.milliseconds(request.timeout)
        let settings: [() -> Int32] = [
            { self.request.url.absoluteString.withCString { reseed_curl_setopt_pointer(handle, RESEED_CURLOPT_URL, $0) } },
            { reseed_curl_setopt_pointer(handle, RESEED_CURLOPT_ERRORBUFFER, errorBuffer) },
            { reseed_curl_setopt_pointer(handle, RESEED_CURLOPT_HTTPHEADER, headers) },
            { reseed_curl_setopt_long(handle, RESEED_CURLOPT_HTTPGET, 1) },
            { reseed_curl_setopt_long(handle, RESEED_CURLOPT_NOSIGNAL, 1) },
            { reseed_curl_setopt_long(handle, RESEED_CURLOPT_HTTP_CONTENT_DECODING, 0) },
            { reseed_curl_setopt_long(handle, RESEED_CURLOPT_FOLLOWLOCATION, 1) },
            { reseed_curl_setopt_long(handle, RESEED_CURLOPT_MAXREDIRS, 20) },
            { reseed_curl_setopt_long(handle, RESEED_CURLOPT_CONNECTTIMEOUT_MS, milliseconds) },
            { Self.allowHTTPOnly(handle, names: RESEED_CURLOPT_PROTOCOLS_STR, bits: RESEED_CURLOPT_PROTOCOLS) },
            { Self.allowHTTPOnly(handle, names: RESEED_CURLOPT_REDIR_PROTOCOLS_STR, bits: RESEED_CURLOPT_REDIR_PROTOCOLS) },
            {
                // A proxy's own "200 Connection established" is not the answer (libcurl 7.54 and later).
                let code = reseed_curl_setopt_long(handle, RESEED_CURLOPT_SUPPRESS_CONNECT_HEADERS, 1)
                return code == RESEED_CURLE_UNKNOWN_OPTION ? RESEED_CURLE_OK : code
            },
            {
                reseed_curl_set_callbacks(handle, { data, size, count, context in
                    guard let data, let context else { return 0 }
                    let bytes = UnsafeRawBufferPointer(start: data, count: size * count)
                    return Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue().headerLine(bytes) ? size * count : 0
                }, { data, size, count, context in
                    guard let data, let context else { return 0 }
                    let bytes = UnsafeRawBufferPointer(start: data, count: size * count)
                    return Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue().body(bytes) ? size * count : 0
                }, { context, _, _, _, _ in
                    guard let context else { return 1 }
                    return Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue().goesOn() ? 0 : 1
                }, context)
            },
        ]
        for setting in settings {
            let code = setting()
            if code != RESEED_CURLE_OK { return code }
        }
        return RESEED_CURLE_OK
    }

    /// `duration` in whole milliseconds for a libcurl `long` option: at least 1, and clamped
    /// rather than overflowing for a duration of centuries.
    static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 1 }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow, whole <= Int64(Int32.max) else { return Int(Int32.max) }
        return max(1, Int(whole) + Int(attoseconds / 1_000_000_000_000_000))
    }

    /// Limits `handle` to http and https, by name (libcurl 7.85 and later) or by bit mask.
    private static func allowHTTPOnly(_ handle: UnsafeMutableRawPointer, names: Int32, bits: Int32) -> Int32 {
        let code = "http,https".withCString { reseed_curl_setopt_pointer(handle, names, $0) }
        return code == RESEED_CURLE_UNKNOWN_OPTION ? reseed_curl_setopt_long(handle, bits, RESEED_CURLPROTO_HTTP_HTTPS) : code
    }

    /// One header line (a status line, a field, or the blank line that ends a response's headers).
    private func headerLine(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let line = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: CharacterSet(charactersIn: "\r\n"))
        let final: HTTPTransfer.Response? = state.withLock { state in
            state.exchange.heard()
            state.headerBytes += bytes.count
            guard state.exchange.goesOn, state.exchange.response == nil else { return nil }
            if state.headerBytes > Self.maximumHeaderBytes {
                state.exchange.stop("the server's response headers are over \(Self.maximumHeaderBytes) bytes")
                return nil
            }
            if line.hasPrefix("HTTP/") {
                let parts = line.split(separator: " ", maxSplits: 2)
                state.status = parts.count >= 2 ? Int(parts[1]) : nil
                state.headers = [:]
                state.lastName = nil
                return nil
            }
            guard let status = state.status else { return nil }
            if line.isEmpty {
                state.status = nil
                // libcurl goes on past an interim answer and past any 3xx with a Location.
                if (100..<200).contains(status) || ((300..<400).contains(status) && !(state.headers["location"] ?? "").isEmpty) { return nil }
                let response = HTTPTransfer.Response(status: status, headers: state.headers)
                state.exchange.answered(response)
                return response
            }
            if line.first == " " || line.first == "\t", let name = state.lastName {
                state.headers[name, default: ""] += " " + line.trimmingCharacters(in: .whitespaces)
                return nil
            }
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            state.headers[name] = state.headers[name].map { $0 + ", " + value } ?? value
            state.lastName = name
            return nil
        }
        if let final {
            do {
                try onResponse(final)
            } catch {
                state.withLock { $0.exchange.stop(error) }
                return false
            }
        }
        return state.withLock { $0.exchange.goesOn }
    }

    /// One piece of a body: the final response's goes to `onData`, a redirect's is dropped.
    private func body(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let deliver = state.withLock { state -> Bool in
            state.exchange.heard()
            guard state.exchange.goesOn else { return false }
            if state.exchange.response == nil {
                state.ignoredBodyBytes += bytes.count
                if state.ignoredBodyBytes > Self.maximumIgnoredBodyBytes {
                    state.exchange.stop("the server sent over \(Self.maximumIgnoredBodyBytes) bytes of body before its final answer")
                }
                return false
            }
            state.exchange.delivered(bytes.count)
            return true
        }
        guard deliver else { return state.withLock { $0.exchange.goesOn } }
        do {
            try onData(Data(bytes))
            return true
        } catch {
            state.withLock { $0.exchange.stop(error) }
            return false
        }
    }

    /// libcurl's progress call: false ends the transfer (cancelled, past the deadline, silent too
    /// long, or under the minimum rate).
    private func goesOn() -> Bool {
        let now = ContinuousClock.now
        return state.withLock { $0.exchange.check(at: now, checkingIdle: true) }
    }

    private func outcome(_ code: Int32, detail: String) -> Result<HTTPTransfer.Response, ReseedError> {
        state.withLock { state in
            let exchange = state.exchange
            let engineFailure: String? = switch code {
            case RESEED_CURLE_OK: nil
            case RESEED_CURLE_OPERATION_TIMEDOUT: exchange.timedOut(answered: false)
            case RESEED_CURLE_COULDNT_RESOLVE_HOST, RESEED_CURLE_COULDNT_RESOLVE_PROXY, RESEED_CURLE_COULDNT_CONNECT: "cannot connect: \(detail)"
            case RESEED_CURLE_TOO_MANY_REDIRECTS: "too many redirects: \(detail)"
            default: exchange.response != nil ? "the connection broke: \(detail)" : "the request failed: \(detail)"
            }
            return exchange.result(engineFailure: engineFailure)
        }
    }
}
#endif
