import Foundation
import GRDB
import Reseed
import ReseedPackaging
import ReseedTesting
import ReseedTestSupport

/// A temporary directory with seeds of the `items` store at any version, a signing key, a channel
/// folder served over HTTP on 127.0.0.1 by ``ChannelServer``, and a data directory.
final class ChannelSandbox {
    let directory: TemporaryDirectory
    let key = ChannelPrivateKey()
    let server: ChannelServer
    var channel: URL { directory.appending("channel") }
    var dataDirectory: URL { directory.appending("data") }
    var storeURL: URL { dataDirectory.appendingPathComponent("items.sqlite") }
    var preferencesURL: URL { dataDirectory.appendingPathComponent("preferences.json") }

    init() throws {
        directory = try TemporaryDirectory(prefix: "reseed-channel")
        try FileManager.default.createDirectory(at: directory.appending("channel"), withIntermediateDirectories: true)
        server = try ChannelServer(root: directory.appending("channel"), scratch: directory.appending("server"))
    }

    /// A seed whose `item` table has `rows` rows labelled `<version>-<n>`.
    func seed(_ version: String, rows: Int = 3, paddingBytes: Int = 0) throws -> Seed {
        try SeedFixture(name: "items", version: version, sql: [
            "CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT NOT NULL)",
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows)) INSERT INTO item (label) SELECT '\(version)-' || i FROM n",
        ], paddingBytes: paddingBytes).build(in: directory.appending("seed-\(version)"))
    }

    /// The launcher of an app that ships `bundled`.
    func launcher(_ bundled: Seed) -> Launcher {
        Launcher(seed: bundled.manifestURL, dataDirectory: dataDirectory)
    }

    /// Launches an app that ships `bundled`, and closes the store.
    @discardableResult
    func launch(_ bundled: Seed) throws -> LaunchOutcome {
        let (database, outcome) = try launcher(bundled).launch()
        try database.close()
        return outcome
    }

    /// Publishes `seed`. Uncompressed unless asked: the download tests cut, tamper and count the
    /// bytes of the seed file itself (`ChannelDeltaTests` publish compressed, as `reseed publish` does).
    @discardableResult
    func publish(_ seed: Seed, compressed: Bool = false, key: ChannelPrivateKey? = nil) throws -> ChannelPublisher.Result {
        var publisher = ChannelPublisher(channel: channel, privateKey: key ?? self.key)
        publisher.compresses = compressed
        // Tests play channels that roll back (to show what devices do); `reseed publish` refusing it is tested on its own.
        publisher.allowsDowngrade = true
        return try publisher.publish(seed)
    }

    /// 1.0.0 installed from the bundle, 1.1.0 (4 rows, padded) published, and a first update whose
    /// seed download the server cut after `cut` bytes; the update's error is returned.
    func cutDownload(after cut: Int, paddingBytes: Int) async throws -> (bundled: Seed, offered: Seed, error: ReseedError?) {
        let bundled = try seed("1.0.0")
        try launch(bundled)
        let offered = try seed("1.1.0", rows: 4, paddingBytes: paddingBytes)
        try publish(offered)
        try server.set(["cut": ["items-1.1.0.sqlite": cut]])
        do {
            _ = try await updater(bundled).update()
            return (bundled, offered, nil)
        } catch {
            return (bundled, offered, error)
        }
    }

    /// An updater of the app shipping `bundled`. The idle timeout is generous by default (a busy
    /// 2-core machine can hold a transfer's threads for seconds); the timeout tests pass short ones.
    func updater(_ bundled: Seed, publicKey: ChannelPublicKey? = nil, timeout: Duration = .seconds(120),
                 manifestDeadline: Duration = .seconds(120), allowsDowngrade: Bool = false, clockSkew: Duration? = nil,
                 now: (@Sendable () -> Date)? = nil) -> ChannelUpdater {
        var configuration = ChannelUpdater.Configuration()
        if let clockSkew { configuration.clockSkew = clockSkew }
        if let now { configuration.now = now }
        configuration.timeout = timeout
        configuration.manifestDeadline = manifestDeadline
        configuration.allowsDowngrade = allowsDowngrade
        return ChannelUpdater(channel: server.url, publicKey: publicKey ?? key.publicKey, launcher: launcher(bundled), configuration: configuration)
    }

    /// The labels in the store's `item` table, read through a fresh connection.
    func labels() throws -> [String] {
        let queue = try DatabaseQueue(path: storeURL.path)
        defer { try? queue.close() }
        return try queue.read { try String.fetchAll($0, sql: "SELECT label FROM item ORDER BY id") }
    }

    func recorded() throws -> (version: String?, source: SeedSource?) {
        let preferences = PreferencesFile(url: preferencesURL)
        return (try preferences.recordedVersion(of: "items"), try preferences.recordedSource(of: "items"))
    }

    /// Names in the data directory of partial downloads, their validators and temporary copies.
    func downloadFiles() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dataDirectory.path)
            .filter { $0.contains(".reseed-download-") || $0.contains(".reseed-tmp-") }.sorted()
    }

    /// Replaces the channel's `channel.json` by `manifest` as `edit` changes it, signed by `key` (the sandbox's by default).
    func forgeManifest(key: ChannelPrivateKey? = nil, _ edit: (inout ChannelManifest) -> Void) throws {
        let url = channel.appendingPathComponent(ChannelManifest.fileName)
        var manifest = try ChannelManifest.decode(Array(try Data(contentsOf: url)), source: url.path)
        edit(&manifest)
        let bytes = manifest.encoded()
        try Data(((try (key ?? self.key).signature(for: bytes)).base64EncodedString() + "\n").utf8)
            .write(to: channel.appendingPathComponent(ChannelManifest.signatureFileName))
        try bytes.write(to: url)
    }

    /// The channel's seed file for `version`.
    func publishedSeed(_ version: String) -> URL {
        channel.appendingPathComponent(ChannelManifest.seedFileName(name: "items", version: version))
    }
}
