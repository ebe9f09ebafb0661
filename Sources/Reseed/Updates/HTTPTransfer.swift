import Foundation

/// One HTTP GET, its body handed over piece by piece as it arrives.
///
/// Pieces rather than the whole body: the manifest is refused as soon as it passes its limit,
/// and a seed goes straight to its file, so a broken connection keeps what arrived. No cache:
/// a `304` reaches the caller as a `304`. ``timeout`` is an idle timeout: a slow download that
/// keeps moving is never cut, a server that sends nothing for that long is. ``deadline``, when
/// set, bounds the whole transfer however the server paces it (a small file trickled a byte
/// at a time). ``minimumRate``, when set, cuts a transfer whose body averages fewer bytes a second
/// than its minimum over its window (``MinimumRate``), however it is paced. Redirects to `http` and `https` are followed (20 at most).
///
/// The request asks for `Accept-Encoding: identity` (bytes as stored: sizes, ranges and
/// checksums are about the file), and a response with any other `Content-Encoding` is refused
/// on its headers, before a byte of its body is decoded: else a megabyte of gzip on the wire
/// becomes a gigabyte of body before any size limit sees it.
///
/// The GET goes through ``transport``. Two engines, one behaviour, and one record of each
/// request's progress (``Exchange``) both keep:
/// - on Linux, libcurl driven directly on a thread of its own (``CurlTransport``), which never
///   decodes a body and stops the moment a callback refuses. swift-corelibs-foundation's
///   `URLSession` cannot be used there: it has libcurl decode any `Content-Encoding`, ignores
///   the delegate's disposition on the headers, and a `cancel()` waits until the server stops
///   sending, so a refused gzip bomb was still decoded whole, memory growing with it
///   (measured in `Benchmarks/README.md`, "URLSession and a gzip bomb");
/// - elsewhere, `URLSession` with a delegate (``URLSessionTransport``), which there does wait for
///   the delegate's disposition before reading the body.
struct HTTPTransfer: Sendable {
    /// A response's status line and headers.
    struct Response: Sendable {
        var status: Int
        /// Header names lowercased.
        var headers: [String: String]

        func header(_ name: String) -> String? { headers[name.lowercased()] }

        /// `Content-Length`, when the server sent one.
        var contentLength: Int64? { header("Content-Length").flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) } }

        /// `Content-Encoding` when it names a coding other than `identity` (which the request did not ask for).
        var unrequestedContentEncoding: String? {
            guard let value = header("Content-Encoding") else { return nil }
            let codings = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            return codings.allSatisfy { $0.isEmpty || $0 == "identity" } ? nil : value
        }

        /// `Last-Modified` when it is a strong validator (RFC 9110 §8.8.2.2): the response's `Date`
        /// is at least a second later, so the file cannot change again within the second it names.
        /// A file replaced within that second keeps the same date: sent back in `If-Modified-Since`
        /// or `If-Range`, a weak date would match a file it does not describe. Nil when either date
        /// is missing or not an IMF-fixdate.
        var strongLastModified: String? {
            guard let value = header("Last-Modified"), let modified = HTTPDate.seconds(value),
                  let date = header("Date").flatMap(HTTPDate.seconds), date >= modified + 1 else { return nil }
            return value
        }
    }

    /// The longest the server may stay silent, before it answers or between two pieces of the body.
    var timeout: Duration
    /// The longest one GET may take in all, or nil for no limit.
    var deadline: Duration?
    /// The slowest average the body may arrive at, or nil for no limit.
    var minimumRate: MinimumRate?
    /// What carries the GET: the platform's engine (``systemTransport``), or a test's.
    var transport: any HTTPTransport

    init(timeout: Duration, deadline: Duration? = nil, minimumRate: MinimumRate? = nil, transport: any HTTPTransport) {
        self.timeout = timeout
        self.deadline = deadline
        self.minimumRate = minimumRate
        self.transport = transport
    }

    /// Gets `url`. `onResponse` sees the status and headers first and may refuse them by throwing;
    /// `onData` then receives the body in order and may stop it by throwing. Either error is the
    /// one this throws, and no piece is handed over after it.
    ///
    /// - Throws: ``ReseedError`` ``ReseedError/Code/download`` for the transfer's own failures
    ///   (no answer within the timeout, past the deadline, connection refused or lost, a
    ///   `Content-Encoding` that was not asked for), naming `step` and `url`;
    ///   ``ReseedError/Code/downloadTooSlow`` when the body averaged under ``minimumRate``.
    func get(
        _ url: URL, headers: [String: String], step: ReseedError.Step,
        onResponse: @escaping @Sendable (Response) throws(ReseedError) -> Void,
        onData: @escaping @Sendable (Data) throws(ReseedError) -> Void
    ) async throws(ReseedError) -> Response {
        // A header a file could have smuggled a line break into is left out: it is only ever a
        // validator, and without it the server sends the whole file.
        var safe = headers.filter { Self.isSafeHeaderText($0.key + $0.value) }
        safe["Accept-Encoding"] = "identity"
        let checked = { @Sendable (response: Response) throws(ReseedError) in
            if let coding = response.unrequestedContentEncoding {
                throw ReseedError(.download, step: step, url: url, message:
                    "the server sent the body with Content-Encoding '\(coding)', which the request did not accept (Accept-Encoding: identity); refused before decoding it")
            }
            try onResponse(response)
        }
        let request = Request(url: url, headers: safe, step: step, timeout: timeout, deadline: deadline, minimumRate: minimumRate)
        return try await transport.get(request, onResponse: checked, onData: onData)
    }

    /// True when `text` holds no carriage return, line feed or NUL byte. Checked on the bytes:
    /// "\r\n" is a single Character, which a per-Character test for "\r" or "\n" misses.
    static func isSafeHeaderText(_ text: String) -> Bool {
        !text.utf8.contains { $0 == 13 || $0 == 10 || $0 == 0 }
    }
}
