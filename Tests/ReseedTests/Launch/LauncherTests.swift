import Foundation
import GRDB
import Reseed
import ReseedTesting
import Testing

@Suite struct LauncherTests {
    @Test func freshInstallCopiesTheSeedAndRecordsItsVersion() throws {
        let sandbox = try LaunchSandbox()
        let seed = try sandbox.seed("1.0.0")
        let (database, outcome) = try sandbox.launcher(seed).launch()
        #expect(outcome.action == .installed)
        #expect(outcome.reason == .fresh)
        #expect(outcome.previousVersion == nil)
        #expect(outcome.version == "1.0.0")
        #expect(outcome.storeURL.path == sandbox.storeURL.path)
        let count = try database.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM item") }
        #expect(count == 3)
        try database.close()
        #expect(try sandbox.recordedVersion() == "1.0.0")
        #expect(try sandbox.embeddedVersion() == "1.0.0")
        #expect(try sandbox.temporaryFiles().isEmpty)
    }

    @Test func upToDateLaunchLeavesTheStoreFileUntouched() throws {
        let sandbox = try LaunchSandbox()
        let seed = try sandbox.seed("1.0.0")
        try sandbox.install(seed)
        let before = try fileIdentity(sandbox.storeURL)
        let preferencesBefore = try Data(contentsOf: sandbox.preferencesURL)
        Thread.sleep(forTimeInterval: 0.02)
        let outcome = try sandbox.launcher(seed).prepare()
        #expect(outcome.action == .upToDate)
        #expect(outcome.reason == nil)
        #expect(outcome.previousVersion == "1.0.0")
        let after = try fileIdentity(sandbox.storeURL)
        #expect(after.inode == before.inode)
        #expect(after.modified == before.modified)
        #expect(try Data(contentsOf: sandbox.preferencesURL) == preferencesBefore)
    }

    @Test func upgradeReplacesTheStoreAndSaysFromWhichVersion() throws {
        let sandbox = try LaunchSandbox()
        try sandbox.install(try sandbox.seed("1.0.0"))
        let outcome = try sandbox.install(try sandbox.seed("1.1.0", rows: 5))
        #expect(outcome.action == .installed)
        #expect(outcome.reason == .versionChanged)
        #expect(outcome.previousVersion == "1.0.0")
        #expect(outcome.change == .upgrade)
        #expect(try sandbox.labels() == (1...5).map { "1.1.0-\($0)" })
        #expect(try sandbox.recordedVersion() == "1.1.0")
    }

    @Test func downgradeInstallsTheBundledSeedToo() throws {
        let sandbox = try LaunchSandbox()
        try sandbox.install(try sandbox.seed("2.0.0"))
        let outcome = try sandbox.install(try sandbox.seed("1.9.0"))
        #expect(outcome.action == .installed)
        #expect(outcome.change == .downgrade)
        #expect(try sandbox.recordedVersion() == "1.9.0")
        #expect(try sandbox.labels().first == "1.9.0-1")
    }

    @Test func nonSemanticVersionsInstallWithoutAChangeDirection() throws {
        let sandbox = try LaunchSandbox()
        try sandbox.install(try sandbox.seed("2026-spring"))
        let outcome = try sandbox.install(try sandbox.seed("2026-autumn"))
        #expect(outcome.action == .installed)
        #expect(outcome.change == nil)
        #expect(outcome.previousVersion == "2026-spring")
    }

    @Test func recordedVersionWithTheStoreMissingInstalls() throws {
        let sandbox = try LaunchSandbox()
        let seed = try sandbox.seed("1.0.0")
        try sandbox.install(seed)
        try FileManager.default.removeItem(at: sandbox.storeURL)
        let outcome = try sandbox.install(seed)
        #expect(outcome.reason == .storeMissing)
        #expect(try sandbox.labels().count == 3)
    }

    @Test func storeThatIsNotSQLiteIsReplacedAndKeptAside() throws {
        let sandbox = try LaunchSandbox()
        let seed = try sandbox.seed("1.0.0")
        try sandbox.install(seed)
        let garbage = Data("this is not a database, but it was the user's file".utf8)
        try garbage.write(to: sandbox.storeURL)
        let outcome = try sandbox.install(seed)
        #expect(outcome.action == .installed)
        #expect(outcome.reason == .storeInvalid)
        let aside = try #require(outcome.storeKeptAside)
        #expect(try Data(contentsOf: aside) == garbage)
        #expect(try sandbox.labels().count == 3)
    }

