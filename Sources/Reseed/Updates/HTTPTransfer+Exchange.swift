import Foundation

extension HTTPTransfer {
    /// What one GET has come to, whichever engine runs it: the final response once its headers
    /// are in, the first reason it was stopped, the body bytes handed over, and what the watchdog
    /// reads (when it started, when the server last sent anything, the minimum rate's window).
    ///
    /// Both engines keep one under their lock and report to it (libcurl's callbacks, the
    /// `URLSession` delegate's); it words every failure that is not the engine's own (the
    /// deadline, the idle timeout, the minimum rate, a server that closed without answering), so
    /// the same server is cut at the same point with the same sentence on every platform.
    struct Exchange: Sendable {
        let request: Request
        let started: ContinuousClock.Instant
        /// The final response, once handed to `onResponse`.
        private(set) var response: Response?
        /// Why the transfer was stopped; once set, nothing more is handed over.
        private(set) var failure: ReseedError?
        /// Body bytes of the final response handed to `onData`.
        private(set) var bodyBytes: Int64 = 0
        /// When the server last sent anything (a header line, a piece of a body).
        private var lastActivity: ContinuousClock.Instant
        private var rate: RateWindow?
        /// The task awaiting the transfer was cancelled.
        var cancelled = false

        init(_ request: Request, startedAt started: ContinuousClock.Instant = .now) {
            self.request = request
            self.started = started
            self.lastActivity = started
            self.rate = request.minimumRate.map(RateWindow.init)
        }

        /// True until the transfer was stopped.
        var goesOn: Bool { failure == nil }

        /// A failure of this transfer, in one sentence that names its step and URL.
        func error(_ message: String) -> ReseedError {
            ReseedError(.download, step: request.step, url: request.url, message: message)
        }

        /// Stops the transfer for `error`, unless it was stopped already: the first reason stands.
        mutating func stop(_ error: ReseedError) {
            if failure == nil { failure = error }
        }

        /// Stops the transfer for the reason `message` says.
        mutating func stop(_ message: String) {
            stop(error(message))
        }

        /// The server sent something at `now`.
        mutating func heard(at now: ContinuousClock.Instant = .now) {
            lastActivity = now
        }

        /// The final response's status and headers arrived; they go to `onResponse` next.
        mutating func answered(_ response: Response) {
            self.response = response
        }

        /// `count` body bytes of the final response go to `onData`.
        mutating func delivered(_ count: Int) {
            bodyBytes += Int64(count)
        }

        /// The watchdog's look at the transfer at `now`: false, the transfer then stopped, once it
        /// was cancelled, is past its deadline, has heard nothing for the idle timeout (when
        /// `checkingIdle`: `URLSession` keeps that one itself) or averages under its minimum rate.
        mutating func check(at now: ContinuousClock.Instant, checkingIdle: Bool) -> Bool {
            guard failure == nil else { return false }
            if cancelled {
                stop("cancelled")
            } else if let deadline = request.deadline, now - started > deadline {
                stop("the transfer took longer than \(deadline) in all (the server sends too slowly)")
            } else if checkingIdle, now - lastActivity > request.timeout {
                stop(timedOut(answered: response != nil))
            } else if var window = rate {
                let shortfall = window.record(total: bodyBytes, after: now - started)
                rate = window
                if let shortfall {
                    stop(ReseedError(.downloadTooSlow, step: request.step, url: request.url, message: window.message(shortfall)))
                }
            }
            return failure == nil
        }

        /// The idle timeout's sentence: before the server answered, or in the middle of its body.
        func timedOut(answered: Bool) -> String {
            answered ? "the server sent nothing more for \(request.timeout) (timed out)" : "no answer within \(request.timeout) (timed out)"
        }

        /// What the transfer came to once the engine is done, `engineFailure` being the engine's
        /// own sentence when it failed: the reason it was stopped first, then the engine's, then
        /// the final response.
        func result(engineFailure: String?) -> Result<Response, ReseedError> {
            if let failure { return .failure(failure) }
            if let engineFailure { return .failure(error(engineFailure)) }
            guard let response else { return .failure(error("the server closed the connection without answering")) }
            return .success(response)
        }
    }
}
