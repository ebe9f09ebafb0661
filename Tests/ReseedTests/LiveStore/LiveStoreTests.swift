import Foundation
import GRDB
@testable import Reseed
import ReseedSystem
import ReseedTesting
import Synchronization
import Testing

/// State the reader and writer tasks share.
final class SharedCounters: Sendable {
    let stop = Flag()
    let reads = Counter()
    let seen = VersionSet()

    final class Flag: Sendable {
        private let value = Mutex(false)
        func withLock<T: Sendable>(_ body: (inout sending Bool) -> sending T) -> T { value.withLock(body) }
    }

    final class Counter: Sendable {
        private let value = Mutex(0)
        func withLock<T: Sendable>(_ body: (inout sending Int) -> sending T) -> T { value.withLock(body) }
    }

    final class VersionSet: Sendable {
        private let value = Mutex(Set<String>())
        func withLock<T: Sendable>(_ body: (inout sending Set<String>) -> sending T) -> T { value.withLock(body) }
    }
}

@Suite struct LiveStoreTests {
    /// A seed of the `items` store with `rows` items and a `note` table apps write to.
    func seed(_ version: String, rows: Int, in sandbox: LaunchSandbox, paddingBytes: Int = 0) throws -> Seed {
        try SeedFixture(name: "items", version: version, sql: [
            "CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT NOT NULL)",
            "CREATE TABLE note (id INTEGER PRIMARY KEY, text TEXT)",
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows)) INSERT INTO item (label) SELECT '\(version)' FROM n",
        ], paddingBytes: paddingBytes).build(in: sandbox.directory.appending("download-\(version)"))
    }

    func openStore(_ sandbox: LaunchSandbox, _ seed: Seed, observerTimeout: Duration = .seconds(2)) async throws -> LiveStore {
        var configuration = LiveStore.Configuration()
        configuration.observerTimeout = observerTimeout
        return try await LiveStore(launcher: sandbox.launcher(seed), configuration: configuration)
    }

    /// Reads until `shared.stop`: in each read the version marker and the row count must come from
    /// the same, complete store; counts the reads and the versions seen.
    static func readWholeStores(_ store: LiveStore, expectedRows: [String: Int], until shared: SharedCounters) async throws {
        while !shared.stop.withLock({ $0 }) {
            let (version, count) = try await store.read { db in
                (try String.fetchOne(db, sql: "SELECT value FROM reseed_metadata WHERE key = 'version'") ?? "?",
                 try Int.fetchOne(db, sql: "SELECT count(*) FROM item") ?? -1)
            }
            #expect(expectedRows[version] == count, "version \(version) with \(count) rows")
            shared.reads.withLock { $0 += 1 }
            shared.seen.withLock { _ = $0.insert(version) }
        }
    }

    @Test func readersAndAWriterNeverFailDuringTwentyReplaces() async throws {
        let sandbox = try LaunchSandbox()
        let versions = [("1.0.0", 3), ("1.0.1", 5), ("1.0.2", 8)]
        let seeds = try versions.map { try seed($0.0, rows: $0.1, in: sandbox) }
        let expectedRows = Dictionary(uniqueKeysWithValues: versions)
        let store = try await openStore(sandbox, seeds[0])
        let shared = SharedCounters()
        let stop = shared.stop, reads = shared.reads, seen = shared.seen

        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask { try await Self.readWholeStores(store, expectedRows: expectedRows, until: shared) }
            }
            group.addTask {
                var written = 0
                while !stop.withLock({ $0 }) {
                    written += 1
                    let text = "note \(written)"
                    try await store.write { try $0.execute(sql: "INSERT INTO note (text) VALUES (?)", arguments: [text]) }
                }
            }
            var replaces = 0
            for round in 1...21 {
                let outcome = try await store.replace(with: seeds[round % seeds.count])
                #expect(outcome.version == versions[round % seeds.count].0)
                replaces += 1
            }
            stop.withLock { $0 = true }
            try await group.waitForAll()
            #expect(replaces == 21)
        }
        #expect(store.version == versions[21 % 3].0)
        #expect(try sandbox.recordedVersion() == versions[21 % 3].0)
        #expect(try await store.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM item") } == versions[21 % 3].1)
        #expect(reads.withLock { $0 } > 21)
        #expect(seen.withLock { $0 }.count == 3)
    }

    /// A replace decides as a launch does: the version the store holds, as recorded, is not installed
    /// again, and nothing is held back for it.
    @Test func aReplaceWithTheVersionTheStoreHoldsChangesNothing() async throws {
        let sandbox = try LaunchSandbox()
        let store = try await openStore(sandbox, try seed("1.0.0", rows: 3, in: sandbox))
        let before = try Data(contentsOf: sandbox.storeURL)
        // The same release, downloaded into another folder.
        try FileManager.default.copyItem(at: sandbox.directory.appending("download-1.0.0"), to: sandbox.directory.appending("again"))
        let copy = try Seed(at: sandbox.directory.appending("again"))
        let outcome = try await store.replace(with: copy)
        #expect(outcome.version == "1.0.0" && outcome.previousVersion == "1.0.0")
        #expect(outcome.blockedFor == .zero)
        #expect(try Data(contentsOf: sandbox.storeURL) == before)
        #expect(try sandbox.recordedVersion() == "1.0.0")
        #expect(try await store.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM item") } == 3)
    }

    @Test func corruptDownloadLeavesTheOldStoreOpenAndSaysSo() async throws {
        let sandbox = try LaunchSandbox()
        let store = try await openStore(sandbox, try seed("1.0.0", rows: 3, in: sandbox))
        let good = try seed("2.0.0", rows: 4, in: sandbox)
        var bytes = try Data(contentsOf: good.fileURL)
        bytes[bytes.count / 2] ^= 0x40
        try bytes.write(to: good.fileURL)
        let events = store.events()
        await #expect(throws: ReseedError.self) { try await store.replace(with: good) }
        var iterator = events.makeAsyncIterator()
        var failure: ReseedError?
        while let event = await iterator.next() {
            if case .replaceFailed(let error) = event { failure = error; break }
            if case .willReplace = event { Issue.record("observers were told to let go before the download was verified") }
        }
        #expect(failure?.code == .verificationFailed)
        #expect(store.version == "1.0.0")
        #expect(try await store.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM item") } == 3)
        #expect(try sandbox.recordedVersion() == "1.0.0")
        #expect(try sandbox.temporaryFiles().isEmpty)
    }

    @Test func observersSeeEventsInOrderAndReleaseBeforeTheSwap() async throws {
        let sandbox = try LaunchSandbox()
        let store = try await openStore(sandbox, try seed("1.0.0", rows: 3, in: sandbox))
        let events = store.events()
        let observer = Task {
            var names: [String] = []
            for await event in events {
                switch event {
                case .willReplace(let notice):
                    names.append("willReplace \(notice.version)")
                    // Still the old store while the notice is held.
                    let version = try await store.read { try String.fetchOne($0, sql: "SELECT value FROM reseed_metadata WHERE key = 'version'") }
                    names.append("still \(version ?? "?")")
                    notice.release()
                case .progress: if names.last != "progress" { names.append("progress") }
                case .replaced(let version, let previous): names.append("replaced \(version) from \(previous ?? "-")")
                case .replaceFailed(let error): names.append("failed \(error.code)")
                case .switched(_, let version): names.append("switched \(version)")
                }
                if names.last?.hasPrefix("replaced") == true { return names }
            }
            return names
        }
        try await store.replace(with: try seed("2.0.0", rows: 4, in: sandbox, paddingBytes: 1 << 20))
        #expect(try await observer.value == ["progress", "willReplace 2.0.0", "still 1.0.0", "replaced 2.0.0 from 1.0.0"])
    }

    @Test(.timeLimit(.minutes(10))) func anObserverThatNeverReleasesDelaysTheSwapOnlyUntilTheTimeout() async throws {
        let sandbox = try LaunchSandbox()
        let store = try await openStore(sandbox, try seed("1.0.0", rows: 3, in: sandbox), observerTimeout: .milliseconds(300))
        let stubborn = store.events()
        _ = stubborn   // subscribed, never iterated: it holds its notice forever
        let clock = ContinuousClock()
        let start = clock.now
        try await store.replace(with: try seed("2.0.0", rows: 4, in: sandbox))
        let elapsed = clock.now - start
        #expect(elapsed >= .milliseconds(300))
        // The replace returned with the notice never released: the swap did not wait forever (the
        // time limit is the hang guard; an upper bound on `elapsed` would time the machine, not the
        // code: with the whole suite running, sync tests hold the pool's threads for minutes).
        #expect(store.version == "2.0.0")
    }

    @Test func switchingBetweenAccountsAndTestDataKeepsEveryStore() async throws {
        let sandbox = try LaunchSandbox()
        let bundled = try seed("1.0.0", rows: 3, in: sandbox)
        func location(_ name: String) -> Launcher {
            Launcher(seed: bundled.manifestURL, dataDirectory: sandbox.directory.appending("accounts/\(name)"))
        }
        let alice = location("alice"), bob = location("bob"), demo = location("demo")
        let store = try await LiveStore(launcher: alice)
        try await store.write { try $0.execute(sql: "INSERT INTO note (text) VALUES ('alice')") }
        #expect(try await store.switchTo(bob).action == .installed)
        try await store.write { try $0.execute(sql: "INSERT INTO note (text) VALUES ('bob')") }
        try await store.switchTo(demo)
        try await store.write { try $0.execute(sql: "INSERT INTO note (text) VALUES ('demo 1'), ('demo 2')") }
        for (launcher, expected) in [(alice, ["alice"]), (bob, ["bob"]), (demo, ["demo 1", "demo 2"]), (alice, ["alice"])] {
            let outcome = try await store.switchTo(launcher)
            #expect(outcome.action == .upToDate)
            #expect(try await store.read { try String.fetchAll($0, sql: "SELECT text FROM note ORDER BY id") } == expected)
            #expect(store.storeURL.path == launcher.dataDirectory.appendingPathComponent("items.sqlite").path)
        }
        for launcher in [alice, bob, demo] {
            #expect(try PreferencesFile(url: launcher.preferencesURL).recordedVersion(of: "items") == "1.0.0")
        }
    }

    /// A switch opens the other store as a launch does: one that looks up to date (a SQLite header,
    /// its version recorded) but does not open gets its seed installed again, the old file kept aside.
    @Test func switchingToAStoreThatDoesNotOpenInstallsItsSeedAgain() async throws {
        let sandbox = try LaunchSandbox()
        let bundled = try seed("1.0.0", rows: 3, in: sandbox)
        let home = Launcher(seed: bundled.manifestURL, dataDirectory: sandbox.directory.appending("home"))
        let other = Launcher(seed: bundled.manifestURL, dataDirectory: sandbox.directory.appending("other"))
        _ = try other.prepare()
        let otherStore = other.dataDirectory.appendingPathComponent("items.sqlite")
        var bytes = try Data(contentsOf: otherStore)
        bytes.replaceSubrange(16..<100, with: Data(repeating: 0xFF, count: 84))
        try bytes.write(to: otherStore)

        let store = try await LiveStore(launcher: home)
        let outcome = try await store.switchTo(other)
        #expect(outcome.action == .installed)
        #expect(outcome.reason == .storeInvalid)
        let aside = try #require(outcome.storeKeptAside)
        #expect(try Data(contentsOf: aside) == bytes)
        #expect(store.storeURL.path == otherStore.path)
        #expect(try await store.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM item") } == 3)
    }

    /// While every replace is inside its blocking work (held at its first file action, busy as a
    /// copy is), a plain task of the app still runs. With the work on `DispatchQueue.global()` it
    /// did not: on Linux, tasks of the global queue's priority share its threads, and as many busy
    /// replaces as cores held all of them. Ordering, not timing: each replace lets go when the
    /// app's task has run, or after a hang guard, and the record says which came first. The guard
    /// is long because other tests of a full run can hold the pool's threads for minutes.
    @Test(.timeLimit(.minutes(10))) func anAppTaskRunsWhileEveryReplaceIsBusyInItsBlockingWork() async throws {
        let count = max(2, ProcessInfo.processInfo.activeProcessorCount)
        let probe = PoolProbe(guardTime: .seconds(300))
        var replaces: [(store: LiveStore, seed: Seed, sandbox: LaunchSandbox)] = []
        for _ in 0..<count {
            let sandbox = try LaunchSandbox()
            var launcher = sandbox.launcher(try seed("1.0.0", rows: 3, in: sandbox))
            launcher.fileSystem = FileSystem(observer: probe.hook())
            replaces.append((try await LiveStore(launcher: launcher), try seed("2.0.0", rows: 4, in: sandbox), sandbox))
        }
        probe.arm()
        let running = replaces.map { replace in Task { try await replace.store.replace(with: replace.seed) } }
        await probe.waitUntilParked(count)
        // A plain task of the app, at the priority the global queue's work runs at.
        let app = Task(priority: .medium) { probe.appTaskRan() }
        await app.value
        for replace in running { _ = try await replace.value }

        let events = probe.events
        #expect(events == Array(repeating: "parked", count: count) + ["app task ran"] + Array(repeating: "let go: the app task ran", count: count),
                "the app's task waited for the replaces' blocking work: \(events)")
        for replace in replaces {
            #expect(replace.store.version == "2.0.0")
            #expect(try replace.sandbox.recordedVersion() == "2.0.0")
        }
    }

    /// An app's writes go on while the store is replaced and switched between two data
    /// directories, round after round: every write succeeds (none meets "database is locked"),
    /// and every read sees one whole store.
    @Test func aWriterNeverFailsThroughReplacesAndSwitches() async throws {
        let sandboxes = [try LaunchSandbox(), try LaunchSandbox()]
        let versions = [("1.0.0", 3), ("1.0.1", 5), ("1.0.2", 8)]
        let seeds = try versions.map { try seed($0.0, rows: $0.1, in: sandboxes[0]) }
        let expectedRows = Dictionary(uniqueKeysWithValues: versions)
        let store = try await openStore(sandboxes[0], seeds[0])
        let shared = SharedCounters()
        let stop = shared.stop, reads = shared.reads
        let writes = SharedCounters.Counter()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<2 {
                group.addTask { try await Self.readWholeStores(store, expectedRows: expectedRows, until: shared) }
            }
            group.addTask {
                while !stop.withLock({ $0 }) {
                    try await store.write { try $0.execute(sql: "INSERT INTO note (text) VALUES ('written')") }
                    writes.withLock { $0 += 1 }
                }
            }
            var current = 0
            for round in 1...24 {
                let seed = seeds[round % seeds.count]
                if round % 3 == 0 {
                    current = 1 - current
                    let outcome = try await store.switchTo(sandboxes[current].launcher(seed))
                    #expect(outcome.storeURL.path == sandboxes[current].storeURL.path)
                } else {
                    let outcome = try await store.replace(with: seed)
                    #expect(outcome.version == seed.manifest.version)
                }
            }
            stop.withLock { $0 = true }
            try await group.waitForAll()
        }
        #expect(writes.withLock { $0 } > 24)
        #expect(reads.withLock { $0 } > 24)
    }

    /// SQLite holds a store's write lock for moments the app does not see: another connection's
    /// transaction, a checkpoint, the WAL recovery a new connection runs on a store just swapped in
    /// (the race a writer met during replaces). An app's write waits for such a lock, up to the
    /// launcher's `busyTimeout`; it never fails at once with "database is locked".
    @Test func aWriteWaitsForAWriteLockHeldByAnotherConnection() async throws {
        let sandbox = try LaunchSandbox()
        let store = try await openStore(sandbox, try seed("1.0.0", rows: 3, in: sandbox))
        let other = try DatabaseQueue(path: store.storeURL.path)
        let held = Mutex(false)
        let holder = Thread {
            try? other.writeWithoutTransaction { db in
                try db.execute(sql: "BEGIN IMMEDIATE; INSERT INTO note (text) VALUES ('other')")
                held.withLock { $0 = true }
                Thread.sleep(forTimeInterval: 0.3)
                try db.execute(sql: "COMMIT")
            }
        }
        holder.start()
        while !held.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
        try await store.write { try $0.execute(sql: "INSERT INTO note (text) VALUES ('app')") }
        let notes = try await store.read { try String.fetchAll($0, sql: "SELECT text FROM note ORDER BY id") }
        #expect(notes == ["other", "app"])
        try other.close()
    }
}

