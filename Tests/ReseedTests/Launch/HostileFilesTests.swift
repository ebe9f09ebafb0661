import Foundation
import Reseed
import ReseedTesting
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Files in the data directory, or given as the seed, that are not what they seem.
@Suite struct HostileFilesTests {
    private func makeFIFO(_ url: URL) throws {
        try #require(mkfifo(url.path, 0o644) == 0, "mkfifo \(url.path)")
    }

    private func mode(_ url: URL) throws -> Int? {
        try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int
    }

    @Test func symlinkedPreferencesAreWrittenThroughKeepingTheTargetsMode() throws {
        let sandbox = try LaunchSandbox()
        try FileManager.default.createDirectory(at: sandbox.dataDirectory, withIntermediateDirectories: true)
        let elsewhere = sandbox.directory.appending("x")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        let target = elsewhere.appendingPathComponent("p.json")
        try Data(#"{"theme": "dark"}"#.utf8).write(to: target)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: target.path)
        try FileManager.default.createSymbolicLink(atPath: sandbox.preferencesURL.path, withDestinationPath: "../x/p.json")

        try sandbox.install(try sandbox.seed("1.0.0"))
        let second = try sandbox.seed("2.0.0")
        try sandbox.install(second)

        let link = try FileManager.default.destinationOfSymbolicLink(atPath: sandbox.preferencesURL.path)
        #expect(link == "../x/p.json")
        #expect(try mode(target) == 0o600)
        #expect(withoutInstallFields(try String(contentsOf: target, encoding: .utf8))
            == #"{"theme": "dark", "reseed": {"items": {"version": "2.0.0", "source": "bundle", "contentHash": ""# + (second.manifest.contentHash ?? "") + #""}}}"#)
        #expect(try sandbox.recordedVersion() == "2.0.0")
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path) == ["p.json"])
    }

    @Test func danglingPreferencesLinkIsAClearErrorNamingIt() throws {
        let sandbox = try LaunchSandbox()
        try FileManager.default.createDirectory(at: sandbox.dataDirectory, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: sandbox.preferencesURL.path, withDestinationPath: "missing/p.json")
        let error = #expect(throws: ReseedError.self) { try sandbox.install(try sandbox.seed("1.0.0")) }
        #expect(error?.path == sandbox.preferencesURL.path)
        #expect(error?.message.contains("symbolic link") == true)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: sandbox.preferencesURL.path) == "missing/p.json")
    }

    @Test func newPreferencesFileGetsTheDefaultMode() throws {
        let sandbox = try LaunchSandbox()
        let previous = umask(0o022)
        defer { umask(previous) }
        try sandbox.install(try sandbox.seed("1.0.0"))
        #expect(try mode(sandbox.preferencesURL) == 0o644)
    }

    @Test func fifoAsPreferencesIsRefusedWithoutWaiting() throws {
        let sandbox = try LaunchSandbox()
        try FileManager.default.createDirectory(at: sandbox.dataDirectory, withIntermediateDirectories: true)
        try makeFIFO(sandbox.preferencesURL)
        let seed = try sandbox.seed("1.0.0")
        let error = #expect(throws: ReseedError.self) { try sandbox.install(seed) }
        #expect(error?.step == .readPreferences)
        #expect(error?.message.contains("not a regular file (a FIFO)") == true)
        // The lock was released: a second launch is refused the same way, not with lockTimeout.
        let again = #expect(throws: ReseedError.self) { try sandbox.install(seed) }
        #expect(again?.code == .io)
    }

    @Test func fifoAsSeedFileIsRefusedAndTheStoreKept() throws {
        let sandbox = try LaunchSandbox()
        try sandbox.install(try sandbox.seed("1.0.0"))
        let seed = try sandbox.seed("2.0.0")
        try FileManager.default.removeItem(at: seed.fileURL)
        try makeFIFO(seed.fileURL)
        let error = #expect(throws: ReseedError.self) { try sandbox.install(seed) }
        #expect(error?.message.contains("not a regular file (a FIFO)") == true)
        #expect(error?.path == seed.fileURL.path)
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
        #expect(try sandbox.recordedVersion() == "1.0.0")
        #expect(try sandbox.temporaryFiles().isEmpty)
    }

    @Test func fifoAsManifestIsRefused() throws {
        let sandbox = try LaunchSandbox()
        let seed = try sandbox.seed("1.0.0")
        try FileManager.default.removeItem(at: seed.manifestURL)
        try makeFIFO(seed.manifestURL)
        let error = #expect(throws: ReseedError.self) { try sandbox.install(seed) }
        #expect(error?.step == .readManifest)
        #expect(error?.message.contains("not a regular file (a FIFO)") == true)
    }

    @Test func deviceAsSeedFileIsRefused() throws {
        let sandbox = try LaunchSandbox()
        let seed = try sandbox.seed("1.0.0")
        try FileManager.default.removeItem(at: seed.fileURL)
        try FileManager.default.createSymbolicLink(atPath: seed.fileURL.path, withDestinationPath: "/dev/zero")
        let error = #expect(throws: ReseedError.self) { try sandbox.install(seed) }
        #expect(error?.message.contains("not a regular file (a character device)") == true)
        #expect(try sandbox.temporaryFiles().isEmpty)
    }

    @Test(arguments: [Verification.size, .checksum])
    func seedFarLongerThanItsManifestIsCopiedNoFurtherThanOneByteMore(level: Verification) throws {
        let sandbox = try LaunchSandbox()
        try sandbox.install(try sandbox.seed("1.0.0"))
        let seed = try sandbox.seed("2.0.0")
        // 64 GiB, sparse: copied to the end, it would fill the disk.
        let handle = try FileHandle(forWritingTo: seed.fileURL)
        try handle.truncate(atOffset: 64 << 30)
        try handle.close()
        let copied = Mutex<Int64>(0)
        let launcher = sandbox.launcher(seed) { configuration in
            configuration.verification = level
            configuration.progress = { progress in copied.withLock { $0 = max($0, progress.completed) } }
        }
        let error = #expect(throws: ReseedError.self) { try launcher.launch() }
        #expect(error?.code == .verificationFailed)
        #expect(error?.message.contains("longer than") == true)
        #expect(copied.withLock { $0 } <= seed.manifest.size + 1)
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
        #expect(try sandbox.recordedVersion() == "1.0.0")
        #expect(try sandbox.temporaryFiles().isEmpty)
    }

    @Test func fifoInTheStoresPlaceIsReplacedAndKeptAside() throws {
        let sandbox = try LaunchSandbox()
        try sandbox.install(try sandbox.seed("1.0.0"))
        try FileManager.default.removeItem(at: sandbox.storeURL)
        try makeFIFO(sandbox.storeURL)
        let outcome = try sandbox.install(try sandbox.seed("1.0.0"))
        #expect(outcome.action == .installed)
        #expect(outcome.reason == .storeInvalid)
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
        #expect(try sandbox.files().contains { $0.hasPrefix("items.sqlite.invalid-") })
    }

    @Test(arguments: [257, 100_000])
    func deeplyNestedPreferencesAreKeptNotMovedAside(depth: Int) throws {
        let sandbox = try LaunchSandbox()
        try FileManager.default.createDirectory(at: sandbox.dataDirectory, withIntermediateDirectories: true)
        let deep = String(repeating: "{\"a\": [", count: depth) + "1" + String(repeating: "]}", count: depth)
        let original = "{\"app\": \(deep)}"
        try Data(original.utf8).write(to: sandbox.preferencesURL)
        let seed = try sandbox.seed("1.0.0")
        let outcome = try sandbox.install(seed)
        #expect(outcome.preferencesMovedAside == nil)
        #expect(outcome.reason == .preferencesMissing || outcome.reason == .fresh)
        let written = withoutInstallFields(try String(contentsOf: sandbox.preferencesURL, encoding: .utf8))
        #expect(written == "{\"app\": \(deep), \"reseed\": {\"items\": {\"version\": \"1.0.0\", \"source\": \"bundle\", \"contentHash\": \"\(seed.manifest.contentHash ?? "")\"}}}")
        #expect(try sandbox.recordedVersion() == "1.0.0")
    }

    @Test func deeplyNestedButBrokenPreferencesAreStillCorrupt() throws {
        let sandbox = try LaunchSandbox()
        try FileManager.default.createDirectory(at: sandbox.dataDirectory, withIntermediateDirectories: true)
        let broken = "{\"app\": " + String(repeating: "[", count: 5000) + String(repeating: "]", count: 4999) + "}"
        try Data(broken.utf8).write(to: sandbox.preferencesURL)
        let outcome = try sandbox.install(try sandbox.seed("1.0.0"))
        let aside = try #require(outcome.preferencesMovedAside)
        #expect(try Data(contentsOf: aside) == Data(broken.utf8))
    }

    @Test func preferencesOverTheLimitAreLeftUntouchedAndTheLaunchGoesOn() throws {
        let sandbox = try LaunchSandbox()
        try FileManager.default.createDirectory(at: sandbox.dataDirectory, withIntermediateDirectories: true)
        let padding = String(repeating: "x", count: PreferencesFile.maximumFileSize)
        let original = Data("{\"app\": \"\(padding)\"}".utf8)
        try original.write(to: sandbox.preferencesURL)
        let first = try sandbox.install(try sandbox.seed("1.0.0"))
        #expect(first.action == .installed)
        #expect(try PreferencesFile(url: sandbox.preferencesURL).read() == .tooLarge(bytes: Int64(original.count)))
        // The next launch finds the shipped seed in the store itself and keeps it.
        let second = try sandbox.install(try sandbox.seed("1.0.0"))
        #expect(second.action != .installed)
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
        let third = try sandbox.install(try sandbox.seed("2.0.0"))
        #expect(third.action == .installed)
        #expect(try sandbox.embeddedVersion() == "2.0.0")
        #expect(try Data(contentsOf: sandbox.preferencesURL) == original)
        #expect(try sandbox.files().filter { $0.contains("corrupt") }.isEmpty)
    }
}
