import Foundation

/// The one blocking retry loop: try, and until a deadline, sleep a moment and try again.
///
/// For waits on another process (a lock file, a store another connection holds) that have no
/// notification to wait on. Callers run on threads of their own, never on an async task.
///
/// ```swift
/// let lock = try Polling.until(deadline, every: .milliseconds(5)) { tryLock() }   // nil: timed out
/// ```
package enum Polling {
    /// Calls `attempt` until it returns a value, and returns it; returns nil once `deadline` has
    /// passed (after one last attempt), sleeping `interval` between two attempts.
    ///
    /// - Throws: what `attempt` throws, at once.
    package static func until<T, E: Error>(
        _ deadline: ContinuousClock.Instant, every interval: Duration, _ attempt: () throws(E) -> T?
    ) throws(E) -> T? {
        while true {
            if let value = try attempt() { return value }
            if ContinuousClock.now >= deadline { return nil }
            Thread.sleep(forTimeInterval: interval.inSeconds)
        }
    }
}
