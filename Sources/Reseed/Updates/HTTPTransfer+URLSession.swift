import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ReseedSystem
import Synchronization

// Compiled on every platform, so that Linux builds type-check it; used where Foundation's own
// URLSession runs (Apple platforms). Linux uses HTTPTransfer+Curl.swift.

/// The engine of ``HTTPTransfer`` on Apple platforms: `URLSession`.
///
/// A delegate rather than `bytes(for:)` (which Linux's Foundation lacks) or `data(for:)`
/// (which holds the whole body). The idle timeout is `timeoutIntervalForRequest`. URLSession has no
/// minimum rate of its own: the delegate records each piece in its ``HTTPTransfer/Exchange``, and a
/// watchdog task checks it, and the deadline, once a second, so a server that sends nothing between
/// checks is cut as on Linux. (Not built or run on Apple platforms by this repository's CI.)
struct URLSessionTransport: HTTPTransport {
    func get(
        _ request: HTTPTransfer.Request,
        onResponse: @escaping @Sendable (HTTPTransfer.Response) throws(ReseedError) -> Void,
        onData: @escaping @Sendable (Data) throws(ReseedError) -> Void
    ) async throws(ReseedError) -> HTTPTransfer.Response {
        let seconds = request.timeout.inSeconds
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.timeoutIntervalForRequest = seconds
        var urlRequest = URLRequest(url: request.url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: seconds)
        urlRequest.httpMethod = "GET"
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }

        let delegate = TransferDelegate(request, onResponse: onResponse, onData: onData)
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let task = session.dataTask(with: urlRequest)
        let watchdog = request.deadline == nil && request.minimumRate == nil ? nil : Task {
            while !Task.isCancelled, delegate.goesOn(task) {
                try? await Task.sleep(for: .seconds(1))
            }
        }
        defer { watchdog?.cancel() }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                delegate.start(task, continuation)
            }
        } onCancel: {
            task.cancel()
        }
        return try result.get()
    }
}

/// Receives one task's events on the session's serial delegate queue.
private final class TransferDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private struct State {
        var exchange: HTTPTransfer.Exchange
        var continuation: CheckedContinuation<Result<HTTPTransfer.Response, ReseedError>, Never>?
        /// Set when the task has completed, whatever the outcome.
        var ended = false
    }

    private let onResponse: @Sendable (HTTPTransfer.Response) throws(ReseedError) -> Void
    private let onData: @Sendable (Data) throws(ReseedError) -> Void
    private let state: Mutex<State>

    init(_ request: HTTPTransfer.Request,
         onResponse: @escaping @Sendable (HTTPTransfer.Response) throws(ReseedError) -> Void,
         onData: @escaping @Sendable (Data) throws(ReseedError) -> Void) {
        self.onResponse = onResponse
        self.onData = onData
        self.state = Mutex(State(exchange: HTTPTransfer.Exchange(request)))
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
            state.withLock { $0.exchange.stop("the answer is not an HTTP response") }
            completionHandler(.cancel)
            return
        }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        let head = HTTPTransfer.Response(status: http.statusCode, headers: headers)
        state.withLock { $0.exchange.answered(head) }
        do {
            try onResponse(head)
            completionHandler(.allow)
        } catch {
            state.withLock { $0.exchange.stop(error) }
            completionHandler(.cancel)
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        // A cancelled task may still deliver pieces it had already read: they are dropped.
        if !state.withLock({ $0.exchange.goesOn }) { return }
        do {
            try onData(data)
        } catch {
            state.withLock { $0.exchange.stop(error) }
            dataTask.cancel()
            return
        }
        state.withLock { $0.exchange.delivered(data.count) }
        _ = goesOn(dataTask)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let (continuation, result) = state.withLock { state -> (CheckedContinuation<Result<HTTPTransfer.Response, ReseedError>, Never>?, Result<HTTPTransfer.Response, ReseedError>) in
            defer {
                state.continuation = nil
                state.ended = true
            }
            let exchange = state.exchange
            return (state.continuation, exchange.result(engineFailure: error.map { Self.sentence($0, in: exchange) }))
        }
        continuation?.resume(returning: result)
    }

    /// False, the task then cancelled, once it is past its deadline or under its minimum rate, or
    /// has ended (nothing changes for a task that has already ended).
    func goesOn(_ task: URLSessionTask) -> Bool {
        let now = ContinuousClock.now
        let (goesOn, cut) = state.withLock { state -> (Bool, Bool) in
            guard !state.ended, state.exchange.goesOn else { return (false, false) }
            let goesOn = state.exchange.check(at: now, checkingIdle: false)
            return (goesOn, !goesOn)
        }
        if cut { task.cancel() }
        return goesOn
    }

    /// URLSession's error as the end of a sentence about `exchange`.
    private static func sentence(_ error: any Error, in exchange: HTTPTransfer.Exchange) -> String {
        let answered = exchange.response != nil
        return switch (error as NSError).code {
        case NSURLErrorTimedOut:
            exchange.timedOut(answered: answered)
        case NSURLErrorCancelled:
            "cancelled"
        case NSURLErrorCannotConnectToHost, NSURLErrorCannotFindHost, NSURLErrorNotConnectedToInternet, NSURLErrorDNSLookupFailed:
            "cannot connect: \(inSentence(error.localizedDescription))"
        default:
            answered ? "the connection broke: \(inSentence(error.localizedDescription))" : "the request failed: \(inSentence(error.localizedDescription))"
        }
    }
}
