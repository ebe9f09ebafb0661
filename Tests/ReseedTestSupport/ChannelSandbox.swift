import Foundation
import GRDB
import Reseed
import ReseedPackaging
import ReseedTesting

/// A temporary directory with seeds of the `items` store at any version, a signing key, a channel
/// folder served by a ``ChannelHost`` (``ChannelServer`` on 127.0.0.1 unless told otherwise), and
/// a data directory.
///
/// ```swift
/// let sandbox = try ChannelSandbox()
/// let bundled = try sandbox.seed("1.0.0")
/// try sandbox.launch(bundled)
/// try sandbox.publish(try sandbox.seed("1.1.0", rows: 4))
/// let outcome = try await sandbox.updater(bundled).update()
/// ```
public final class ChannelSandbox {
    public let directory: TemporaryDirectory
    public let key = ChannelPrivateKey()
    /// What serves ``channel``.
    public let server: any ChannelHost
    public var channel: URL { directory.appending("channel") }
    public var dataDirectory: URL { directory.appending("data") }
    public var storeURL: URL { dataDirectory.appendingPathComponent("items.sqlite") }
    public var preferencesURL: URL { dataDirectory.appendingPathComponent("preferences.json") }

    /// A sandbox whose channel folder `host` serves, given the folder and a scratch folder of its own.
    /// Default ``ChannelServer``.
    public init(host: (_ root: URL, _ scratch: URL) throws -> any ChannelHost = { try ChannelServer(root: $0, scratch: $1) }) throws {
        directory = try TemporaryDirectory(prefix: "reseed-channel")
        try FileManager.default.createDirectory(at: directory.appending("channel"), withIntermediateDirectories: true)
        server = try host(directory.appending("channel"), directory.appending("server"))
    }

