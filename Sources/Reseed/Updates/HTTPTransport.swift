import Foundation

/// What carries an ``HTTPTransfer``'s GET: libcurl on Linux (``CurlTransport``), `URLSession`
/// elsewhere (``URLSessionTransport``), or a test's channel held in memory.
///
/// The transfer hands a transport a ``HTTPTransfer/Request`` already made safe (`Accept-Encoding:
/// identity`, no header a line break was smuggled into) and checks the response's
/// `Content-Encoding` itself; a transport moves bytes and keeps the request's limits.
///
/// ```swift
/// var configuration = ChannelUpdater.Configuration()
/// configuration.transport = channelInMemory   // a test's: no socket, no server
/// ```
protocol HTTPTransport: Sendable {
    /// Runs `request`. `onResponse` sees the final response's status and headers (past `1xx`
    /// answers and the redirects followed, to `http` and `https`, 20 at most) and may refuse them by
    /// throwing; `onData` then receives the body in order and may stop it by throwing. Either error
    /// is the one this throws, and no piece is handed over after it.
    ///
    /// - Throws: ``ReseedError`` ``ReseedError/Code/download`` for the transfer's own failures
    ///   (no answer within the request's timeout, past its deadline, connection refused or lost);
    ///   ``ReseedError/Code/downloadTooSlow`` when the body averaged under its minimum rate.
    func get(
        _ request: HTTPTransfer.Request,
        onResponse: @escaping @Sendable (HTTPTransfer.Response) throws(ReseedError) -> Void,
        onData: @escaping @Sendable (Data) throws(ReseedError) -> Void
    ) async throws(ReseedError) -> HTTPTransfer.Response
}

extension HTTPTransfer {
    /// One GET as a transport receives it.
    struct Request: Sendable {
        var url: URL
        /// With `Accept-Encoding: identity`; none whose name or value holds a line break or a NUL.
        var headers: [String: String]
        /// The step a failure names.
        var step: ReseedError.Step
        /// The longest the server may stay silent, before it answers or between two pieces of the body.
        var timeout: Duration
        /// The longest the GET may take in all, or nil for no limit.
        var deadline: Duration?
        /// The slowest average the body may arrive at, or nil for no limit.
        var minimumRate: MinimumRate?
    }

    /// The platform's engine: libcurl where Foundation is swift-corelibs-foundation (whose
    /// `URLSession` decodes any `Content-Encoding`; see ``HTTPTransfer``), `URLSession` elsewhere.
    static var systemTransport: any HTTPTransport {
        #if canImport(FoundationNetworking)
        CurlTransport()
        #else
        URLSessionTransport()
        #endif
    }
}
