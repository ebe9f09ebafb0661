#if canImport(FoundationNetworking)
import CReseedCurl
import Foundation
import ReseedSystem
import Synchronization

/// One GET through libcurl, called directly: the engine of ``HTTPTransfer`` on Linux.
///
/// `curl_easy_perform` runs on a thread of its own (never Swift's cooperative pool); the
/// awaiting task resumes when it returns. libcurl calls back on that thread with header lines
/// (gathered into the final response, past `1xx` and the redirects libcurl follows, and handed
/// to `onResponse` at the blank line that ends them), with pieces of the body (`onData`) and
/// with progress, at least once a second, where the idle timeout, the deadline, the minimum rate
/// (``HTTPTransfer/RateWindow``, rather than libcurl's own `CURLOPT_LOW_SPEED_LIMIT`: the same
/// check and sentence as the `URLSession` engine) and a cancellation end the transfer. Any callback that refuses ends it at once: libcurl reads
/// nothing more. libcurl adds no `Accept-Encoding` of its own and decodes no body
/// (`CURLOPT_HTTP_CONTENT_DECODING` off): what `onData` gets is the bytes on the wire.
final class CurlExchange: Sendable {
    /// The largest header section kept (libcurl bounds each line; this bounds their number).
    static let maximumHeaderBytes = 256 << 10
    /// The largest body of a response that is not the final one (a redirect's) that is read and dropped.
    static let maximumIgnoredBodyBytes = 64 << 10

    private struct State {
        /// The status of the response whose header lines are arriving.
        var status: Int?
        var headers: [String: String] = [:]
        var lastName: String?
        /// The final response, once handed to `onResponse`.
        var response: HTTPTransfer.Response?
        /// Why the transfer was stopped; once set, nothing more is handed over.
        var failure: ReseedError?
        var headerBytes = 0
        var ignoredBodyBytes = 0
        var lastActivity: ContinuousClock.Instant
        var cancelled = false
        /// Body bytes of the final response handed to `onData`.
        var bodyBytes: Int64 = 0
        var rate: HTTPTransfer.RateWindow?
    }

    private let url: URL
    private let headers: [String: String]
    private let step: ReseedError.Step
    private let timeout: Duration
    private let deadline: Duration?
    private let onResponse: @Sendable (HTTPTransfer.Response) throws(ReseedError) -> Void
    private let onData: @Sendable (Data) throws(ReseedError) -> Void
    private let started = ContinuousClock.now
    private let state: Mutex<State>

    init(url: URL, headers: [String: String], step: ReseedError.Step, timeout: Duration, deadline: Duration?,
         minimumRate: HTTPTransfer.MinimumRate?,
         onResponse: @escaping @Sendable (HTTPTransfer.Response) throws(ReseedError) -> Void,
         onData: @escaping @Sendable (Data) throws(ReseedError) -> Void) {
        self.url = url
        self.headers = headers
        self.step = step
        self.timeout = timeout
        self.deadline = deadline
        self.onResponse = onResponse
        self.onData = onData
        self.state = Mutex(State(lastActivity: started, rate: minimumRate.map(HTTPTransfer.RateWindow.init)))
    }

