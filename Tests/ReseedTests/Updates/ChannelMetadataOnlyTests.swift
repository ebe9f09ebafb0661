import Foundation
import GRDB
@testable import Reseed
import ReseedPackaging
import ReseedTestSupport
import ReseedTesting
import Testing

/// A release whose data did not change (the same rows, schema and statistics as the one before, a
/// new version): its delta entry carries the metadata values that change, devices of this Reseed
/// make the delta themselves and download nothing, older readers download the delta file, and an
/// entry that is forged or does not fit is refused, the store untouched, and the full seed installed.
@Suite(.timeLimit(.minutes(10))) struct ChannelMetadataOnlyTests {
    /// The `items` seed at `version`: 3,000 rows (or `rows`), an index and ANALYZE statistics, the same data at every version.
    static func sameData(_ sandbox: ChannelSandbox, _ version: String, rows: Int = 3000) throws -> Seed {
        try SeedFixture(name: "items", version: version, sql: [
            "CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT NOT NULL)",
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows))
            INSERT INTO item (id, label) SELECT i, 'item ' || i || ' ' || hex(i * 2654435761 % 4294967291) FROM n
            """,
            "CREATE INDEX item_label ON item (label)",
            "ANALYZE",
        ]).build(in: sandbox.directory.appending("same-\(version)"))
    }

    /// 1.0.0 installed from the bundle and published, then 1.0.1, the same data, published (both
    /// compressed). With `appWrote`, the app's launch then wrote into the store a row as it was (its
    /// content stays the seed's, its file changed): the delta's result is hashed whole.
    static func sameDataPublished(_ sandbox: ChannelSandbox, appWrote: Bool = true) throws -> (bundled: Seed, offered: Seed, published: ChannelPublisher.Result) {
        let bundled = try sameData(sandbox, "1.0.0")
        try sandbox.launch(bundled)
        if appWrote { try appRewritesARow(sandbox, bundled) }
        try sandbox.publish(bundled, compressed: true)
        let offered = try sameData(sandbox, "1.0.1")
        return (bundled, offered, try sandbox.publish(offered, compressed: true))
    }

    /// The paths the updates asked for after `before` requests, past the manifest, its signature and keys.json.
    static func downloads(_ sandbox: ChannelSandbox, after before: Int) throws -> [String] {
        try sandbox.server.requests().dropFirst(before).map(\.path).filter { !["/channel.json", "/channel.json.sig", "/keys.json"].contains($0) }
    }

    /// A launch of the app that changes its first item's label and changes it back: the store's
    /// content stays the seed's, its file does not (it no longer has the fingerprint its install recorded).
    static func appRewritesARow(_ sandbox: ChannelSandbox, _ bundled: Seed) throws {
        let (pool, _) = try sandbox.launcher(bundled).launch()
        // Twice, in one transaction: SQLite writes no page whose bytes a change leaves as they were.
        try pool.write { db in
            try db.execute(sql: "UPDATE item SET label = label || '!' WHERE rowid = (SELECT min(rowid) FROM item)")
            try db.execute(sql: "UPDATE item SET label = substr(label, 1, length(label) - 1) WHERE rowid = (SELECT min(rowid) FROM item)")
        }
        try pool.close()
    }

    /// Updates the store from the channel; returns the outcome and what the update logged.
    static func update(_ sandbox: ChannelSandbox, _ bundled: Seed) async throws -> (ChannelUpdater.Outcome, [String]) {
        try await LaunchesThatOnlyReadTests().update(sandbox, bundled)
    }

    static let incremental = LaunchesThatOnlyReadTests.incremental
    static let whole = "hashed the delta's whole result"

    /// Rows of `sql` in the database file at `path`, read-only.
    static func rows(_ sql: String, in path: String) throws -> [[DatabaseValue]] {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in try Row.fetchAll(db, sql: sql).map { Array($0.databaseValues) } }
    }

    /// The member as read and written: its values, its place (the entry's last member), and a
    /// malformed one kept as a refusal for the update, not as the manifest's failure.
    @Test func theMemberIsReadAndRoundTripsThroughTheEncoding() throws {
        let hash = ChannelManifestFormatTests.hash
        let entry = #"{"fromVersion": "1.0.0", "fromContentHash": "\#(hash)", "encoding": "gzip", "file": "d.gz", "size": 80, "sha256": "\#(hash)""#
        func decode(_ member: String) throws(ReseedError) -> ChannelManifest {
            try ChannelManifestFormatTests.decode(#", "contentHash": "\#(hash)", "deltas": [\#(entry)\#(member)}]"#)
        }
        let manifest = try decode(#", "metadata": {"version": "1.1.0", "format": "1"}"#)
        let delta = try #require(manifest.deltas.first)
        #expect(delta.metadataOnly == ChannelManifest.MetadataOnly(values: ["version": "1.1.0", "format": "1"]))
        let text = String(decoding: manifest.encoded(), as: UTF8.self)
        #expect(text.contains(#""sha256": "\#(hash)", "metadata": {"format": "1", "version": "1.1.0"}}"#), "\(text)")
        #expect(try ChannelManifest.decode(Array(manifest.encoded()), source: "again") == manifest)
        #expect(try decode("").deltas.first?.metadataOnly == nil)
        let refused = try decode(#", "metadata": {"version": "1.0.0"}"#).deltas.first?.metadataOnly
        #expect(refused != nil && refused != ChannelManifest.MetadataOnly(values: ["version": "1.0.0"]))
        #expect(ChannelManifest.MetadataOnly.problem(of: ["version": "1.0.0"], version: "1.1.0") == #"version "1.0.0" is not the manifest's "1.1.0""#)
    }

    /// Over the real HTTP server: nothing but the manifest, its signature and keys.json is fetched,
    /// and the store ends with the new seed's content hash, statistics and version.
    @Test func aReleaseWithTheSameDataArrivesWithoutADeltaFile() async throws {
        let sandbox = try ChannelSandbox()
        let (bundled, offered, published) = try Self.sameDataPublished(sandbox)
        let delta = try #require(published.manifest.deltas.first)
        #expect(delta.metadataOnly?.values == ["version": "1.0.1"])
        // Older apps still find the delta file, and the statistics make it more than a page.
        #expect(FileManager.default.fileExists(atPath: sandbox.channel.appendingPathComponent(delta.file.smallest.file).path))
        let text = try String(contentsOf: sandbox.channel.appendingPathComponent(ChannelManifest.fileName), encoding: .utf8)
        #expect(text.contains(#"], "metadata": {"version": "1.0.1"}}"#), "\(text)")
        let before = try sandbox.server.requests().count

        let (outcome, log) = try await Self.update(sandbox, bundled)
        #expect(log.contains(Self.whole), "\(log)")
        #expect(outcome.action == .updated)
        #expect(outcome.method == .delta, "\(outcome.deltaFailure ?? "")")
        #expect(outcome.version == "1.0.1")
        #expect(outcome.deltaFailure == nil)
        #expect(outcome.downloadedBytes == 0)
        #expect(try Self.downloads(sandbox, after: before).isEmpty)
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash)
        #expect(try sandbox.recordedContentHash() == offered.manifest.contentHash)
        #expect(try sandbox.recorded() == ("1.0.1", .download))
        #expect(try sandbox.downloadFiles().isEmpty)
        let store = sandbox.storeURL.path
        #expect(try Self.rows("SELECT value FROM reseed_metadata WHERE key = 'version'", in: store) == [["1.0.1".databaseValue]])
        let statistics = "SELECT tbl, idx, stat FROM sqlite_stat1 ORDER BY tbl, idx"
        #expect(try Self.rows(statistics, in: store) == Self.rows(statistics, in: offered.fileURL.path))
        #expect(try !Self.rows(statistics, in: store).isEmpty)
        // A launch keeps it.
        #expect(try sandbox.launch(bundled).version == "1.0.1")
    }

    static let signedValues = "checked the metadata-only delta's result against the channel's signed values"

    /// The incremental content hash the preferences recorded for the installed seed.
    static func recordedIncrementalHash(_ sandbox: ChannelSandbox) throws -> String? {
        let entries = try PreferencesFile(url: sandbox.preferencesURL).readEntries().entries
        return entries["items"]?.incrementalContentHash
    }

    /// A store the app only read keeps its recorded fingerprint: the device makes the delta, checks
    /// the result against the signed values without hashing it whole, downloads nothing and records
    /// the new seed's content hash and incremental content hash, with which the next release's delta
    /// file (other rows) is checked from the rows it changes.
    @Test func aStoreTheAppOnlyReadIsCheckedAgainstTheSignedValues() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let (bundled, offered, _) = try Self.sameDataPublished(sandbox, appWrote: false)
        let before = try sandbox.server.requests().count

        let (outcome, log) = try await Self.update(sandbox, bundled)
        #expect(outcome.method == .delta, "\(outcome.deltaFailure ?? "")")
        #expect(log.contains(Self.signedValues), "\(log)")
        #expect(!log.contains(Self.whole), "\(log)")
        #expect(outcome.downloadedBytes == 0)
        #expect(try Self.downloads(sandbox, after: before).isEmpty)
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash)
        #expect(try sandbox.recordedContentHash() == offered.manifest.contentHash)
        let offeredIncremental = try IncrementalContentHash.compute(path: offered.fileURL.path).hash
        #expect(try Self.recordedIncrementalHash(sandbox) == offeredIncremental)
        #expect(try IncrementalContentHash.compute(path: sandbox.storeURL.path).hash == offeredIncremental)
        #expect(try sandbox.recorded() == ("1.0.1", .download))
        #expect(try sandbox.downloadFiles().isEmpty)

        // After another launch that only reads, 1.1.0 (other rows) arrives as a delta file checked from its rows.
        try sandbox.launch(bundled)
        let next = try Self.sameData(sandbox, "1.1.0", rows: 3100)
        let published = try sandbox.publish(next, compressed: true)
        #expect(published.manifest.deltas.first?.metadataOnly == nil)
        let (again, secondLog) = try await Self.update(sandbox, bundled)
        #expect(again.method == .delta, "\(again.deltaFailure ?? "")")
        #expect(secondLog.contains(Self.incremental), "\(secondLog)")
        #expect(try sandbox.storeContentHash() == next.manifest.contentHash)
    }

    /// A store the app changed a row of: its fingerprint no longer vouches for the rows the entry
    /// does not touch, so the made delta's result is hashed whole, found to be another seed, and the
    /// full seed installed (never the app's row under the new seed's signed hash).
    @Test func aStoreTheAppChangedIsHashedWhole() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let (bundled, offered, _) = try Self.sameDataPublished(sandbox, appWrote: false)
        let (pool, _) = try sandbox.launcher(bundled).launch()
        try await pool.write { db in try db.execute(sql: "UPDATE item SET label = 'edited by the app' WHERE id = 2") }
        try pool.close()

        let (outcome, log) = try await Self.update(sandbox, bundled)
        #expect(!log.contains(Self.signedValues), "\(log)")
        #expect(outcome.method == .full)
        #expect(outcome.deltaFailure?.contains("the delta applied yields content hash") == true, "\(outcome.deltaFailure ?? "nil")")
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash)
        #expect(try sandbox.recordedContentHash() == offered.manifest.contentHash)
    }

    /// Entries a device reads whose values do not fit the store it only read: each refused by the
    /// check against the signed values in one sentence, the store untouched, the full seed installed.
    @Test(arguments: [
        (#""metadata": {"version": "1.0.1", "flavour": "plain"}"#, "the store's reseed_metadata has no key \"flavour\" to set"),
        (#""metadata": {"version": "1.0.1", "name": "items"}"#, "the store's reseed_metadata already holds \"name\" = \"items\""),
        (#""metadata": {"version": "1.0.1", "name": "other"}"#, "seed says it is 'other' 1.0.1, the manifest says 'items' 1.0.1"),
    ])
    func aForgedEntryIsRefusedWithoutHashingTheStore(member: String, reason: String) async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let (bundled, offered, published) = try Self.sameDataPublished(sandbox, appWrote: false)
        try sandbox.resign { text in text = text.replacingOccurrences(of: #""metadata": {"version": "1.0.1"}"#, with: member) }
        try await expectRefused(sandbox, bundled: bundled, offered: offered, published: published, because: reason)
    }

    /// What an app older than the member reads (it ignores `metadata`): the regular delta file, downloaded and applied.
    @Test func anOlderReaderIgnoresTheMemberAndDownloadsTheDeltaFile() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let (bundled, offered, published) = try Self.sameDataPublished(sandbox)
        let delta = try #require(published.manifest.deltas.first)
        let url = sandbox.channel.appendingPathComponent(ChannelManifest.fileName)
        let text = try String(contentsOf: url, encoding: .utf8)
        // The member is the entry's last: removing it leaves the bytes a manifest without it has.
        try sandbox.forgeManifest { manifest in manifest.deltas[0].metadataOnly = nil }
        let stripped = try String(contentsOf: url, encoding: .utf8)
        #expect(text.replacingOccurrences(of: #", "metadata": {"version": "1.0.1"}"#, with: "") == stripped)
        let before = try sandbox.server.requests().count

        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.method == .delta, "\(outcome.deltaFailure ?? "")")
        #expect(try Self.downloads(sandbox, after: before) == ["/" + delta.file.smallest.file])
        #expect(outcome.downloadedBytes == delta.file.smallest.size)
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash)
        #expect(try sandbox.recorded() == ("1.0.1", .download))
    }

    /// The update with the full seed's files gone from the channel fails and leaves the store as it
    /// was; with them back, it installs the full seed, `reason` in its ``ChannelUpdater/Outcome/deltaFailure``
    /// and no delta file downloaded.
    func expectRefused(_ sandbox: ChannelSandbox, bundled: Seed, offered: Seed, published: ChannelPublisher.Result, because reason: String,
                       sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let full = (published.manifest.compressed?.encodings ?? []).map(\.file) + [published.manifest.file]
        let aside = sandbox.directory.appending("aside")
        try FileManager.default.createDirectory(at: aside, withIntermediateDirectories: true)
        for file in full { try FileManager.default.moveItem(at: sandbox.channel.appendingPathComponent(file), to: aside.appendingPathComponent(file)) }
        let store = try Data(contentsOf: sandbox.storeURL)
        let recorded = try sandbox.recorded()
        let recordedHash = try sandbox.recordedContentHash()

        await #expect(throws: ReseedError.self, sourceLocation: sourceLocation) { try await sandbox.updater(bundled).update() }
        #expect(try Data(contentsOf: sandbox.storeURL) == store, sourceLocation: sourceLocation)
        #expect(try sandbox.recorded() == recorded, sourceLocation: sourceLocation)
        #expect(try sandbox.recordedContentHash() == recordedHash, sourceLocation: sourceLocation)
        #expect(try sandbox.storeContentHash() == bundled.manifest.contentHash, sourceLocation: sourceLocation)
        // No delta made on the device is left (the full seed's failed download is kept to resume, as always).
        let left = try sandbox.downloadFiles()
        #expect(!left.contains { $0.contains("delta") }, "\(left)", sourceLocation: sourceLocation)

        for file in full { try FileManager.default.moveItem(at: aside.appendingPathComponent(file), to: sandbox.channel.appendingPathComponent(file)) }
        let before = try sandbox.server.requests().count
        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.method == .full, sourceLocation: sourceLocation)
        #expect(outcome.deltaFailure?.contains(reason) == true, "\(outcome.deltaFailure ?? "nil")", sourceLocation: sourceLocation)
        #expect(try Self.downloads(sandbox, after: before) == ["/" + (published.manifest.compressed?.smallest.file ?? "")], sourceLocation: sourceLocation)
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash, sourceLocation: sourceLocation)
        #expect(try sandbox.downloadFiles().isEmpty, sourceLocation: sourceLocation)
    }

    /// Forged entries a device reads, each refused with its sentence: values out of bounds or of the
    /// wrong kind, a version that is not the manifest's, a key the installed seed lacks, a name that
    /// would make it another store's.
    @Test(arguments: [
        (#""metadata": "1.0.1""#, "field \"deltas[0].metadata\": expected an object, found a string"),
        (#""metadata": {}"#, "0 values; 1 to 8"),
        (#""metadata": {"version": "1.0.1", "a": "", "b": "", "c": "", "d": "", "e": "", "f": "", "g": "", "h": ""}"#, "9 values; 1 to 8"),
        (#""metadata": {"version": 101}"#, "\"version\": expected a string, found a number"),
        (#""metadata": {"version": "1.0.1", "note": "LONG"}"#, "\"note\" is 257 bytes; a value is at most 256 bytes"),
        (#""metadata": {"version": "1.0.1", "bad key": "x"}"#, "\"bad key\" is not a metadata key"),
        (#""metadata": {"version": "9.9.9"}"#, "version \"9.9.9\" is not the manifest's \"1.0.1\""),
        (#""metadata": {"format": "1"}"#, "version missing is not the manifest's"),
        (#""metadata": {"version": "1.0.1", "flavour": "plain"}"#, "1 row(s) updated of 2"),
        (#""metadata": {"version": "1.0.1", "name": "other"}"#, "not the expected"),
    ])
    func aForgedEntryIsRefusedAndTheFullSeedInstalled(member: String, reason: String) async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let (bundled, offered, published) = try Self.sameDataPublished(sandbox)
        try sandbox.resign { text in
            text = text.replacingOccurrences(of: #""metadata": {"version": "1.0.1"}"#,
                                             with: member.replacingOccurrences(of: "LONG", with: String(repeating: "x", count: 257)))
        }
        try await expectRefused(sandbox, bundled: bundled, offered: offered, published: published, because: reason)
    }

    /// A manifest whose content hash is not what the entry's values make of the installed seed: the
    /// result, hashed whole, is refused.
    @Test func anEntryLeadingToAnotherContentHashIsRefused() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let (bundled, offered, published) = try Self.sameDataPublished(sandbox)
        try sandbox.forgeManifest { manifest in manifest.contentHash = String(repeating: "ab", count: 32) }
        try await expectRefused(sandbox, bundled: bundled, offered: offered, published: published, because: "not the expected " + String(repeating: "ab", count: 32))
    }

    /// An entry claiming that two seeds whose rows differ differ only in their metadata: the device's
    /// result keeps the old rows, and its content hash is not the signed one.
    @Test func anEntryClaimingSamenessForSeedsThatDifferIsRefused() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let (bundled, offered, published) = try installedAndPublished(sandbox)
        try Self.appRewritesARow(sandbox, bundled)
        #expect(published.manifest.deltas.first?.metadataOnly == nil)
        try sandbox.forgeManifest { manifest in manifest.deltas[0].metadataOnly = ChannelManifest.MetadataOnly(values: ["version": "1.1.0"]) }
        try await expectRefused(sandbox, bundled: bundled, offered: offered, published: published, because: "the delta applied yields content hash")
    }

    /// A member named twice, inside the entry's `metadata` or the entry itself, is refused with the
    /// whole manifest (as anywhere in it): nothing is downloaded, the store stays.
    @Test(arguments: [
        #""metadata": {"version": "1.0.1", "version": "1.0.1"}"#,
        #""metadata": {"version": "1.0.1"}, "metadata": {"version": "1.0.1"}"#,
    ])
    func aRepeatedMemberRefusesTheManifest(member: String) async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let (bundled, _, _) = try Self.sameDataPublished(sandbox)
        try sandbox.resign { text in text = text.replacingOccurrences(of: #""metadata": {"version": "1.0.1"}"#, with: member) }
        let store = try Data(contentsOf: sandbox.storeURL)
        let before = try sandbox.server.requests().count

        let error = await #expect(throws: ReseedError.self) { try await sandbox.updater(bundled).update() }
        #expect(error?.code == .invalidManifest)
        #expect(error?.message.contains("named twice") == true, "\(error?.message ?? "")")
        #expect(try Self.downloads(sandbox, after: before).isEmpty)
        #expect(try Data(contentsOf: sandbox.storeURL) == store)
        #expect(try sandbox.recorded() == ("1.0.0", .bundle))
    }
}