/// Holds each replace at its first file action, busy (a copy keeps its thread running, not
/// sleeping), until the app's task has run or the hang guard passed; records the order of events.
final class PoolProbe: Sendable {
    private struct State {
        var armed = false
        var events: [String] = []
        var parked = 0
        var appTaskRan = false
    }

    private let state = Mutex(State())
    private let guardTime: Duration

    init(guardTime: Duration) { self.guardTime = guardTime }

    var events: [String] { state.withLock { $0.events } }

    /// From now on, the next action of each hooked store parks it.
    func arm() { state.withLock { $0.armed = true } }

    func appTaskRan() {
        state.withLock { state in
            state.appTaskRan = true
            state.events.append("app task ran")
        }
    }

    /// Waits until `count` replaces are parked, or the hang guard passed.
    func waitUntilParked(_ count: Int) async {
        let deadline = ContinuousClock.now + guardTime
        while state.withLock({ $0.parked }) < count, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(1))
        }
    }

    func hook() -> Hook { Hook(probe: self) }

    fileprivate func park() {
        state.withLock { state in
            state.parked += 1
            state.events.append("parked")
        }
        let deadline = ContinuousClock.now + guardTime
        while !state.withLock({ $0.appTaskRan }), ContinuousClock.now < deadline { sched_yield() }
        state.withLock { state in state.events.append(state.appTaskRan ? "let go: the app task ran" : "let go: hang guard") }
    }

    fileprivate var isArmed: Bool { state.withLock { $0.armed } }

    /// One store's file-system observer: parks the replace at its first action once the probe is armed.
    final class Hook: FileSystemObserver {
        private let probe: PoolProbe
        private let used = Mutex(false)

        init(probe: PoolProbe) { self.probe = probe }

        func willPerform(_ action: FileAction) throws {
            guard probe.isArmed else { return }
            let first = used.withLock { used in
                defer { used = true }
                return !used
            }
            if first { probe.park() }
        }

        func didPerform(_ action: FileAction) throws {}
    }
}
