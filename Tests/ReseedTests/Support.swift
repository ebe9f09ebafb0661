import Foundation
import GRDB
@testable import Reseed
import ReseedTesting
import ReseedTestSupport
import Testing

/// A sandbox with a data directory and seeds of the `items` store at any version.
final class LaunchSandbox: Sendable {
    let directory: TemporaryDirectory
    var dataDirectory: URL { directory.appending("data") }
    var storeURL: URL { dataDirectory.appendingPathComponent("items.sqlite") }
    var preferencesURL: URL { dataDirectory.appendingPathComponent("preferences.json") }

    init() throws {
        directory = try TemporaryDirectory(prefix: "reseed-test")
    }

    /// A seed whose `item` table has `rows` rows labelled with the version; compressed with `codec` (default gzip) when `compressed`.
    func seed(_ version: String, rows: Int = 3, paddingBytes: Int = 0, compressed: Bool = false, codec: SeedManifest.Compression = .gzip,
              sql extra: [String] = []) throws -> Seed {
        var fixture = SeedFixture(name: "items", version: version, sql: [
            "CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT NOT NULL)",
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows)) INSERT INTO item (label) SELECT '\(version)-' || i FROM n",
        ] + extra, paddingBytes: paddingBytes)
        fixture.compression = compressed ? codec : nil
        return try fixture.build(in: directory.appending("seed-\(version)" + (compressed ? "-" + codec.rawValue : "")))
    }

    func launcher(_ seed: Seed, _ configure: (inout Launcher.Configuration) -> Void = { _ in }) -> Launcher {
        var configuration = Launcher.Configuration()
        configure(&configuration)
        return Launcher(seed: seed.manifestURL, dataDirectory: dataDirectory, configuration: configuration)
    }

    /// Installs `seed` and closes the store.
    @discardableResult
    func install(_ seed: Seed) throws -> LaunchOutcome {
        let (database, outcome) = try launcher(seed).launch()
        try database.close()
        return outcome
    }

    /// The labels in the store's `item` table, read through a fresh connection.
    func labels() throws -> [String] {
        let queue = try DatabaseQueue(path: storeURL.path)
        defer { try? queue.close() }
        return try queue.read { try String.fetchAll($0, sql: "SELECT label FROM item ORDER BY id") }
    }

    /// The version the store itself says it holds.
    func embeddedVersion() throws -> String? {
        try SeedMetadata.read(path: storeURL.path)?.version
    }

    func recordedVersion() throws -> String? {
        try PreferencesFile(url: preferencesURL).recordedVersion(of: "items")
    }

    func temporaryFiles() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dataDirectory.path).filter { $0.contains(".reseed-tmp-") }
    }

    func files() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dataDirectory.path).sorted()
    }
}

func fileIdentity(_ url: URL) throws -> (inode: UInt64, modified: Date) {
    let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
    return ((attributes[.systemFileNumber] as? NSNumber)?.uint64Value ?? 0, attributes[.modificationDate] as? Date ?? .distantPast)
}

/// Preferences text without the fields an install records beside the content hash (the store
/// file's fingerprint, which changes with each file, the content hash it vouches for, and the
/// seed's incremental content hash when its manifest has one), after checking the first two are
/// there: what tests of the rest of the text compare.
func withoutInstallFields(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> String {
    #expect(text.contains(#""storeFingerprint": ""#) && text.contains(#""fingerprintedContentHash": ""#), sourceLocation: sourceLocation)
    return text.replacingOccurrences(
        of: #"(, "incrementalContentHash": "[0-9a-f]{64}")?, "storeFingerprint": "[0-9:]+", "fingerprintedContentHash": "[0-9a-f]{64}""#,
        with: "", options: .regularExpression)
}
