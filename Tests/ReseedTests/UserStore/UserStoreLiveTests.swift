import Foundation
import GRDB
import Reseed
import ReseedTesting
import ReseedTestSupport
import Synchronization
import Testing

/// A live store with a user store: replacing and switching the seed while the app writes its own rows.
@Suite(.timeLimit(.minutes(10)))
struct UserStoreLiveTests {
    func openStore(_ sandbox: LaunchSandbox, _ seed: Seed, references: Bool = true) async throws -> LiveStore {
        var userStore = try UserStoreTests.userStore()
        if !references { userStore.references = [] }
        return try await LiveStore(launcher: sandbox.launcher(seed) { $0.userStore = userStore })
    }

    @Test func writersLoseNoCommittedRowWhileTheSeedIsReplaced() async throws {
        let sandbox = try LaunchSandbox()
        let seeds = try [("1.0.0", 3), ("1.0.1", 5), ("1.0.2", 2)].map { try sandbox.seed($0.0, rows: $0.1) }
        let store = try await openStore(sandbox, seeds[0])
        let stop = Shared(false)
        let committed = Shared<[Int]>([])
        var blocked: [Duration] = []
        var lastOrphans: [String: Int] = [:]
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<3 {
                group.addTask {
                    var n = 0
                    while !stop.withLock({ $0 }) {
                        n += 1
                        let key = writer * 1_000_000 + n
                        // The row refers to a seed item: the join must see a complete seed every time.
                        let items = try await store.write { db -> Int in
                            try db.execute(sql: "INSERT INTO note (id, item_id, text) VALUES (?, 1, 'w')", arguments: [key])
                            return try Int.fetchOne(db, sql: "SELECT count(*) FROM note JOIN item ON item.id = note.item_id WHERE note.id = ?", arguments: [key]) ?? 0
                        }
                        #expect(items == 1)
                        committed.withLock { $0.append(key) }
                    }
                }
            }
            for round in 1...12 {
                let outcome = try await store.replace(with: seeds[round % seeds.count])
                blocked.append(outcome.blockedFor)
                lastOrphans = outcome.orphans
            }
            stop.withLock { $0 = true }
            try await group.waitForAll()
        }
        let rows = Set(try await store.read { try Int.fetchAll($0, sql: "SELECT id FROM note") })
        let expected = Set(committed.withLock { $0 })
        #expect(!expected.isEmpty)
        #expect(rows == expected, "\(expected.subtracting(rows).count) committed rows missing")
        #expect(store.version == "1.0.0")
        #expect(lastOrphans == ["note.item_id->item.id": 0])
        #expect(blocked.count == 12)
        // The seed file holds the seed only; the user store holds the notes.
        #expect(try sandbox.labels().count == 3)
        let userURL = try #require(store.userStoreURL)
        let direct = try await DatabaseQueue(path: userURL.path).read { try Int.fetchOne($0, sql: "SELECT count(*) FROM note") }
        #expect(direct == expected.count)
    }

    @Test func anObservationOfAJoinFiresOnUserRowsAndTheStoreSaysWhenTheSeedChanged() async throws {
        let sandbox = try LaunchSandbox()
        let store = try await openStore(sandbox, try sandbox.seed("1.0.0", rows: 3))
        let events = store.events()
        let observation = ValueObservation.tracking { db in
            try String.fetchAll(db, sql: "SELECT note.text || '@' || item.label FROM note JOIN item ON item.id = note.item_id ORDER BY note.id")
        }
        let seen = Shared<[[String]]>([])
        let cancellable = try await store.withDatabase { pool in
            observation.start(in: pool, scheduling: .async(onQueue: .global()), onError: { Issue.record($0) }, onChange: { value in
                seen.withLock { $0.append(value) }
            })
        }
        try await waitFor { seen.withLock { $0.last } == [] }
        try await store.write { try $0.execute(sql: "INSERT INTO note (item_id, text) VALUES (2, 'hello')") }
        try await waitFor { seen.withLock { $0.last } == ["hello@1.0.0-2"] }
        // A write to the user store fires it; so does each commit, and no value is ever a mix.
        try await store.write { try $0.execute(sql: "INSERT INTO note (item_id, text) VALUES (3, 'again')") }
        try await waitFor { seen.withLock { $0.last } == ["hello@1.0.0-2", "again@1.0.0-3"] }
        cancellable.cancel()
        #expect(seen.withLock { $0.allSatisfy { $0.count <= 2 } })

        let replaced = Task { () -> LiveStore.Event? in
            for await event in events {
                if case .willReplace(let notice) = event { notice.release() }
                if case .replaced = event { return event }
            }
            return nil
        }
        try await store.replace(with: try sandbox.seed("2.0.0", rows: 3))
        guard case .replaced(let version, let previous)? = await replaced.value else {
            Issue.record("no replaced event")
            return
        }
        #expect(version == "2.0.0" && previous == "1.0.0")
        // After the swap an observation started again sees the new seed's rows joined with the same user rows.
        let again = try await store.withDatabase { pool in
            try await observation.values(in: pool).first { _ in true }
        }
        #expect(again == ["hello@2.0.0-2", "again@2.0.0-3"])
    }

    @Test func aNewSeedTableNamedAsAUserTableIsRefusedAndTheStoreStaysOpen() async throws {
        let sandbox = try LaunchSandbox()
        let store = try await openStore(sandbox, try sandbox.seed("1.0.0", rows: 3))
        try await store.write { try $0.execute(sql: "INSERT INTO note (item_id, text) VALUES (1, 'kept')") }
        let clashing = try SeedFixture(name: "items", version: "2.0.0", sql: [
            "CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT NOT NULL)",
            "CREATE TABLE note (id INTEGER PRIMARY KEY, text TEXT)",
        ]).build(in: sandbox.directory.appending("clash"))
        await #expect {
            try await store.replace(with: clashing)
        } throws: { error in
            guard let error = error as? ReseedError else { return false }
            return error.code == .userStoreConflict && error.message.contains("'note'")
        }
        #expect(store.version == "1.0.0")
        #expect(try await store.read { try String.fetchAll($0, sql: "SELECT text FROM note") } == ["kept"])
        #expect(try sandbox.temporaryFiles().isEmpty)
    }

    @Test func aNewSeedWithoutAReferencedTableIsRefusedBeforeTheSwap() async throws {
        let sandbox = try LaunchSandbox()
        let store = try await openStore(sandbox, try sandbox.seed("1.0.0", rows: 3))
        let without = try SeedFixture(name: "items", version: "2.0.0", sql: ["CREATE TABLE thing (id INTEGER PRIMARY KEY)"])
            .build(in: sandbox.directory.appending("no-item"))
        await #expect {
            try await store.replace(with: without)
        } throws: { error in
            guard let error = error as? ReseedError else { return false }
            return error.code == .userStoreConflict && error.message.contains("table 'item'") && error.message.contains("note.item_id->item.id")
        }
        #expect(store.version == "1.0.0")
        #expect(try await store.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM item") } == 3)
        // The app still launches: the installed seed is the old one.
        #expect(try sandbox.labels().count == 3)
    }

    @Test func switchingToAnotherLocationOpensItsOwnUserStore() async throws {
        let sandbox = try LaunchSandbox()
        let seed = try sandbox.seed("1.0.0", rows: 3)
        let store = try await openStore(sandbox, seed)
        try await store.write { try $0.execute(sql: "INSERT INTO note (item_id, text) VALUES (1, 'home')") }
        var configuration = Launcher.Configuration()
        configuration.userStore = try UserStoreTests.userStore()
        let other = Launcher(seed: seed.manifestURL, dataDirectory: sandbox.directory.appending("other"), configuration: configuration)
        let outcome = try await store.switchTo(other)
        #expect(outcome.appliedMigrations == ["notes"])
        #expect(store.userStoreURL?.path == sandbox.directory.appending("other/items-user.sqlite").path)
        #expect(try await store.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM note") } == 0)
        try await store.switchTo(sandbox.launcher(seed) { $0.userStore = configuration.userStore })
        #expect(try await store.read { try String.fetchAll($0, sql: "SELECT text FROM note") } == ["home"])
    }

    /// Waits (up to a hang guard of a minute) until `condition` holds.
    func waitFor(_ what: String = #function, line: Int = #line, _ condition: @Sendable () -> Bool) async throws {
        let deadline = ContinuousClock.now.advanced(by: .seconds(60))
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("the condition of line \(line) was not met within a minute")
                return
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}

/// A value tasks and callbacks share, behind a lock.
final class Shared<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
    func withLock<T: Sendable>(_ body: (inout sending Value) -> sending T) -> T { value.withLock(body) }
}
