#if canImport(Glibc)
import Glibc
#endif
import Foundation
import GRDB
import Reseed
import ReseedSystem
import ReseedTesting
import Synchronization
import Testing

@Suite struct ConcurrencyTests {
    @Test func launchersInThreadsInstallOnce() async throws {
        let sandbox = try LaunchSandbox()
        let seed = try sandbox.seed("1.0.0", paddingBytes: 8 << 20)
        let launcher = sandbox.launcher(seed)
        let outcomes = try await withThrowingTaskGroup(of: LaunchOutcome.Action.self) { group in
            for _ in 0..<6 {
                group.addTask { try launcher.prepare().action }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == .installed }.count == 1)
        #expect(outcomes.filter { $0 == .upToDate }.count == 5)
        #expect(try sandbox.labels().count == 3)
    }

    /// A live store's copy of a new seed runs on a thread at a lower priority than the app's, so
    /// the app's reads come first on a busy device (figure 6); other blocking work keeps the normal one.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/thread-self/stat")))
    func backgroundWorkRunsAtALowerPriority() async throws {
        // The nice value of the calling thread: field 19 of /proc/thread-self/stat, after the command's ")".
        let nice = { @Sendable () -> Int? in
            guard let text = try? String(contentsOfFile: "/proc/thread-self/stat", encoding: .utf8),
                  let close = text.lastIndex(of: ")") else { return nil }
            let fields = text[text.index(after: close)...].split(separator: " ")
            return fields.count > 16 ? Int(fields[16]) : nil
        }
        let normal = try #require(await offload("reseed-test") { nice() })
        let background = try #require(await offload("reseed-test", background: true) { nice() })
        #expect(background == min(19, normal + 10), "normal \(normal), background \(background)")
    }

    @Test func storeOpenInAnotherConnectionIsNotReplaced() throws {
        let sandbox = try LaunchSandbox()
        try sandbox.install(try sandbox.seed("1.0.0"))
        let before = try fileIdentity(sandbox.storeURL)
        let holder = try DatabasePool(path: sandbox.storeURL.path)
        let newer = try sandbox.seed("2.0.0")
        let error = try #require(throws: ReseedError.self) {
            try sandbox.launcher(newer) { $0.busyTimeout = .milliseconds(200) }.prepare()
        }
        #expect(error.code == .storeBusy)
        #expect(error.step == .checkStoreNotInUse)
        #expect(try fileIdentity(sandbox.storeURL).inode == before.inode)
        #expect(try holder.read { try String.fetchAll($0, sql: "SELECT label FROM item") }.first == "1.0.0-1")
        #expect(try sandbox.recordedVersion() == "1.0.0")
        #expect(try sandbox.temporaryFiles().isEmpty)
        try holder.close()
        #expect(try sandbox.launcher(newer).prepare().action == .installed)
    }

    @Test func storeReadByARollbackJournalConnectionIsNotReplaced() throws {
        let sandbox = try LaunchSandbox()
        _ = try sandbox.launcher(try sandbox.seed("1.0.0")).prepare()
        let holder = try DatabaseQueue(path: sandbox.storeURL.path)
        let error = try holder.read { db in
            _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM item")
            return try #require(throws: ReseedError.self) {
                try sandbox.launcher(try sandbox.seed("2.0.0")) { $0.busyTimeout = .milliseconds(100) }.prepare()
            }
        }
        #expect(error.code == .storeBusy)
        try holder.close()
        #expect(try sandbox.labels().first == "1.0.0-1")
    }

    @Test func waitingForAnotherLauncherTimesOutClearly() throws {
        let sandbox = try LaunchSandbox()
        try FileManager.default.createDirectory(at: sandbox.dataDirectory, withIntermediateDirectories: true)
        let lockPath = sandbox.dataDirectory.appendingPathComponent(".items.sqlite.reseed-lock").path
        let fd = open(lockPath, O_RDWR | O_CREAT, 0o644)
        #expect(fd >= 0)
        #expect(flock(fd, LOCK_EX) == 0)
        let error = try #require(throws: ReseedError.self) {
            try sandbox.launcher(try sandbox.seed("1.0.0")) { $0.lockTimeout = .milliseconds(150) }.prepare()
        }
        #expect(error.code == .lockTimeout)
        #expect(error.message.contains("another launcher holds the store"))
        close(fd)
        #expect(try sandbox.launcher(try sandbox.seed("1.0.0")).prepare().action == .installed)
    }
}
