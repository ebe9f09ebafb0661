import Foundation
import Reseed
import ReseedPackaging
import ReseedTestSupport
import ReseedTesting
import Testing

/// When `publish` lets a delta entry carry the new seed's metadata values instead of needing its
/// file: only when the two seeds have the same schema, the same rows in every table but Reseed's
/// own, and the same statistics; otherwise the entry is as before (its file alone).
@Suite struct ChannelPublisherMetadataOnlyTests {
    /// The statements of the `items` seed: 3,000 rows, an index, ANALYZE statistics.
    static let base = [
        "CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT NOT NULL)",
        """
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
        INSERT INTO item (id, label) SELECT i, 'item ' || hex(i * 2654435761 % 4294967291) || ' ' || (i % 40) FROM n
        """,
        "CREATE INDEX item_label ON item (label)",
        "ANALYZE",
    ]

    /// The entry of the delta from 1.0.0 (`base`) to 1.0.1 built from `sql`, as published.
    static func entry(_ sql: [String]) throws -> ChannelManifest.Delta? {
        let sandbox = try ChannelSandbox()
        try sandbox.publish(try SeedFixture(name: "items", version: "1.0.0", sql: base).build(in: sandbox.directory.appending("old")), compressed: true)
        let published = try sandbox.publish(try SeedFixture(name: "items", version: "1.0.1", sql: sql).build(in: sandbox.directory.appending("new")), compressed: true)
        #expect(published.skippedDeltas.isEmpty, "\(published.skippedDeltas)")
        return published.manifest.deltas.first
    }

    @Test func theSameDataGivesTheNewVersionAndKeepsTheDeltaFile() throws {
        let delta = try #require(try Self.entry(Self.base))
        #expect(delta.metadataOnly == ChannelManifest.MetadataOnly(values: ["version": "1.0.1"]))
        #expect(delta.file.size > 0)
    }

    /// A user row, the schema, the statistics (missing, or other values), `user_version`, or Reseed's
    /// list of steps: any difference leaves the entry without the member.
    @Test(arguments: [
        ("a row", base + ["UPDATE item SET label = 'changed' WHERE id = 2500"]),
        ("the schema", base + ["CREATE INDEX item_label_id ON item (label, id)"]),
        ("no statistics", Array(base.dropLast())),
        ("other statistics", base + ["UPDATE sqlite_stat1 SET stat = '3000 7' WHERE idx = 'item_label'"]),
        ("user_version", base + ["PRAGMA user_version = 7"]),
    ])
    func anyOtherDifferenceLeavesTheEntryWithoutTheMember(difference: String, sql: [String]) throws {
        let delta = try #require(try Self.entry(sql), "\(difference)")
        #expect(delta.metadataOnly == nil, "\(difference)")
    }

    /// The same rows built by other steps: Reseed's own `reseed_steps` differs, so the delta file alone.
    @Test func otherStepsLeaveTheEntryWithoutTheMember() throws {
        let sandbox = try ChannelSandbox()
        try sandbox.publish(try SeedFixture(name: "items", version: "1.0.0", sql: Self.base).build(in: sandbox.directory.appending("old")), compressed: true)
        let split = SeedFixture(name: "items", version: "1.0.1", sql: Array(Self.base.prefix(2)), files: [("0002_index.sql", Self.base.suffix(2).joined(separator: ";\n") + ";\n")])
        let published = try sandbox.publish(try split.build(in: sandbox.directory.appending("new")), compressed: true)
        let delta = try #require(published.manifest.deltas.first)
        #expect(delta.metadataOnly == nil)
    }
}
