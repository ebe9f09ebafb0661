import Dispatch
import Synchronization

/// Runs `background` on another thread while `foreground` runs on this one, and returns both
/// results: on 2 cores, hashing or checking beside SQLite's single-threaded work is free time.
func concurrently<A: Sendable, B>(
    _ background: @escaping @Sendable () throws -> A, _ foreground: () throws -> B
) throws -> (A, B) {
    let box = ResultBox<A>()
    let group = DispatchGroup()
    group.enter()
    DispatchQueue.global().async {
        box.set(Result { try background() })
        group.leave()
    }
    let foregroundResult = Result { try foreground() }
    group.wait()
    return (try box.get(), try foregroundResult.get())
}

private final class ResultBox<A: Sendable>: Sendable {
    private let value = Mutex<Result<A, any Error>?>(nil)

    func set(_ result: Result<A, any Error>) { value.withLock { $0 = result } }

    func get() throws -> A {
        guard let result = value.withLock({ $0 }) else { preconditionFailure("read before the background work finished") }
        return try result.get()
    }
}