    /// Runs the transfer on a thread of its own; a cancelled task stops it within a second.
    func run() async throws(ReseedError) -> HTTPTransfer.Response {
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<HTTPTransfer.Response, ReseedError>, Never>) in
                startDetachedThread("reseed-transfer") { continuation.resume(returning: self.perform()) }
            }
        } onCancel: {
            self.state.withLock { $0.cancelled = true }
        }
        return try result.get()
    }

    private func failure(_ message: String) -> ReseedError {
        ReseedError(.download, step: step, url: url, message: message)
    }

    private func perform() -> Result<HTTPTransfer.Response, ReseedError> {
        guard reseed_curl_load() == 0 else {
            return .failure(failure("cannot use libcurl: \(String(cString: reseed_curl_load_error()))"))
        }
        guard let handle = reseed_curl_easy_init() else { return .failure(failure("libcurl cannot start a transfer (curl_easy_init)")) }
        defer { reseed_curl_easy_cleanup(handle) }
        var list: UnsafeMutableRawPointer?
        defer { reseed_curl_slist_free_all(list) }
        // A header a file could have smuggled a line break into is left out: it is only ever a
        // validator, and without it the server sends the whole file.
        // libcurl sends no User-Agent of its own; some hosts refuse a request without one.
        var lines = headers
        if !lines.keys.contains(where: { $0.lowercased() == "user-agent" }) { lines["User-Agent"] = "Reseed" }
        for (name, value) in lines.sorted(by: { $0.key < $1.key }) where Self.isSafeHeaderText(name + value) {
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
        let milliseconds = Self.milliseconds(timeout)
        let settings: [() -> Int32] = [
            { self.url.absoluteString.withCString { reseed_curl_setopt_pointer(handle, RESEED_CURLOPT_URL, $0) } },
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

    /// True when `text` holds no carriage return, line feed or NUL byte. Checked on the bytes:
    /// "\r\n" is a single Character, which a per-Character test for "\r" or "\n" misses.
    static func isSafeHeaderText(_ text: String) -> Bool {
        !text.utf8.contains { $0 == 13 || $0 == 10 || $0 == 0 }
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
            state.lastActivity = .now
            state.headerBytes += bytes.count
            guard state.failure == nil, state.response == nil else { return nil }
            if state.headerBytes > Self.maximumHeaderBytes {
                state.failure = failure("the server's response headers are over \(Self.maximumHeaderBytes) bytes")
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
                state.response = HTTPTransfer.Response(status: status, headers: state.headers)
                return state.response
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
                state.withLock { if $0.failure == nil { $0.failure = error } }
                return false
            }
        }
        return state.withLock { $0.failure == nil }
    }

    /// One piece of a body: the final response's goes to `onData`, a redirect's is dropped.
    private func body(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let deliver = state.withLock { state -> Bool in
            state.lastActivity = .now
            guard state.failure == nil else { return false }
            if state.response == nil {
                state.ignoredBodyBytes += bytes.count
                if state.ignoredBodyBytes > Self.maximumIgnoredBodyBytes {
                    state.failure = failure("the server sent over \(Self.maximumIgnoredBodyBytes) bytes of body before its final answer")
                }
                return false
            }
            state.bodyBytes += Int64(bytes.count)
            return true
        }
        guard deliver else { return state.withLock { $0.failure == nil } }
        do {
            try onData(Data(bytes))
            return true
        } catch {
            state.withLock { if $0.failure == nil { $0.failure = error } }
            return false
        }
    }

    /// libcurl's progress call: false ends the transfer (cancelled, past the deadline, silent too
    /// long, or under the minimum rate).
    private func goesOn() -> Bool {
        let now = ContinuousClock.now
        return state.withLock { state in
            guard state.failure == nil else { return false }
            if state.cancelled {
                state.failure = failure("cancelled")
            } else if let deadline, now - started > deadline {
                state.failure = failure("the transfer took longer than \(deadline) in all (the server sends too slowly)")
            } else if now - state.lastActivity > timeout {
                state.failure = failure(state.response != nil
                    ? "the server sent nothing more for \(timeout) (timed out)" : "no answer within \(timeout) (timed out)")
            } else if let shortfall = state.rate?.record(total: state.bodyBytes, after: now - started), let rate = state.rate {
                state.failure = ReseedError(.downloadTooSlow, step: step, url: url, message: rate.message(shortfall))
            }
            return state.failure == nil
        }
    }

    private func outcome(_ code: Int32, detail: String) -> Result<HTTPTransfer.Response, ReseedError> {
        let (stopped, response) = state.withLock { ($0.failure, $0.response) }
        if let stopped { return .failure(stopped) }
        switch code {
        case RESEED_CURLE_OK:
            guard let response else { return .failure(failure("the server closed the connection without answering")) }
            return .success(response)
        case RESEED_CURLE_OPERATION_TIMEDOUT:
            return .failure(failure("no answer within \(timeout) (timed out)"))
        case RESEED_CURLE_COULDNT_RESOLVE_HOST, RESEED_CURLE_COULDNT_RESOLVE_PROXY, RESEED_CURLE_COULDNT_CONNECT:
            return .failure(failure("cannot connect: \(detail)"))
        case RESEED_CURLE_TOO_MANY_REDIRECTS:
            return .failure(failure("too many redirects: \(detail)"))
        default:
            return .failure(failure(response != nil ? "the connection broke: \(detail)" : "the request failed: \(detail)"))
        }
    }
}
#endif
