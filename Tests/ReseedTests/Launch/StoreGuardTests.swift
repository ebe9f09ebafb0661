import Foundation
import GRDB
@testable import Reseed
import ReseedTesting
import Testing

@Suite struct StoreGuardTests {
    /// The guard closes after the new store was renamed in and may already be in use:
    /// closing must not delete or checkpoint into the new store's WAL.
    @Test func releasingTheGuardLeavesTheNewStoresWALAlone() throws {
        let sandbox = try LaunchSandbox()
        try sandbox.install(try sandbox.seed("1.0.0"))
        let path = sandbox.storeURL.path
        // The old store has rows in its WAL.
        var configuration = Configuration()
        configuration.prepareDatabase { try $0.execute(sql: "PRAGMA wal_autocheckpoint = 0") }
        let old = try DatabasePool(path: path, configuration: configuration)
        try old.write { try $0.execute(sql: "INSERT INTO item (label) VALUES ('old wal row')") }
        try old.close()

        guard case .guarded(let held) = try StoreGuard.acquire(path: path, for: .replace, deadline: .now + .seconds(1)) else {
            Issue.record("no other connection: the guard must be granted")
            return
        }
        for suffix in ["-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        let newer = try sandbox.seed("2.0.0", rows: 2)
        let incoming = sandbox.dataDirectory.appendingPathComponent("incoming.sqlite")
        try FileManager.default.copyItem(at: newer.fileURL, to: incoming)
        #expect(rename(incoming.path, path) == 0)

        // Someone opens the new store at once and writes into its WAL.
        let pool = try DatabasePool(path: path, configuration: configuration)
        try pool.write { try $0.execute(sql: "INSERT INTO item (label) VALUES ('new wal row')") }
        held.release()

        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
        let labels = try pool.read { try String.fetchAll($0, sql: "SELECT label FROM item ORDER BY id") }
        #expect(labels == ["2.0.0-1", "2.0.0-2", "new wal row"])
        try pool.close()
        let reopened = try DatabaseQueue(path: path)
        #expect(try reopened.read { try String.fetchOne($0, sql: "PRAGMA quick_check") } == "ok")
        #expect(try reopened.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM item") } == 3)
        try reopened.close()
    }

    @Test func anIdleConnectionInWALModeKeepsTheGuardAway() throws {
        let sandbox = try LaunchSandbox()
        try sandbox.install(try sandbox.seed("1.0.0"))
        let idle = try DatabasePool(path: sandbox.storeURL.path)
        _ = try idle.read { try Int.fetchOne($0, sql: "SELECT 1") }
        let result = try StoreGuard.acquire(path: sandbox.storeURL.path, for: .replace, deadline: .now + .milliseconds(100))
        guard case .busy = result else {
            Issue.record("an open connection must make the store busy, got \(result)")
            return
        }
        try idle.close()
        guard case .guarded(let held) = try StoreGuard.acquire(path: sandbox.storeURL.path, for: .replace, deadline: .now + .seconds(1)) else {
            Issue.record("once closed, the store must be free")
            return
        }
        held.release()
    }
}
