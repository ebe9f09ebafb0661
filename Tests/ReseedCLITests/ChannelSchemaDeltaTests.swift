import Foundation
import GRDB
import Reseed
import ReseedPackaging
import ReseedTesting
import Testing

/// A release that changes the schema (a table added, a trigger rewritten, an index added) gets a
/// format-2 delta on the channel; `reseed diff --delta-size` and `reseed publish` say what it carries.
@Suite(.timeLimit(.minutes(10))) struct ChannelSchemaDeltaTests {
    /// The `items` seed of ``ChannelSandbox/release(_:generation:extraColumn:)``, plus a trigger; release 1.1.0 adds a table and an index and rewrites the trigger.
    func release(_ version: String, changed: Bool, in sandbox: ChannelSandbox) throws -> Seed {
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
        return try SeedFixture(name: "items", version: version, sql: sql).build(in: sandbox.directory.appending("schema-\(version)"))
    }

    @Test func aSchemaChangeIsUpdatedByADeltaThatReachesTheNewContentHash() async throws {
        let sandbox = try ChannelSandbox()
        let bundled = try release("1.0.0", changed: false, in: sandbox)
        try sandbox.launch(bundled)
        try sandbox.publish(bundled, compressed: true)
        let offered = try release("1.1.0", changed: true, in: sandbox)
        let published = try sandbox.publish(offered, compressed: true)
        let delta = try #require(published.manifest.deltas.first, "\(published.skippedDeltas)")
        let built = try #require(published.deltaContents.first?.built)
        #expect(built.format == 2)
        #expect(built.tables.contains(.init(name: "shelf", deleted: 0, updated: 0, inserted: 2, carries: .wholeTable, reason: .added)))

        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.method == .delta)
        #expect(outcome.downloadedBytes == delta.file.size)
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash)
        #expect(try sandbox.recordedContentHash() == offered.manifest.contentHash)
        let trigger = try await DatabaseQueue(path: sandbox.storeURL.path).read {
            try String.fetchOne($0, sql: "SELECT sql FROM sqlite_schema WHERE name = 'item_guard'")
        }
        #expect(trigger?.contains("items stay") == true)
    }

    @Test func diffAndPublishSayWhatTheDeltaCarriesPerTableAndSchemaObject() throws {
        let sandbox = try ChannelSandbox()
        let old = try release("1.0.0", changed: false, in: sandbox)
        let new = try release("1.1.0", changed: true, in: sandbox)
        let text = try ReseedBinary.run(["diff", old.fileURL.path, new.fileURL.path, "--delta-size"])
        #expect(text.status == 0, "\(text.stderr)")
        let header = try #require(text.stdout.split(separator: "\n").first { $0.hasPrefix("Row-level delta: ") }, "\(text.stdout)")
        #expect(header.hasSuffix(", with schema changes (format 2)"), "\(header)")
        for line in ["  shelf: whole table, 2 rows (added)", "  reseed_metadata: 0 deleted, 1 updated, 0 inserted",
                     "  index item_label: added", "  trigger item_guard: replaced"] {
            #expect(text.stdout.contains(line + "\n") || text.stdout.hasSuffix(line), "\(line) in \(text.stdout)")
        }

        let json = try ReseedBinary.run(["diff", old.fileURL.path, new.fileURL.path, "--delta-size", "--json"])
        let delta = try #require(try jsonObject(json.stdout)["delta"] as? [String: Any], "\(json.stdout)")
        #expect((delta["format"] as? NSNumber)?.intValue == 2)
        let tables = try #require(delta["tables"] as? [[String: Any]])
        let shelf = try #require(tables.first { $0["name"] as? String == "shelf" })
        #expect(shelf["carries"] as? String == "wholeTable")
        #expect(shelf["reason"] as? String == "added")
        #expect((shelf["inserted"] as? NSNumber)?.intValue == 2)
        #expect(shelf["deleted"] != nil && shelf["updated"] != nil)
        let objects = try #require(delta["schemaObjects"] as? [[String: Any]])
        #expect(objects.map { "\($0["type"] ?? "") \($0["name"] ?? "") \($0["change"] ?? "")" } == ["trigger item_guard replaced", "index item_label added"])

        let key = sandbox.directory.appending("keys/channel.key").path
        let keygen = try ReseedBinary.run(["keygen", "--private-key", key, "--public-key", sandbox.directory.appending("keys/channel.pub").path])
        #expect(keygen.status == 0, "\(keygen.stderr)")
        let channel = sandbox.directory.appending("cli-channel").path
        _ = try ReseedBinary.run(["publish", old.manifestURL.path, "--channel", channel, "--private-key", key])
        let publish = try ReseedBinary.run(["publish", new.manifestURL.path, "--channel", channel, "--private-key", key])
        #expect(publish.status == 0, "\(publish.stderr)")
        #expect(publish.stdout.contains(" bytes, with schema changes)\n    item: 0 deleted, 10 updated, 0 inserted\n"), "\(publish.stdout)")
        #expect(publish.stdout.contains("\n    shelf: whole table, 2 rows (added)\n"), "\(publish.stdout)")
        #expect(publish.stdout.contains("\n    trigger item_guard: replaced"), "\(publish.stdout)")
        // Published again: the same delta, now as JSON, keeps its keys and adds what it carries.
        let again = try ReseedBinary.run(["publish", new.manifestURL.path, "--channel", channel, "--private-key", key, "--json"])
        let published = try #require((try jsonObject(again.stdout)["deltas"] as? [[String: Any]])?.first, "\(again.stdout)")
        #expect(Set(published.keys).isSuperset(of: ["fromVersion", "fromContentHash", "file", "size", "format", "tables", "schemaObjects"]))
        #expect((published["format"] as? NSNumber)?.intValue == 2)
        let shelfEntry = (published["tables"] as? [[String: Any]])?.first { $0["name"] as? String == "shelf" }
        #expect(shelfEntry?["carries"] as? String == "wholeTable")
        #expect((published["schemaObjects"] as? [[String: Any]])?.count == 2)
    }
}
