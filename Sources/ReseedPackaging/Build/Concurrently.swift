import Reseed
import ReseedSystem

/// Runs `background` on a thread of its own while `foreground` runs on this one, and returns both
/// results: on 2 cores, hashing or checking beside SQLite's single-threaded work is free time.
func concurrently<A: Sendable, B>(
    _ background: @escaping @Sendable () throws -> A, _ foreground: () throws -> B
) throws -> (A, B) {
    let thread = BlockingThread.start("reseed-build") { Result { try background() } }
    let foregroundResult = Result { try foreground() }
    return (try thread.join().get(), try foregroundResult.get())
}
