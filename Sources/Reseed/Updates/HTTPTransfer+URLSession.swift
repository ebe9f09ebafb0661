import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ReseedSystem
import Synchronization

// Compiled on every platform, so that Linux builds type-check it; used where Foundation's own
// URLSession runs (Apple platforms). Linux uses HTTPTransfer+Curl.swift.
extension HTTPTransfer {
    /// ``get(_:headers:step:onResponse:onData:)`` through `URLSession`: the engine of Apple platforms.
    ///
    /// A delegate rather than `bytes(for:)` (which Linux's Foundation lacks) or `data(for:)`
    /// (which holds the whole body). ``timeout`` is `timeoutIntervalForRequest`. URLSession has no
    /// minimum rate of its own: the delegate feeds ``RateWindow`` with each piece, and a watchdog
    /// task checks it, and the deadline, once a second, so a server that sends nothing between
    /// checks is cut as on Linux. (Not built or run on Apple platforms by this repository's CI.)
    func sessionGet(
        _ url: URL, headers: [String: String], step: ReseedError.Step,
        onResponse: @escaping @Sendable (Response) throws(ReseedError) -> Void,
        onData: @escaping @Sendable (Data) throws(ReseedError) -> Void
    ) async throws(ReseedError) -> Response {
        let seconds = timeout.inSeconds
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.timeoutIntervalForRequest = seconds
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: seconds)
        request.httpMethod = "GET"
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }

        let delegate = TransferDelegate(url: url, step: step, timeout: timeout, deadline: deadline, minimumRate: minimumRate,
                                        onResponse: onResponse, onData: onData)
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let task = session.dataTask(with: request)
        let watchdog = deadline == nil && minimumRate == nil ? nil : Task {
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
        var continuation: CheckedContinuation<Result<HTTPTransfer.Response, ReseedError>, Never>?
        var response: HTTPTransfer.Response?
        /// The error a callback threw; once set, nothing more is handed over.
        var failure: ReseedError?
        /// Body bytes handed to `onData`.
        var bodyBytes: Int64 = 0
        var rate: HTTPTransfer.RateWindow?
        /// Set when the task has completed, whatever the outcome.
        var ended = false
    }

    private let url: URL
    private let step: ReseedError.Step
    private let timeout: Duration
    private let deadline: Duration?
    private let onResponse: @Sendable (HTTPTransfer.Response) throws(ReseedError) -> Void
    private let onData: @Sendable (Data) throws(ReseedError) -> Void
    private let started = ContinuousClock.now
    private let state: Mutex<State>

    init(url: URL, step: ReseedError.Step, timeout: Duration, deadline: Duration?, minimumRate: HTTPTransfer.MinimumRate?,
         onResponse: @escaping @Sendable (HTTPTransfer.Response) throws(ReseedError) -> Void,
         onData: @escaping @Sendable (Data) throws(ReseedError) -> Void) {
        self.url = url
        self.step = step
        self.timeout = timeout
        self.deadline = deadline
        self.onResponse = onResponse
        self.onData = onData
        self.state = Mutex(State(rate: minimumRate.map(HTTPTransfer.RateWindow.init)))
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
        do {
            try onResponse(head)
            completionHandler(.allow)
        } catch {
            refuse(error)
            completionHandler(.cancel)
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        // A cancelled task may still deliver pieces it had already read: they are dropped.
        if state.withLock({ $0.failure != nil }) { return }
        do {
            try onData(data)
        } catch {
            refuse(error)
            dataTask.cancel()
            return
        }
        state.withLock { $0.bodyBytes += Int64(data.count) }
        _ = goesOn(dataTask)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let (continuation, result) = state.withLock { state -> (CheckedContinuation<Result<HTTPTransfer.Response, ReseedError>, Never>?, Result<HTTPTransfer.Response, ReseedError>) in
            defer {
                state.continuation = nil
                state.ended = true
            }
            if let failure = state.failure { return (state.continuation, .failure(failure)) }
            if let error { return (state.continuation, .failure(translate(error, answered: state.response != nil))) }
            guard let response = state.response else {
                return (state.continuation, .failure(ReseedError(.download, step: step, url: url, message: "the server closed the connection without answering")))
            }
            return (state.continuation, .success(response))
        }
        continuation?.resume(returning: result)
    }

    /// False, the task then cancelled, once it is past its deadline or under its minimum rate, or
    /// has ended (nothing changes for a task that has already ended).
    func goesOn(_ task: URLSessionTask) -> Bool {
        let elapsed = ContinuousClock.now - started
        let (goesOn, cut) = state.withLock { state -> (Bool, Bool) in
            guard !state.ended, state.failure == nil else { return (false, false) }
            if let deadline, elapsed > deadline {
                state.failure = ReseedError(.download, step: step, url: url,
                                            message: "the transfer took longer than \(deadline) in all (the server sends too slowly)")
            } else if let shortfall = state.rate?.record(total: state.bodyBytes, after: elapsed), let rate = state.rate {
                state.failure = ReseedError(.downloadTooSlow, step: step, url: url, message: rate.message(shortfall))
            }
            return (state.failure == nil, state.failure != nil)
        }
        if cut { task.cancel() }
        return goesOn
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
            "cannot connect: \(inSentence(error.localizedDescription))"
        default:
            answered ? "the connection broke: \(inSentence(error.localizedDescription))" : "the request failed: \(inSentence(error.localizedDescription))"
        }
        return ReseedError(.download, step: step, url: url, message: message)
    }
}
