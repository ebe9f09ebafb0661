import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// One HTTP GET through `URLSession`, its body handed over piece by piece as it arrives.
///
/// A delegate rather than `bytes(for:)` (which Linux's Foundation lacks) or `data(for:)`
/// (which holds the whole body): the manifest is refused as soon as it passes its limit,
/// and a seed goes straight to its file, so a broken connection keeps what arrived.
/// No cache: a `304` reaches the caller as a `304`. ``timeout`` is an idle timeout
/// (`timeoutIntervalForRequest`): a slow download that keeps moving is never cut, a
/// server that sends nothing for that long is. ``deadline``, when set, bounds the whole
/// transfer however the server paces it (a small file trickled a byte at a time).
///
/// The request asks for `Accept-Encoding: identity`, and a response with any other
/// `Content-Encoding` is refused on its headers: `URLSession` would decode it, so that a
/// megabyte of gzip on the wire becomes a gigabyte of body before any size limit sees it.
/// On Linux, swift-corelibs-foundation neither pauses for the delegate's decision on the
/// headers nor waits for it to take a piece of the body: libcurl's thread decodes and queues
/// pieces without bound. So there the delegate's calls run on that thread as they come
/// (``ImmediateOperationQueue``): each piece is checked, and once refused dropped, before
/// libcurl decodes the next, and memory stays at one piece whatever the server sends.
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

    init(timeout: Duration, deadline: Duration? = nil) {
        self.timeout = timeout
        self.deadline = deadline
    }

    /// Gets `url`. `onResponse` sees the status and headers first and may refuse them by throwing;
    /// `onData` then receives the body in order and may stop it by throwing. Either error is the
    /// one this throws, and no piece is handed over after it.
    ///
    /// - Throws: ``ReseedError`` ``ReseedError/Code/download`` for the transfer's own failures
    ///   (no answer within the timeout, past the deadline, connection refused or lost), naming
    ///   `step` and `url`.
    func get(
        _ url: URL, headers: [String: String], step: ReseedError.Step,
        onResponse: @escaping @Sendable (Response) throws(ReseedError) -> Void,
        onData: @escaping @Sendable (Data) throws(ReseedError) -> Void
    ) async throws(ReseedError) -> Response {
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.timeoutIntervalForRequest = seconds
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: seconds)
        request.httpMethod = "GET"
        // Bytes as stored: sizes, ranges and checksums are about the file, not an encoding of it.
        request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }

        let delegate = TransferDelegate(url: url, step: step, timeout: timeout, onResponse: onResponse, onData: onData)
        #if canImport(FoundationNetworking)
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: ImmediateOperationQueue())
        #else
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        #endif
        defer { session.finishTasksAndInvalidate() }
        let task = session.dataTask(with: request)
        let watchdog = deadline.map { deadline in
            Task {
                try? await Task.sleep(for: deadline)
                if !Task.isCancelled { delegate.expire(task, after: deadline) }
            }
        }
        defer { watchdog?.cancel() }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                delegate.start(task, continuation)
            }
        } onCancel: {
            TransferDelegate.cancel(task)
        }
        return try result.get()
    }
}

#if canImport(FoundationNetworking)
/// Runs each operation at once, on the thread that adds it: the delegate queue of a transfer on Linux.
///
/// swift-corelibs-foundation adds every delegate call to the delegate queue from the session's
/// work queue, the thread that runs libcurl, and goes on without waiting. With this queue a
/// piece of the body is handled before libcurl decodes the next one, so pieces cannot pile up.
/// The delegate must then never call into the task directly (its methods `sync` onto that same
/// work queue): it cancels through ``TransferDelegate/cancel(_:)``.
final class ImmediateOperationQueue: OperationQueue, @unchecked Sendable {
    // @unchecked: no state of its own; OperationQueue's is never used, since nothing is queued.
    override func addOperation(_ operation: Operation) {
        operation.start()
    }

    override func addOperation(_ block: @escaping @Sendable () -> Void) {
        block()
    }
}
#endif