    /// A seed whose `item` table has `rows` rows labelled `<version>-<n>`.
    public func seed(_ version: String, rows: Int = 3, paddingBytes: Int = 0) throws -> Seed {
        try SeedFixture(name: "items", version: version, sql: [
            "CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT NOT NULL)",
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows)) INSERT INTO item (label) SELECT '\(version)-' || i FROM n",
        ], paddingBytes: paddingBytes).build(in: directory.appending("seed-\(version)"))
    }

    /// A release of the `items` seed: 3,000 rows of text that compresses about as well as real
    /// reference data; release `generation` > 0 updates, deletes and inserts a few of them.
    public func release(_ version: String, generation: Int, extraColumn: Bool = false) throws -> Seed {
        let columns = extraColumn ? "id INTEGER PRIMARY KEY, label TEXT NOT NULL, note TEXT" : "id INTEGER PRIMARY KEY, label TEXT NOT NULL"
        return try SeedFixture(name: "items", version: version, sql: [
            "CREATE TABLE item (\(columns))",
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
            INSERT INTO item (id, label) SELECT i, 'item ' || i || ' ' || hex(i * 2654435761 % 4294967291) || ' ' || hex(i * 40503 % 65521) FROM n
            """,
            "UPDATE item SET label = label || ' updated in \(generation)' WHERE \(generation) > 0 AND id % 300 = \(generation % 300)",
            "DELETE FROM item WHERE \(generation) > 0 AND id % 500 = \(generation % 500 + 7)",
            "INSERT INTO item (id, label) SELECT 3000 + \(generation) * 10 + value, 'new in \(generation)' FROM (SELECT 1 AS value UNION ALL SELECT 2) WHERE \(generation) > 0",
        ]).build(in: directory.appending("release-\(version)-\(generation)\(extraColumn ? "-wide" : "")"))
    }

    /// The `items` seed of ``release(_:generation:extraColumn:)``, plus a trigger; when `changed`, the
    /// release adds a table and an index and rewrites the trigger (a format-2 delta).
    public func schemaRelease(_ version: String, changed: Bool) throws -> Seed {
        var sql = [
            "CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT NOT NULL)",
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
            INSERT INTO item (id, label) SELECT i, 'item ' || i || ' ' || hex(i * 2654435761 % 4294967291) FROM n
            """,
        ]
        if changed {
            sql += [
                "UPDATE item SET label = label || ' updated' WHERE id % 300 = 1",
                "CREATE TABLE shelf (code TEXT PRIMARY KEY, item_id INTEGER NOT NULL) WITHOUT ROWID",
                "INSERT INTO shelf VALUES ('A1', 1), ('B2', 2)",
                "CREATE INDEX item_label ON item (label)",
                "CREATE TRIGGER item_guard BEFORE DELETE ON item BEGIN SELECT RAISE(ABORT, 'items stay'); END",
            ]
        } else {
            sql.append("CREATE TRIGGER item_guard BEFORE DELETE ON item BEGIN SELECT RAISE(IGNORE); END")
        }
        return try SeedFixture(name: "items", version: version, sql: sql).build(in: directory.appending("schema-\(version)"))
    }

    /// The launcher of an app that ships `bundled`.
    public func launcher(_ bundled: Seed) -> Launcher {
        Launcher(seed: bundled.manifestURL, dataDirectory: dataDirectory)
    }

    /// Launches an app that ships `bundled`, and closes the store.
    @discardableResult
    public func launch(_ bundled: Seed) throws -> LaunchOutcome {
        let (database, outcome) = try launcher(bundled).launch()
        try database.close()
        return outcome
    }

    /// Publishes `seed`. Uncompressed unless asked: the download tests cut, tamper and count the
    /// bytes of the seed file itself (the delta tests publish compressed, as `reseed publish` does).
    @discardableResult
    public func publish(_ seed: Seed, compressed: Bool = false, key: ChannelPrivateKey? = nil) throws -> ChannelPublisher.Result {
        var publisher = ChannelPublisher(channel: channel, privateKey: key ?? self.key)
        publisher.compresses = compressed
        // Tests play channels that roll back (to show what devices do); `reseed publish` refusing it is tested on its own.
        publisher.allowsDowngrade = true
        return try publisher.publish(seed)
    }

    /// 1.0.0 installed from the bundle, 1.1.0 (4 rows, padded) published, and a first update whose
    /// seed download the server cut after `cut` bytes; the update's error is returned.
    public func cutDownload(after cut: Int, paddingBytes: Int) async throws -> (bundled: Seed, offered: Seed, error: ReseedError?) {
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

    /// 1.0.0 installed, 1.1.0 (about 1 MiB, `items-1.1.0.sqlite`) published, and the host set to send
    /// its first `burst` bytes at once, then a byte every half second (`trickleAfter`).
    public func trickling(after burst: Int) throws -> (bundled: Seed, offered: Seed) {
        let bundled = try seed("1.0.0")
        try launch(bundled)
        let offered = try seed("1.1.0", rows: 4, paddingBytes: 1 << 20)
        try publish(offered)
        try server.set(["trickleAfter": ["items-1.1.0.sqlite": [burst, 0.5]]])
        return (bundled, offered)
    }

    /// `configuration` pointed at the sandbox's host.
    public func configuration(_ configuration: ChannelUpdater.Configuration = ChannelUpdater.Configuration()) -> ChannelUpdater.Configuration {
        var configuration = configuration
        server.configure(&configuration)
        return configuration
    }

    /// An updater of the app shipping `bundled`. The idle timeout is generous by default (a busy
    /// 2-core machine can hold a transfer's threads for seconds); the timeout tests pass short ones.
    public func updater(_ bundled: Seed, publicKey: ChannelPublicKey? = nil, timeout: Duration = .seconds(120),
                        manifestDeadline: Duration = .seconds(120), allowsDowngrade: Bool = false, clockSkew: Duration? = nil,
                        now: (@Sendable () -> Date)? = nil, publicKeys: [ChannelPublicKey]? = nil,
                        adjust: (inout ChannelUpdater.Configuration) -> Void = { _ in }) -> ChannelUpdater {
        var configuration = configuration()
        adjust(&configuration)
        if let clockSkew { configuration.clockSkew = clockSkew }
        if let now { configuration.now = now }
        configuration.timeout = timeout
        configuration.manifestDeadline = manifestDeadline
        configuration.allowsDowngrade = allowsDowngrade
        return ChannelUpdater(channel: server.url, publicKeys: publicKeys ?? [publicKey ?? key.publicKey], launcher: launcher(bundled), configuration: configuration)
    }

    /// The labels in the store's `item` table, read through a fresh connection.
    public func labels() throws -> [String] {
        let queue = try DatabaseQueue(path: storeURL.path)
        defer { try? queue.close() }
        return try queue.read { try String.fetchAll($0, sql: "SELECT label FROM item ORDER BY id") }
    }

    public func recorded() throws -> (version: String?, source: SeedSource?) {
        let preferences = PreferencesFile(url: preferencesURL)
        return (try preferences.recordedVersion(of: "items"), try preferences.recordedSource(of: "items"))
    }

    /// An app's committed row left in the store's `-wal` (item 2's label set to `label`): written by
    /// another process (python3's sqlite3) that exits without closing, so nothing checkpoints it into
    /// the store file. Returns the writer's exit status.
    public func leaveARowInTheWAL(label: String) throws -> Int32 {
        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        writer.arguments = ["-c", """
            import os, sqlite3, sys
            c = sqlite3.connect(sys.argv[1]); c.execute("PRAGMA wal_autocheckpoint = 0")
            c.execute("UPDATE item SET label = ? WHERE id = 2", (sys.argv[2],)); c.commit(); os._exit(0)
            """, storeURL.path, label]
        try writer.run()
        writer.waitUntilExit()
        return writer.terminationStatus
    }

    /// The store's content hash, computed from the file.
    public func storeContentHash() throws -> String {
        try SeedContentHash.compute(path: storeURL.path)
    }

    /// The content hash the preferences recorded for the installed seed.
    public func recordedContentHash() throws -> String? {
        let text = try String(contentsOf: preferencesURL, encoding: .utf8)
        guard let range = text.range(of: #""contentHash": "([0-9a-f]{64})""#, options: .regularExpression) else { return nil }
        return String(text[range].dropFirst("\"contentHash\": \"".count).dropLast())
    }

    /// Names in the data directory of partial downloads, their validators and temporary copies.
    public func downloadFiles() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dataDirectory.path)
            .filter { $0.contains(".reseed-download-") || $0.contains(".reseed-tmp-") }.sorted()
    }

    /// Replaces the channel's `channel.json` by `manifest` as `edit` changes it, signed by `key` (the sandbox's by default).
    public func forgeManifest(key: ChannelPrivateKey? = nil, _ edit: (inout ChannelManifest) -> Void) throws {
        let url = channel.appendingPathComponent(ChannelManifest.fileName)
        var manifest = try ChannelManifest.decode(Array(try Data(contentsOf: url)), source: url.path)
        edit(&manifest)
        let bytes = manifest.encoded()
        try Data(((try (key ?? self.key).signature(for: bytes)).base64EncodedString() + "\n").utf8)
            .write(to: channel.appendingPathComponent(ChannelManifest.signatureFileName))
        try bytes.write(to: url)
    }

    /// Re-signs the channel's manifest after `edit` changed its text.
    public func resign(_ edit: (inout String) -> Void) throws {
        let url = channel.appendingPathComponent(ChannelManifest.fileName)
        var text = try String(contentsOf: url, encoding: .utf8)
        edit(&text)
        try Data(text.utf8).write(to: url)
        let signature = try key.signature(for: Data(text.utf8))
        try Data((signature.base64EncodedString() + "\n").utf8).write(to: channel.appendingPathComponent(ChannelManifest.signatureFileName))
    }

    /// Every file of the channel folder, by name: what a mirror can keep and serve again later
    /// (``restore(_:)``), as a hostile mirror replays an old snapshot of the folder.
    public func snapshot() throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: channel.path) where !name.hasPrefix(".") {
            files[name] = try Data(contentsOf: channel.appendingPathComponent(name))
        }
        return files
    }

    /// Makes the channel folder hold exactly `snapshot`'s files (a replay of an old folder).
    public func restore(_ snapshot: [String: Data]) throws {
        for name in try FileManager.default.contentsOfDirectory(atPath: channel.path) where !name.hasPrefix(".") && snapshot[name] == nil {
            try FileManager.default.removeItem(at: channel.appendingPathComponent(name))
        }
        for (name, bytes) in snapshot { try bytes.write(to: channel.appendingPathComponent(name)) }
    }

    /// The trust floors file the updater keeps beside the store.
    public var trustFloorsURL: URL { dataDirectory.appendingPathComponent(".items.sqlite.reseed-trust.json") }

    /// The channel's seed file for `version`.
    public func publishedSeed(_ version: String) -> URL {
        channel.appendingPathComponent(ChannelManifest.seedFileName(name: "items", version: version))
    }
}
