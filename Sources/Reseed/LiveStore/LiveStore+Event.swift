import Foundation
import Synchronization

extension LiveStore {
    /// What happens to a live store, in order, for UI code and logs.
    ///
    /// ```swift
    /// for await event in store.events() {
    ///     switch event {
    ///     case .willReplace(let notice):
    ///         viewModel.dropFetchedRecords()   // let go of what came from the old store
    ///         notice.release()
    ///     case .replaced(let version, _), .switched(_, let version):
    ///         await viewModel.reload(version: version)
    ///     case .replaceFailed(let error):
    ///         logger.error("\(error)")
    ///     case .progress(let progress):
    ///         progressView.fraction = progress.fraction
    ///     }
    /// }
    /// ```
    public enum Event: Sendable {
        /// The store is about to be replaced by `notice.version`: drop what you hold, then call `notice.release()`.
        case willReplace(ReplaceNotice)
        /// How far the install of the new seed has come (see ``InstallProgress``): its copy, or a
        /// channel's delta's copy, apply and content hash on one scale.
        case progress(InstallProgress)
        /// The new store is open at `version`.
        case replaced(version: String, previousVersion: String?)
        /// The replacement failed; the old store is open and usable.
        case replaceFailed(ReseedError)
        /// The live store now is the one at `store`, at `version`.
        case switched(store: URL, version: String)
    }

    /// Handed to each observer before a replacement; the replacement waits until every observer
    /// released its notice, or until the observer timeout passes.
    public final class ReplaceNotice: Sendable {
        /// The version that is about to replace the store.
        public let version: String
        private let barrier: ReleaseBarrier
        private let released = Mutex(false)

        init(version: String, barrier: ReleaseBarrier) {
            self.version = version
            self.barrier = barrier
        }

        /// Says this observer holds nothing from the old store any more. Calling it again does nothing.
        public func release() {
            let first = released.withLock { done in
                defer { done = true }
                return !done
            }
            if first { barrier.arrive() }
        }
    }
}

/// Counts observers' releases down to zero, and wakes the replacement waiting for it.
final class ReleaseBarrier: Sendable {
    private struct State {
        var remaining: Int
        var waiter: CheckedContinuation<Void, Never>?
        /// Set once the wait is over, so a waiter that arrives late does not wait forever.
        var finished = false
    }

    private let state: Mutex<State>

    init(count: Int) {
        state = Mutex(State(remaining: count, waiter: nil))
    }

    func arrive() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.remaining -= 1
            guard state.remaining <= 0 else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Returns when every observer released, or after `timeout`; true when all released.
    func wait(timeout: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.waitForAll(); return true }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            self.cancelWaiting()
            return first
        }
    }

    private func waitForAll() async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                if state.remaining <= 0 || state.finished { return true }
                state.waiter = continuation
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private func cancelWaiting() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }
}
