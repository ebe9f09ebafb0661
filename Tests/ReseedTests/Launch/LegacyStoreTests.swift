import Foundation
import GRDB
import Reseed
import ReseedTesting
import Testing

@Suite struct LegacyStoreTests {
    /// An earlier release's store at `folder/Legacy.sqlite` with version 1.0.0 recorded beside it,
    /// and a user row left in an uncheckpointed WAL (files copied while the app had it open, as after a crash).
    func legacyStore(_ sandbox: LaunchSandbox, in folder: URL) throws -> URL {
        let seed = try sandbox.seed("1.0.0")
        let staging = sandbox.directory.appending("staging-\(UUID().uuidString.prefix(6))")
        _ = try Launcher(seed: seed.manifestURL, dataDirectory: staging).prepare()
        var configuration = Configuration()
        configuration.prepareDatabase { try $0.execute(sql: "PRAGMA wal_autocheckpoint = 0") }
        let pool = try DatabasePool(path: staging.appendingPathComponent("items.sqlite").path, configuration: configuration)
        try pool.write { try $0.execute(sql: "INSERT INTO item (label) VALUES ('user row in the WAL')") }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for suffix in ["", "-wal", "-shm"] {
            try FileManager.default.copyItem(at: staging.appendingPathComponent("items.sqlite\(suffix)"),
                                             to: folder.appendingPathComponent("Legacy.sqlite\(suffix)"))
        }
        try FileManager.default.copyItem(at: staging.appendingPathComponent("preferences.json"), to: folder.appendingPathComponent("preferences.json"))
        try pool.close()
        return folder.appendingPathComponent("Legacy.sqlite")
    }

    func launcher(_ sandbox: LaunchSandbox, _ version: String, legacy: URL) throws -> Launcher {
        sandbox.launcher(try sandbox.seed(version)) { $0.legacyStores = [Launcher.LegacyStore(storeURL: legacy)] }
    }

    @Test func legacyStoreIsAdoptedWithItsUncheckpointedRowsAndVersion() throws {
        let sandbox = try LaunchSandbox()
        let legacy = try legacyStore(sandbox, in: sandbox.directory.appending("Documents"))
        let outcome = try launcher(sandbox, "1.0.0", legacy: legacy).prepare()
        #expect(outcome.adoptedFrom?.path == legacy.path)
        #expect(outcome.action == .upToDate)
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3", "user row in the WAL"])
        #expect(try sandbox.recordedVersion() == "1.0.0")
        for suffix in ["", "-wal", "-shm"] { #expect(!FileManager.default.fileExists(atPath: legacy.path + suffix)) }
    }

    @Test func adoptedStoreOfAnOlderVersionIsThenUpgraded() throws {
        let sandbox = try LaunchSandbox()
        let legacy = try legacyStore(sandbox, in: sandbox.directory.appending("Documents"))
        let outcome = try launcher(sandbox, "2.0.0", legacy: legacy).prepare()
        #expect(outcome.adoptedFrom?.path == legacy.path)
        #expect(outcome.action == .installed)
        #expect(outcome.previousVersion == "1.0.0")
        #expect(outcome.change == .upgrade)
        #expect(try sandbox.labels().first == "2.0.0-1")
    }

    @Test func whenBothExistTheCurrentStoreWinsAndTheLegacyOneStays() throws {
        let sandbox = try LaunchSandbox()
        let legacy = try legacyStore(sandbox, in: sandbox.directory.appending("Documents"))
        try sandbox.install(try sandbox.seed("1.0.0"))
        let legacyBytes = try Data(contentsOf: legacy)
        let outcome = try launcher(sandbox, "1.0.0", legacy: legacy).prepare()
        #expect(outcome.adoptedFrom == nil)
        #expect(outcome.legacyStoresLeftInPlace.map(\.path) == [legacy.path])
        #expect(try Data(contentsOf: legacy) == legacyBytes)
        #expect(FileManager.default.fileExists(atPath: legacy.path + "-wal"))
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
    }

    /// A `-wal` left in the data directory without its store (the one an install puts beside a
    /// single-file store, the store file since removed), holding a table the legacy store lacks:
    /// the adopted store never meets it.
    @Test func aWALLeftWithoutItsStoreIsNotPairedWithTheAdoptedStore() throws {
        let sandbox = try LaunchSandbox()
        let legacy = try legacyStore(sandbox, in: sandbox.directory.appending("Documents"))
        _ = try sandbox.launcher(try sandbox.seed("2.0.0")).prepare()
        var configuration = Configuration()
        configuration.prepareDatabase { try $0.execute(sql: "PRAGMA wal_autocheckpoint = 0") }
        let pool = try DatabasePool(path: sandbox.storeURL.path, configuration: configuration)
        try pool.write { try $0.execute(sql: "CREATE TABLE stray (x)") }
        let stray = sandbox.directory.appending("stray-wal")
        try FileManager.default.copyItem(atPath: sandbox.storeURL.path + "-wal", toPath: stray.path)
        try pool.close()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: sandbox.storeURL.path + suffix) }
        try FileManager.default.copyItem(atPath: stray.path, toPath: sandbox.storeURL.path + "-wal")

        let outcome = try launcher(sandbox, "1.0.0", legacy: legacy).prepare()
        #expect(outcome.adoptedFrom?.path == legacy.path)
        #expect(outcome.action == .upToDate)
        let queue = try DatabaseQueue(path: sandbox.storeURL.path)
        let tables = try queue.read { try String.fetchAll($0, sql: "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name") }
        let check = try queue.read { try String.fetchOne($0, sql: "PRAGMA quick_check") }
        try queue.close()
        #expect(!tables.contains("stray"), "\(tables)")
        #expect(check == "ok")
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3", "user row in the WAL"])
    }

    @Test(.enabled(if: FileManager.default.isWritableFile(atPath: "/dev/shm"), "needs /dev/shm, another filesystem"))
    func legacyStoreOnAnotherFilesystemIsCopiedCheckedAndRemoved() throws {
        let sandbox = try LaunchSandbox()
        let elsewhere = URL(fileURLWithPath: "/dev/shm/reseed-legacy-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: elsewhere) }
        let legacy = try legacyStore(sandbox, in: elsewhere)
        let outcome = try launcher(sandbox, "1.0.0", legacy: legacy).prepare()
        #expect(outcome.adoptedFrom?.path == legacy.path)
        #expect(try sandbox.labels().last == "user row in the WAL")
        #expect(!FileManager.default.fileExists(atPath: legacy.path))
        #expect(try sandbox.temporaryFiles().isEmpty)
    }

    @Test func legacyStoreOpenElsewhereIsNotMoved() throws {
        let sandbox = try LaunchSandbox()
        let legacy = try legacyStore(sandbox, in: sandbox.directory.appending("Documents"))
        let holder = try DatabasePool(path: legacy.path)
        let error = try #require(throws: ReseedError.self) {
            try launcher(sandbox, "1.0.0", legacy: legacy).with { $0.busyTimeout = .milliseconds(150) }.prepare()
        }
        #expect(error.code == .storeBusy)
        #expect(error.step == .adoptLegacyStore)
        #expect(try holder.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM item") } == 4)
        try holder.close()
        #expect(!FileManager.default.fileExists(atPath: sandbox.storeURL.path))
    }
}

extension Launcher {
    /// This launcher with its configuration changed.
    func with(_ change: (inout Configuration) -> Void) -> Launcher {
        var copy = self
        change(&copy.configuration)
        return copy
    }
}
