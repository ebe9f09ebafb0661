import Foundation
import GRDB
import Reseed
import ReseedTesting
import Testing

/// The rule between a bundled seed and one that arrived while the app ran: the bundle replaces a
/// download only when it is newer by SemVer precedence, or the downloaded store is unusable.
@Suite struct SeedSourceTests {
    /// Launches `bundled`, then replaces the open store with `downloaded` as a download would, and closes it.
    func install(download downloaded: Seed, over bundled: Seed, in sandbox: LaunchSandbox) async throws {
        let store = try await LiveStore(launcher: sandbox.launcher(bundled))
        try await store.replace(with: downloaded)
        #expect(store.version == downloaded.manifest.version)
    }

    @Test(arguments: ["1.0.0", "1.1.0", "1.1.0+other-build", "1.1.0-rc.1", "not-semver"])
    func aDownloadStaysWhenTheBundleIsNotNewer(bundledVersion: String) async throws {
        let sandbox = try LaunchSandbox()
        try await install(download: try sandbox.seed("1.1.0", rows: 4), over: try sandbox.seed("1.0.0"), in: sandbox)
        #expect(try PreferencesFile(url: sandbox.preferencesURL).recordedSource(of: "items") == .download)

        let outcome = try sandbox.install(try sandbox.seed(bundledVersion))
        #expect(outcome.action == .upToDate)
        #expect(outcome.version == "1.1.0")
        #expect(outcome.source == .download)
        #expect(outcome.change == nil)
        #expect(try sandbox.labels().count == 4)
        #expect(try sandbox.recordedVersion() == "1.1.0")
    }

    @Test(arguments: ["1.1.1", "1.2.0", "2.0.0"])
    func aNewerBundleReplacesADownload(bundledVersion: String) async throws {
        let sandbox = try LaunchSandbox()
        try await install(download: try sandbox.seed("1.1.0", rows: 4), over: try sandbox.seed("1.0.0"), in: sandbox)
        let outcome = try sandbox.install(try sandbox.seed(bundledVersion, rows: 6))
        #expect(outcome.action == .installed)
        #expect(outcome.reason == .versionChanged)
        #expect(outcome.change == .upgrade)
        #expect(outcome.previousVersion == "1.1.0")
        #expect(outcome.source == .bundle)
        #expect(try sandbox.labels().count == 6)
        #expect(try PreferencesFile(url: sandbox.preferencesURL).recordedSource(of: "items") == .bundle)
    }

    @Test func aMissingDownloadedStoreIsReplacedByTheBundle() async throws {
        let sandbox = try LaunchSandbox()
        try await install(download: try sandbox.seed("1.1.0", rows: 4), over: try sandbox.seed("1.0.0"), in: sandbox)
        try FileManager.default.removeItem(at: sandbox.storeURL)
        let outcome = try sandbox.install(try sandbox.seed("1.0.0"))
        #expect(outcome.action == .installed)
        #expect(outcome.reason == .storeMissing)
        #expect(try sandbox.labels().count == 3)
    }

    @Test func aDownloadedStoreThatFailsToOpenIsReplacedByTheBundle() async throws {
        let sandbox = try LaunchSandbox()
        try await install(download: try sandbox.seed("1.1.0", rows: 4), over: try sandbox.seed("1.0.0"), in: sandbox)
        // A SQLite header over garbage: it looks like a database until it is opened.
        var bytes = try Data(contentsOf: sandbox.storeURL)
        bytes.replaceSubrange(100..<bytes.count, with: Data(repeating: 0xA5, count: bytes.count - 100))
        try bytes.write(to: sandbox.storeURL)
        try? FileManager.default.removeItem(at: sandbox.dataDirectory.appendingPathComponent("items.sqlite-wal"))
        try? FileManager.default.removeItem(at: sandbox.dataDirectory.appendingPathComponent("items.sqlite-shm"))

        let (database, outcome) = try sandbox.launcher(try sandbox.seed("1.0.0")).launch()
        defer { try? database.close() }
        #expect(outcome.action == .installed)
        #expect(outcome.reason == .storeInvalid)
        #expect(outcome.version == "1.0.0")
        #expect(try await database.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM item") } == 3)
    }

    @Test func anEntryWithoutSourceCountsAsBundled() throws {
        let sandbox = try LaunchSandbox()
        try sandbox.install(try sandbox.seed("1.1.0"))
        try Data(#"{"reseed": {"items": {"version": "1.1.0"}}}"#.utf8).write(to: sandbox.preferencesURL)
        #expect(try PreferencesFile(url: sandbox.preferencesURL).recordedSource(of: "items") == .bundle)
        let outcome = try sandbox.install(try sandbox.seed("1.0.0"))
        #expect(outcome.action == .installed)
        #expect(outcome.change == .downgrade)
        #expect(try sandbox.recordedVersion() == "1.0.0")
    }

    @Test func semVerPrecedenceDecidesWhatIsNewer() {
        #expect(SeedVersion("2.1.0").isNewer(than: SeedVersion("2.0.9")))
        #expect(SeedVersion("2.1.0").isNewer(than: SeedVersion("2.1.0-rc.2")))
        #expect(SeedVersion("2.1.0-rc.10").isNewer(than: SeedVersion("2.1.0-rc.2")))
        #expect(!SeedVersion("2.1.0+b").isNewer(than: SeedVersion("2.1.0+a")))
        #expect(!SeedVersion("2.1.0").isNewer(than: SeedVersion("2.1.0")))
        #expect(SeedVersion("10").isNewer(than: SeedVersion("9")), "dotted numbers compare as numbers")
        #expect(!SeedVersion("2026-autumn").isNewer(than: SeedVersion("2026-spring")), "a version outside the grammar is never newer")
    }
}
