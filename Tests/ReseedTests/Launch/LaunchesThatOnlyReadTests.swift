import Foundation
import GRDB
import InMemoryLogging
import Logging
import Reseed
import ReseedTestSupport
import Synchronization
import Testing

/// A single-file store the app only reads is not written by its launches: a later delta update
/// checks its result from the rows it changed. A store the app wrote into is hashed whole.
@Suite(.timeLimit(.minutes(10))) struct LaunchesThatOnlyReadTests {
    static let incremental = "checked the delta's result from the rows it changed"

    /// 1.0.0 installed by a launch, `launches` launches that each open the pool, run `use` on it and
    /// close it, then 1.0.0 and 1.1.0 published (with a delta from 1.0.0).
    func launched(_ sandbox: ChannelSandbox, launches: Int = 3, use: (DatabasePool) throws -> Void) throws -> (bundled: Seed, offered: Seed) {
        let bundled = try sandbox.release("1.0.0", generation: 0)
        for launch in 0..<launches {
            let (pool, outcome) = try sandbox.launcher(bundled).launch()
            #expect(outcome.action == (launch == 0 ? .installed : .upToDate))
            try use(pool)
            try pool.close()
        }
        try sandbox.publish(bundled, compressed: true)
        let offered = try sandbox.release("1.1.0", generation: 1)
        try sandbox.publish(offered, compressed: true)
        return (bundled, offered)
    }

    /// Updates the store from the channel; returns the outcome and what the update logged.
    func update(_ sandbox: ChannelSandbox, _ bundled: Seed) async throws -> (ChannelUpdater.Outcome, [String]) {
        let log = InMemoryLogHandler()
        var configuration = Launcher.Configuration()
        configuration.logger = Logger(label: "test") { _ in log }
        let launcher = Launcher(seed: bundled.manifestURL, dataDirectory: sandbox.dataDirectory, configuration: configuration)
        let outcome = try await ChannelUpdater(channel: sandbox.server.url, publicKey: sandbox.key.publicKey, launcher: launcher,
                                               configuration: sandbox.configuration()).update()
        return (outcome, log.entries.map { "\($0.message)" })
    }

    static func itemCount(_ pool: DatabasePool) throws -> Int {
        try pool.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM item") } ?? 0
    }

    @Test func aStoreTheAppOnlyReadsKeepsTheIncrementalCheckAcrossLaunches() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let (bundled, offered) = try launched(sandbox) { pool in
            let rows = try Self.itemCount(pool)
            #expect(rows > 0)
        }

        let (outcome, log) = try await update(sandbox, bundled)
        #expect(outcome.method == .delta, "\(outcome.deltaFailure ?? "")")
        #expect(log.contains(Self.incremental), "\(log)")
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash)
        #expect(try sandbox.recordedContentHash() == offered.manifest.contentHash)

        // The store the delta installed keeps it too: 1.2.0 by delta from 1.1.0, after two more launches.
        for _ in 0..<2 {
            let (pool, outcome) = try sandbox.launcher(bundled).launch()
            #expect(outcome.version == "1.1.0")
            #expect(try Self.itemCount(pool) > 0)
            try pool.close()
        }
        let next = try sandbox.release("1.2.0", generation: 2)
        try sandbox.publish(next, compressed: true)
        let (again, secondLog) = try await update(sandbox, bundled)
        #expect(again.method == .delta, "\(again.deltaFailure ?? "")")
        #expect(secondLog.contains(Self.incremental), "\(secondLog)")
        #expect(try sandbox.storeContentHash() == next.manifest.contentHash)
    }

    /// The app wrote a row through the launcher's pool and closed it: the row is checkpointed into
    /// the file (as SQLite does when the last connection closes), nothing is left in a `-wal`.
    @Test func aRowTheAppWroteIsInTheStoreFileOnceItsPoolCloses() throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.release("1.0.0", generation: 0)
        let (pool, _) = try sandbox.launcher(bundled).launch()
        try pool.write { try $0.execute(sql: "UPDATE item SET label = 'edited by the app' WHERE id = 2") }
        try pool.close()

        #expect(!FileManager.default.fileExists(atPath: sandbox.storeURL.path + "-wal"))
        // The file alone, read as it is on disk (no -wal looked at).
        let file = try DatabaseQueue(path: "file:\(sandbox.storeURL.path)?immutable=1")
        let label = try file.read { try String.fetchOne($0, sql: "SELECT label FROM item WHERE id = 2") }
        try file.close()
        #expect(label == "edited by the app")
    }

    /// The app wrote a row at its first launch and closed its pool, which checkpointed it into the file;
    /// later launches only read.
    @Test func aRowTheAppWroteAfterALaunchIsHashedWhole() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        var written = false
        let (bundled, offered) = try launched(sandbox) { pool in
            if !written { try pool.write { try $0.execute(sql: "UPDATE item SET label = 'edited by the app' WHERE id = 2") } }
            written = true
        }
        // Checked from the changed rows only, the result would pass with the app's row in it.
        let (outcome, log) = try await update(sandbox, bundled)
        #expect(outcome.method == .full)
        #expect(outcome.deltaFailure?.contains("content hash") == true, "\(outcome.deltaFailure ?? "nil")")
        #expect(!log.contains(Self.incremental), "\(log)")
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash)
    }

    /// The app commits a row while the update copies the store: the fingerprint measured when the copy
    /// began no longer vouches for what was copied (a commit that restarted the `-wal` could have brought
    /// the copy to a later state), so the result is hashed whole, not checked from the changed rows.
    @Test func aRowTheAppCommitsWhileTheStoreIsCopiedIsHashedWhole() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let (bundled, offered) = try launched(sandbox) { pool in
            let rows = try Self.itemCount(pool)
            #expect(rows > 0)
        }
        let store = sandbox.storeURL.path
        let written = Mutex(false)
        var configuration = sandbox.configuration()
        configuration.progress = { event in
            // The first bytes of the store copied: another process commits a row into the -wal.
            guard event.step == .install, event.completed > 0, written.withLock({ let first = !$0; $0 = true; return first }) else { return }
            let writer = Process()
            writer.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            writer.arguments = ["-c", """
                import os, sqlite3, sys
                c = sqlite3.connect(sys.argv[1]); c.execute("PRAGMA wal_autocheckpoint = 0")
                c.execute("UPDATE item SET label = 'edited during the copy' WHERE id = 2"); c.commit(); os._exit(0)
                """, store]
            try? writer.run()
            writer.waitUntilExit()
        }
        let log = InMemoryLogHandler()
        var launcherConfiguration = Launcher.Configuration()
        launcherConfiguration.logger = Logger(label: "test") { _ in log }
        let launcher = Launcher(seed: bundled.manifestURL, dataDirectory: sandbox.dataDirectory, configuration: launcherConfiguration)
        let outcome = try await ChannelUpdater(channel: sandbox.server.url, publicKey: sandbox.key.publicKey, launcher: launcher,
                                               configuration: configuration).update()
        let messages = log.entries.map { "\($0.message)" }
        #expect(written.withLock { $0 })
        #expect(!messages.contains(Self.incremental), "\(messages)")
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash)
        _ = outcome
    }

    /// Another file holding the installed version put in the store's place (restored from a backup
    /// with a row the app had written, here one no delta touches): the launch records the new file's
    /// fingerprint but nothing that vouches for its rows, so the delta's result is hashed whole (and
    /// fails, and the full seed is installed).
    @Test func aStoreFileRestoredInPlaceIsHashedWhole() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let (bundled, offered) = try launched(sandbox) { pool in
            let rows = try Self.itemCount(pool)
            #expect(rows > 0)
        }
        let restored = sandbox.dataDirectory.appendingPathComponent("restored.sqlite").path
        try FileManager.default.copyItem(atPath: sandbox.storeURL.path, toPath: restored)
        let backup = try DatabaseQueue(path: restored)
        // A backup in rollback-journal mode, as a seed ships (reading it makes no -wal the fingerprint would show).
        try backup.inDatabase { try $0.execute(sql: "PRAGMA journal_mode = DELETE; UPDATE item SET label = 'restored from a backup' WHERE id = 2") }
        try backup.close()
        // Restored as one file: the installed file's -wal and -shm go with it.
        for sidecar in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: sandbox.storeURL.path + sidecar) }
        #expect(rename(restored, sandbox.storeURL.path) == 0)
        // A launch that prepares the store and leaves its opening to the app records the file as found.
        #expect(try sandbox.launcher(bundled).prepare().action == .upToDate)

        // Checked from the changed rows only, the result would pass with the restored row in it.
        let (outcome, log) = try await update(sandbox, bundled)
        #expect(outcome.method == .full)
        #expect(outcome.deltaFailure?.contains("content hash") == true, "\(outcome.deltaFailure ?? "nil")")
        #expect(!log.contains(Self.incremental), "\(log)")
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash)
    }

    /// An app's committed row left in the `-wal` (the app was killed before anything checkpointed it):
    /// the store file is as its install left it, the `-wal` is not.
    @Test func aRowTheAppLeftInTheWALIsHashedWhole() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let (bundled, offered) = try launched(sandbox) { pool in
            let rows = try Self.itemCount(pool)
            #expect(rows > 0)
        }
        let store = try FileManager.default.attributesOfItem(atPath: sandbox.storeURL.path)
        #expect(try sandbox.leaveARowInTheWAL(label: "edited by the app") == 0)
        let after = try FileManager.default.attributesOfItem(atPath: sandbox.storeURL.path)
        #expect(after[.modificationDate] as? Date == store[.modificationDate] as? Date)
        #expect(after[.systemFileNumber] as? Int == store[.systemFileNumber] as? Int)

        // Checked from the changed rows only, the result would pass with the app's row in it.
        let (outcome, log) = try await update(sandbox, bundled)
        #expect(outcome.method == .full)
        #expect(outcome.deltaFailure?.contains("content hash") == true, "\(outcome.deltaFailure ?? "nil")")
        #expect(!log.contains(Self.incremental), "\(log)")
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash)
    }
}
