import Foundation
import GRDB
import Logging
import ReseedSystem
import Synchronization

/// The app's open store, which can be replaced by a downloaded seed or switched to
/// another location while the app runs, without any operation failing because of it.
///
/// Every access goes through ``read(_:)``, ``write(_:)`` or ``withDatabase(_:)``:
/// an operation sees the old store or the new one, never a closed one. A
/// replacement copies and verifies the new seed while the app keeps working,
/// then blocks new operations only for the swap itself (close, rename, reopen),
/// which does not grow with the seed's size.
///
/// ```swift
/// let store = try await LiveStore(launcher: Launcher(seed: bundledSeed, dataDirectory: appSupport))
/// let count = try await store.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM injury_category") }
/// try await store.replace(with: Seed(at: downloadedManifestURL))
/// ```
public final class LiveStore: Sendable {
    /// Settings of a live store; each has a default.
    public struct Configuration: Sendable {
        /// How long a replacement waits for observers to release their ``ReplaceNotice``. Default 2 seconds.
        public var observerTimeout: Duration = .seconds(2)

        public init() {}
    }

    struct State {
        var launcher: Launcher
        /// The store, or with a user store the user store with the seed attached.
        var pool: DatabasePool
        var name: String
        var version: String
        /// The store file (the seed's, with a user store).
        var storeURL: URL
    }

    let state: Mutex<State>
    let gate = AccessGate()
    let configuration: Configuration
    /// Serialises replacements and switches.
    let changes = AsyncSerialQueue()
    private let observers = Mutex<[UUID: AsyncStream<Event>.Continuation]>([:])

    /// Launches `launcher` (installing its bundled seed when needed) and opens the store.
    ///
    /// - Throws: ``ReseedError`` as ``Launcher/launch()`` does.
    public init(launcher: Launcher, configuration: Configuration = Configuration()) async throws(ReseedError) {
        let (pool, outcome) = try await offload { () throws(ReseedError) in
            var (pool, outcome) = try launcher.launch()
            outcome.removedLeftovers += try launcher.removeLeftovers(ofStore: outcome.name)
            return (pool, outcome)
        }
        self.state = Mutex(State(launcher: launcher, pool: pool, name: outcome.name, version: outcome.version, storeURL: outcome.storeURL))
        self.configuration = configuration
        self.outcome = outcome
    }

    /// What the launch that opened the store did.
    public let outcome: LaunchOutcome

    /// The store's name.
    public var name: String { state.withLock { $0.name } }
    /// The launcher of the store open now, its name and version, read together (a switch changes all three).
    var opened: (launcher: Launcher, name: String, version: String) { state.withLock { ($0.launcher, $0.name, $0.version) } }
    /// The seed version the open store holds.
    public var version: String { state.withLock { $0.version } }
    /// The open store's file; with a user store, the seed's file attached to it.
    public var storeURL: URL { state.withLock { $0.storeURL } }
    /// The user store's file, when the launcher has one (see ``Launcher/UserStore``).
    public var userStoreURL: URL? { state.withLock { $0.launcher.userStoreURL } }

    /// Runs a read-only access on the current store.
    ///
    /// - Throws: what `body` or GRDB throws; never an error caused by a replacement.
    public func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withDatabase { try await $0.read(body) }
    }

    /// Runs a write transaction on the current store.
    public func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withDatabase { try await $0.write(body) }
    }

    /// Hands the current `DatabasePool` to `body`; a replacement waits until `body` returns.
    ///
    /// Do not keep the pool after `body` returns: it may be closed by the next
    /// replacement. Long-lived observations should restart on ``Event/replaced(version:previousVersion:)``.
    public func withDatabase<T: Sendable>(_ body: (DatabasePool) async throws -> T) async throws -> T {
        await gate.enterShared()
        do {
            let result = try await body(state.withLock { $0.pool })
            await gate.exitShared()
            return result
        } catch {
            await gate.exitShared()
            throw error
        }
    }

    /// A new stream of this store's events, from now on, in order. It ends when the task iterating it is cancelled.
    ///
    /// Events are buffered for each observer, so a slow observer never holds up a replacement
    /// (except by not releasing a ``ReplaceNotice``, for at most the observer timeout).
    public func events() -> AsyncStream<Event> {
        let id = UUID()
        let (stream, continuation) = AsyncStream<Event>.makeStream()
        continuation.onTermination = { [weak self] _ in
            _ = self?.observers.withLock { $0.removeValue(forKey: id) }
        }
        observers.withLock { $0[id] = continuation }
        return stream
    }

    func emit(_ event: Event) {
        for continuation in observers.withLock({ Array($0.values) }) { continuation.yield(event) }
    }

    /// Sends `willReplace` to every observer and waits until all released or the timeout passed.
    func noticeObservers(of version: String) async {
        let current = observers.withLock { Array($0.values) }
        guard !current.isEmpty else { return }
        let barrier = ReleaseBarrier(count: current.count)
        for continuation in current {
            continuation.yield(.willReplace(ReplaceNotice(version: version, barrier: barrier)))
        }
        if await !barrier.wait(timeout: configuration.observerTimeout) {
            logger.notice("observers did not release the store in time; replacing anyway", metadata: ["timeout": "\(configuration.observerTimeout)"])
        }
    }

    var logger: Logger { state.withLock { $0.launcher.configuration.logger } }

    deinit {
        for continuation in observers.withLock({ Array($0.values) }) { continuation.finish() }
    }
}

/// Runs async jobs one at a time, in the order they were submitted.
actor AsyncSerialQueue {
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func run<T: Sendable, E: Error>(_ job: @Sendable () async throws(E) -> T) async throws(E) -> T {
        if busy {
            await withCheckedContinuation { waiting.append($0) }
        }
        busy = true
        defer {
            if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
        }
        return try await job()
    }
}