    @Test func storeThatFailsToOpenIsInstalledAgain() throws {
        let sandbox = try LaunchSandbox()
        let seed = try sandbox.seed("1.0.0")
        try sandbox.install(seed)
        // A valid header followed by garbage: the up-to-date check passes, opening fails.
        var bytes = try Data(contentsOf: sandbox.storeURL)
        bytes.replaceSubrange(16..<100, with: Data(repeating: 0xFF, count: 84))
        try bytes.write(to: sandbox.storeURL)
        let (database, outcome) = try sandbox.launcher(seed).launch()
        try database.close()
        #expect(outcome.action == .installed)
        #expect(outcome.reason == .storeInvalid)
        #expect(outcome.storeKeptAside != nil)
        #expect(try sandbox.labels().count == 3)
    }

    @Test func upgradeRemovesStaleWAL() throws {
        let sandbox = try LaunchSandbox()
        try sandbox.install(try sandbox.seed("1.0.0"))
        // Leave rows in an uncheckpointed WAL, as a crash of the app would: snapshot the files while a pool holds them.
        var configuration = Configuration()
        configuration.prepareDatabase { try $0.execute(sql: "PRAGMA wal_autocheckpoint = 0") }
        let pool = try DatabasePool(path: sandbox.storeURL.path, configuration: configuration)
        try pool.write { try $0.execute(sql: "INSERT INTO item (label) VALUES ('user-row-in-wal')") }
        let crashed = sandbox.directory.appending("crashed")
        try FileManager.default.copyItem(at: sandbox.dataDirectory, to: crashed)
        try pool.close()
        let walSize = try FileManager.default.attributesOfItem(atPath: crashed.appendingPathComponent("items.sqlite-wal").path)[.size] as? Int
        #expect((walSize ?? 0) > 0)
        try FileManager.default.removeItem(at: sandbox.dataDirectory)
        try FileManager.default.moveItem(at: crashed, to: sandbox.dataDirectory)

        let outcome = try sandbox.install(try sandbox.seed("2.0.0"))
        #expect(outcome.action == .installed)
        #expect(try sandbox.labels() == ["2.0.0-1", "2.0.0-2", "2.0.0-3"])
        let queue = try DatabaseQueue(path: sandbox.storeURL.path)
        let check = try queue.read { try String.fetchOne($0, sql: "PRAGMA quick_check") }
        try queue.close()
        #expect(check == "ok")
    }

    @Test func leftoverTemporaryFileIsRemovedByTheNextInstall() throws {
        let sandbox = try LaunchSandbox()
        try sandbox.install(try sandbox.seed("1.0.0"))
        let leftover = sandbox.dataDirectory.appendingPathComponent(".items.sqlite.reseed-tmp-0123456789abcdef")
        try Data(repeating: 7, count: 4096).write(to: leftover)
        let outcome = try sandbox.install(try sandbox.seed("2.0.0"))
        #expect(outcome.removedLeftovers == [".items.sqlite.reseed-tmp-0123456789abcdef"])
        #expect(!FileManager.default.fileExists(atPath: leftover.path))
        #expect(try sandbox.temporaryFiles().isEmpty)
    }

    @Test func seedFolderWithOneManifestIsAccepted() throws {
        let sandbox = try LaunchSandbox()
        let seed = try sandbox.seed("1.0.0")
        let launcher = Launcher(seed: seed.manifestURL.deletingLastPathComponent(), dataDirectory: sandbox.dataDirectory)
        #expect(try launcher.prepare().action == .installed)
    }

    @Test func prepareAloneInstallsWithoutOpening() throws {
        let sandbox = try LaunchSandbox()
        let outcome = try sandbox.launcher(try sandbox.seed("1.0.0")).prepare()
        #expect(outcome.action == .installed)
        // Never opened, but readied as an opened pool leaves it: in WAL mode, with the one-frame -wal
        // the install put beside it (a pool opening it finds a -wal and writes nothing).
        let header = try FileHandle(forReadingFrom: sandbox.storeURL).read(upToCount: 20) ?? Data()
        #expect(Array(header.suffix(2)) == [2, 2], "WAL read and write versions")
        let wal = try FileManager.default.attributesOfItem(atPath: sandbox.storeURL.path + "-wal")[.size] as? Int
        #expect(wal == 32 + 24 + 4096, "a header and one frame of a 4096-byte page")
        #expect(try sandbox.labels().count == 3)
    }

    @Test func progressReportsBytesUpToTheSeedSize() throws {
        let sandbox = try LaunchSandbox()
        let seed = try sandbox.seed("1.0.0", paddingBytes: 3 << 20)
        let reports = Mutex<[InstallProgress]>([])
        let launcher = sandbox.launcher(seed) { configuration in
            configuration.progress = { progress in reports.withLock { $0.append(progress) } }
        }
        _ = try launcher.prepare()
        let seen = reports.withLock { $0 }
        #expect(seen.allSatisfy { $0.step == .install && $0.total == seed.manifest.size })
        #expect(seen.last?.completed == seed.manifest.size)
        #expect(seen.last?.fraction == 1)
        #expect(seen.map(\.completed) == seen.map(\.completed).sorted())
    }
}

import Synchronization