/// Receives one task's events on the session's serial delegate queue.
private final class TransferDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private struct State {
        var continuation: CheckedContinuation<Result<HTTPTransfer.Response, ReseedError>, Never>?
        var response: HTTPTransfer.Response?
        /// The error a callback threw; once set, nothing more is handed over.
        var failure: ReseedError?
    }

    private let url: URL
    private let step: ReseedError.Step
    private let timeout: Duration
    private let onResponse: @Sendable (HTTPTransfer.Response) throws(ReseedError) -> Void
    private let onData: @Sendable (Data) throws(ReseedError) -> Void
    private let state = Mutex(State())

    init(url: URL, step: ReseedError.Step, timeout: Duration,
         onResponse: @escaping @Sendable (HTTPTransfer.Response) throws(ReseedError) -> Void,
         onData: @escaping @Sendable (Data) throws(ReseedError) -> Void) {
        self.url = url
        self.step = step
        self.timeout = timeout
        self.onResponse = onResponse
        self.onData = onData
    }

    func start(_ task: URLSessionDataTask, _ continuation: CheckedContinuation<Result<HTTPTransfer.Response, ReseedError>, Never>) {
        state.withLock { $0.continuation = continuation }
        task.resume()
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        guard let http = response as? HTTPURLResponse else {
            refuse(ReseedError(.download, step: step, url: url, message: "the answer is not an HTTP response"))
            completionHandler(.cancel)
            return
        }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        let head = HTTPTransfer.Response(status: http.statusCode, headers: headers)
        state.withLock { $0.response = head }
        do throws(ReseedError) {
            if let coding = head.unrequestedContentEncoding {
                throw ReseedError(.download, step: step, url: url, message:
                    "the server sent the body with Content-Encoding '\(coding)', which the request did not accept (Accept-Encoding: identity); refused before decoding it")
            }
            try onResponse(head)
            completionHandler(.allow)
        } catch {
            refuse(error)
            // Linux's URLSession ignores the disposition: the task itself must stop.
            completionHandler(.cancel)
            Self.cancel(dataTask)
        }
    }

    /// A server's authentication challenge is never answered: a channel is a public folder.
    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        // The disposition cancels the task, which must not happen on the work queue this may run on.
        Thread.detachNewThread { completionHandler(.cancelAuthenticationChallenge, nil) }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        // A cancelled task may still deliver pieces it had already read: they are dropped.
        if state.withLock({ $0.failure != nil }) { return }
        do {
            try onData(data)
        } catch {
            refuse(error)
            Self.cancel(dataTask)
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let (continuation, result) = state.withLock { state -> (CheckedContinuation<Result<HTTPTransfer.Response, ReseedError>, Never>?, Result<HTTPTransfer.Response, ReseedError>) in
            defer { state.continuation = nil }
            if let failure = state.failure { return (state.continuation, .failure(failure)) }
            if let error { return (state.continuation, .failure(translate(error, answered: state.response != nil))) }
            guard let response = state.response else {
                return (state.continuation, .failure(ReseedError(.download, step: step, url: url, message: "the server closed the connection without answering")))
            }
            return (state.continuation, .success(response))
        }
        continuation?.resume(returning: result)
    }

    /// Ends the task past its deadline (nothing changes if it has already ended).
    func expire(_ task: URLSessionTask, after deadline: Duration) {
        refuse(ReseedError(.download, step: step, url: url, message: "the transfer took longer than \(deadline) in all (the server sends too slowly)"))
        Self.cancel(task)
    }

    /// Cancels `task` from a thread of its own: on Linux `cancel()` waits for the session's work
    /// queue, which may be the very thread calling (see ``ImmediateOperationQueue``), or busy
    /// decoding for a while; neither a delegate call nor a cooperative thread may wait for it.
    static func cancel(_ task: URLSessionTask) {
        Thread.detachNewThread { task.cancel() }
    }

    private func refuse(_ error: ReseedError) {
        state.withLock { if $0.failure == nil { $0.failure = error } }
    }

    private func translate(_ error: any Error, answered: Bool) -> ReseedError {
        let code = (error as NSError).code
        let message: String = switch code {
        case NSURLErrorTimedOut:
            answered ? "the server sent nothing more for \(timeout) (timed out)" : "no answer within \(timeout) (timed out)"
        case NSURLErrorCancelled:
            "cancelled"
        case NSURLErrorCannotConnectToHost, NSURLErrorCannotFindHost, NSURLErrorNotConnectedToInternet, NSURLErrorDNSLookupFailed:
            "cannot connect: \(error.localizedDescription)"
        default:
            answered ? "the connection broke: \(error.localizedDescription)" : "the request failed: \(error.localizedDescription)"
        }
        return ReseedError(.download, step: step, url: url, message: message)
    }
}
