import ReseedSystem
import Synchronization

/// The file-system seam's observer for these tests: records every action, or stops the work
/// right after the k-th (a crash: nothing more happens, files stay as they are), or fails the k-th.
package final class FaultPlan: FileSystemObserver {
    package enum Mode: Sendable { case record, crashAfter(Int), fail(Int) }
    package struct SimulatedCrash: Error {}

    private struct State {
        var mode: Mode
        var armed: Bool
        var attempts: [FileAction] = []
        var completed: [FileAction] = []
        var crashed = false
    }

    private let state: Mutex<State>

    package init(_ mode: Mode, armed: Bool = true) {
        state = Mutex(State(mode: mode, armed: armed))
    }

    package func arm() { state.withLock { $0.armed = true } }
    /// Actions that were done: the points a crash can follow.
    package var actions: [FileAction] { state.withLock { $0.completed } }
    /// Actions that were tried, including those the OS refused on its own (removing an absent file).
    package var attempts: [FileAction] { state.withLock { $0.attempts } }
    package var crashed: Bool { state.withLock { $0.crashed } }

    package func willPerform(_ action: FileAction) throws {
        try state.withLock { state in
            guard state.armed else { return }
            if state.crashed { throw SimulatedCrash() }
            state.attempts.append(action)
            if case .fail(let k) = state.mode, state.attempts.count == k {
                throw FileSystemFailure(operation: action.kind.rawValue, path: action.path, errno: .ioError)
            }
        }
    }

    package func didPerform(_ action: FileAction) throws {
        try state.withLock { state in
            guard state.armed else { return }
            state.completed.append(action)
            if case .crashAfter(let k) = state.mode, state.completed.count == k {
                state.crashed = true
                throw SimulatedCrash()
            }
        }
    }
}
