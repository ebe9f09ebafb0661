import Foundation
import GRDB
import Reseed
import ReseedPackaging
import ReseedTestSupport
import ReseedTesting
import Testing

/// A release that changes the schema (a table added, a trigger rewritten, an index added) gets a
/// format-2 delta on the channel; `reseed diff --delta-size` and `reseed publish` say what it carries
/// (its update is tested in process, in `ReseedTests`' `ChannelDeltaTests`).
@Suite(.timeLimit(.minutes(10))) struct ChannelSchemaDeltaCommandTests {
    @Test func diffAndPublishSayWhatTheDeltaCarriesPerTableAndSchemaObject() throws {
        let sandbox = try ChannelSandbox()
        let old = try sandbox.schemaRelease("1.0.0", changed: false)
        let new = try sandbox.schemaRelease("1.1.0", changed: true)
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
