import Foundation
import Reseed
import ReseedPackaging
import ReseedSystem
import ReseedTestSupport
import ReseedTesting
import Testing

/// What `ChannelPublisher` writes into a channel folder, and in what order.
@Suite struct ChannelPublisherTests {
    @Test func publishWritesTheSeedThenTheSignatureThenTheManifest() throws {
        let sandbox = try ChannelSandbox()
        let log = FaultPlan(.record)
        var publisher = ChannelPublisher(channel: sandbox.channel, privateKey: sandbox.key)
        publisher.fileSystem = FileSystem(observer: log)
        try publisher.publish(try sandbox.seed("1.1.0"))
        let durable = log.actions.filter { $0.kind == .rename || $0.kind == .syncDirectory }.map { action in
            action.kind == .rename ? "rename " + URL(fileURLWithPath: action.path).lastPathComponent : "syncDirectory"
        }
        #expect(durable == [
            "rename items-1.1.0.sqlite", "syncDirectory",
            "rename items-1.1.0.sqlite.gz", "syncDirectory",
            "rename items-1.1.0.sqlite.xz", "syncDirectory",
            "rename channel.json.sig", "syncDirectory",
            "rename channel.json", "syncDirectory",
        ])
        let manifest = try Data(contentsOf: sandbox.channel.appendingPathComponent("channel.json"))
        let signature = try String(contentsOf: sandbox.channel.appendingPathComponent("channel.json.sig"), encoding: .utf8)
        #expect(sandbox.key.publicKey.isValidSignature(try #require(Data(base64Encoded: signature.trimmingCharacters(in: .newlines))), for: manifest))
        #expect(try ChannelManifest.decode(Array(manifest), source: "channel.json").file == "items-1.1.0.sqlite")

        // A published file never changes: other bytes under the same version are refused, the channel untouched.
        let impostor = try SeedFixture(name: "items", version: "1.1.0", sql: ["CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT)"])
            .build(in: sandbox.directory.appending("impostor"))
        let error = #expect(throws: PackagingError.self) { try sandbox.publish(impostor) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.step == .publish)
        #expect(error?.message.hasPrefix("the channel already holds items-1.1.0.sqlite with other bytes") == true)
        #expect(try Data(contentsOf: sandbox.channel.appendingPathComponent("channel.json")) == manifest)
    }

    @Test func publishingTheSameSeedsTwiceGivesIdenticalChannelFiles() throws {
        func channelFiles(_ sandbox: ChannelSandbox) throws -> [String: Data] {
            let names = try FileManager.default.contentsOfDirectory(atPath: sandbox.channel.path).filter { !$0.hasPrefix(".") }
            return try Dictionary(uniqueKeysWithValues: names.map { ($0, try Data(contentsOf: sandbox.channel.appendingPathComponent($0))) })
        }
        let first = try ChannelSandbox()
        let second = try ChannelSandbox()
        for sandbox in [first, second] {
            // Same key, issue time and expiry: the signatures (Ed25519, deterministic) must match too.
            var publisher = ChannelPublisher(channel: sandbox.channel, privateKey: first.key)
            publisher.issued = RFC3339.date("2029-12-01T00:00:00Z")
            publisher.expires = RFC3339.date("2030-01-01T00:00:00Z")
            try publisher.publish(try first.release("1.0.0", generation: 0))
            try publisher.publish(try first.release("1.1.0", generation: 1))
        }
        let a = try channelFiles(first), b = try channelFiles(second)
        #expect(a.keys.sorted() == b.keys.sorted())
        #expect(a.keys.contains { $0.hasSuffix(".delta.gz") })
        for name in a.keys.sorted() { #expect(a[name] == b[name], "\(name) differs") }
    }
}
