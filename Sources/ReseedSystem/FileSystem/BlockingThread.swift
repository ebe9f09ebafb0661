import Dispatch
import Foundation
import Synchronization

/// A thread of its own for one piece of blocking work: a copy, a hash, an fsync, SQLite's work.
///
/// Swift's cooperative pool has one thread per core, and on Linux the work of
/// `DispatchQueue.global()` runs on the very threads of tasks of default priority (two busy work
/// items there keep a `.medium` task from starting for as long as they run). A copy or a hash queued
/// on either holds one of those few threads for as long as it runs, and on a 2-core device the
/// app's async tasks then wait behind it (measured in `Benchmarks/README.md`, figure 6). A new
/// thread per job costs little beside work that takes milliseconds.
///
/// ```swift
/// let hasher = BlockingThread.start("reseed-hash") { hash(file) }
/// copy(file)
/// let digest = hasher.join()
/// ```
package final class BlockingThread<Value: Sendable>: Sendable {
    private let value = Mutex<Value?>(nil)
    private let finished = DispatchSemaphore(value: 0)
    /// The body, when the system refused a thread for it: the first ``join()`` runs it.
    private let unstarted = Mutex<(@Sendable () -> Value)?>(nil)

    private init() {}

    /// Starts `body` on a new thread named `name`; ``join()`` returns its value.
    ///
    /// When the system refuses a new thread (see ``spawnThread(_:background:_:)``), `body` runs on
    /// the thread that joins, when it joins: the work is done one after the other instead of side
    /// by side, and never waits for a thread that may not come.
    ///
    /// `spawn` starts the thread (``spawnThread(_:background:_:)``; a test passes one that refuses).
    package static func start(
        _ name: String, spawn: (String, @escaping @Sendable () -> Void) -> Bool = { spawnThread($0, $1) }, _ body: @escaping @Sendable () -> Value
    ) -> BlockingThread<Value> {
        let thread = BlockingThread()
        let started = spawn(name) {
            let result = body()
            thread.value.withLock { $0 = result }
            thread.finished.signal()
        }
        if !started { thread.unstarted.withLock { $0 = body } }
        return thread
    }

    /// Waits, blocking the calling thread, until the body has returned, and returns its value.
    ///
    /// Call it from a thread of your own, never from an async task: the wait holds the thread.
    package func join() -> Value {
        if let body = unstarted.withLock({ pending in defer { pending = nil }; return pending }) {
            let result = body()
            value.withLock { $0 = result }
            finished.signal()
            return result
        }
        while true {
            if let result = value.withLock({ $0 }) { return result }
            finished.wait()
            // Let the next joiner (if any) through too.
            finished.signal()
        }
    }
}

/// Runs `body` on a new thread named `name` and returns true at once; returns false, `body` not
/// run, when the system refuses a new thread (`pthread_create` fails, as with `EAGAIN` at the
/// process's thread limit). The caller then does the work itself: queued on
/// `DispatchQueue.global()` instead, work that a thread of ours waits for may wait forever, for
/// dispatch cannot start a thread either (it sleeps and retries while threads are short) and its
/// few threads may be the ones waiting.
///
/// A `background` thread runs at a lower priority (``Syscalls/lowerThreadPriority()``): for work
/// the app does not wait on, which then takes a core only when the app's threads leave one.
package func spawnThread(_ name: String, background: Bool = false, _ body: @escaping @Sendable () -> Void) -> Bool {
    let job = Unmanaged.passRetained(ThreadJob(name: name, background: background, body: body))
    if Syscalls.spawnDetachedThread(job.toOpaque()) { return true }
    job.release()
    return false
}

/// Runs `body` on a new thread named `name`, and returns at once; when the system refuses a new
/// thread, on `DispatchQueue.global()`: for work nobody waits for.
package func startDetachedThread(_ name: String, background: Bool = false, _ body: @escaping @Sendable () -> Void) {
    if !spawnThread(name, background: background, body) { DispatchQueue.global().async(execute: body) }
}

/// Runs blocking file or database work on a thread of its own and suspends the calling task
/// until it returns: the task's pool thread runs the app's other tasks meanwhile.
///
/// - Throws: what `body` throws.
/// With `background`, the thread runs at a lower priority (see ``spawnThread(_:background:_:)``).
/// When the system refuses a new thread, `body` runs on the calling task's thread.
///
/// - Throws: what `body` throws.
package func offload<T: Sendable, E: Error>(
    _ name: String = "reseed-blocking", background: Bool = false, _ body: @escaping @Sendable () throws(E) -> T
) async throws(E) -> T {
    let job = OneShotJob(body)
    let result: Result<T, E> = await withCheckedContinuation { continuation in
        // Without a thread of its own, the work runs here, on the task's thread.
        if !spawnThread(name, background: background, { continuation.resume(returning: job.run()) }) {
            continuation.resume(returning: job.run())
        }
    }
    return try result.get()
}

/// Holds `offload`'s body until it runs, and lets go of it, and of everything it captured,
/// before the caller resumes. Without it the job's thread still held the body for a moment
/// after the caller went on: an object only the body kept alive (a `LiveStore` whose
/// replace failed, and its open database connections) was then released late, on that
/// thread, while the caller was already opening the same file again.
private final class OneShotJob<T: Sendable, E: Error>: Sendable {
    private let body: Mutex<(@Sendable () throws(E) -> T)?>

    init(_ body: @escaping @Sendable () throws(E) -> T) {
        self.body = Mutex(body)
    }

    /// Runs the body once; what it captured is released when this returns.
    func run() -> Result<T, E> {
        guard let body = self.body.withLock({ $0.take() }) else { preconditionFailure("offload ran its job twice") }
        return Result { () throws(E) in try body() }
    }
}

/// What a new thread runs, handed to it through `pthread_create`'s context pointer.
private final class ThreadJob: Sendable {
    let name: String
    let background: Bool
    let body: @Sendable () -> Void

    init(name: String, background: Bool, body: @escaping @Sendable () -> Void) {
        self.name = name
        self.background = background
        self.body = body
    }
}

/// The body of a thread ``Syscalls/spawnDetachedThread(_:)`` started: runs the retained `ThreadJob` at `context`.
func runThreadJob(_ context: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    guard let context else { return nil }
    let job = Unmanaged<ThreadJob>.fromOpaque(context).takeRetainedValue()
    // A name is a debugging aid (`top -H`, a debugger's thread list); Foundation sets the system's.
    Thread.current.name = job.name
    // A priority the system refuses to lower leaves the work at the normal one: it still runs.
    if job.background { _ = Syscalls.lowerThreadPriority() }
    job.body()
    return nil
}
