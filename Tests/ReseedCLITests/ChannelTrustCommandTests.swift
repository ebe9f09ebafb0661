import Foundation
import Reseed
import ReseedPackaging
import ReseedTestSupport
import ReseedTesting
import Testing

/// `reseed publish --valid-for`, `reseed keys` and `reseed update` on a channel with trust: the
/// dates they write and the one-sentence errors they print (the updater's trust logic itself is
/// tested in process, in `ReseedTests`' `ChannelTrustTests`).
@Suite(.timeLimit(.minutes(10))) struct ChannelTrustCommandTests {
    // MARK: Expiry (freeze)

    @Test func republishingWithValidForReSignsAndChangesNothingElse() throws {
        let sandbox = try ChannelSandbox()
        let keyFile = sandbox.directory.appending("channel.key")
        _ = try ChannelPrivateKey.generate(privateKeyFile: keyFile, publicKeyFile: sandbox.directory.appending("channel.pub"))
        for version in ["1.0.0", "1.1.0"] {
            let seed = try sandbox.seed(version, rows: version == "1.0.0" ? 3 : 4)
            let publish = try ReseedBinary.run(["publish", seed.manifestURL.path, "--channel", sandbox.channel.path, "--private-key", keyFile.path, "--valid-for", "4s"])
            try #require(publish.status == 0, "\(publish.stderr)")
        }
        func files() throws -> [String: Data] {
            var result: [String: Data] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: sandbox.channel.path) where !name.hasPrefix(".") && !name.hasPrefix("channel.json") {
                result[name] = try Data(contentsOf: sandbox.channel.appendingPathComponent(name))
            }
            return result
        }
        func manifest() throws -> (lines: [Substring], expires: Date?) {
            let bytes = try Data(contentsOf: sandbox.channel.appendingPathComponent(ChannelManifest.fileName))
            let decoded = try ChannelManifest.decode(Array(bytes), source: "channel.json")
            return (String(decoding: bytes, as: UTF8.self).split(separator: "\n").filter { !$0.contains("\"expires\"") && !$0.contains("\"issued\"") }, decoded.expires)
        }
        let before = try files()
        let (linesBefore, expiresBefore) = try manifest()
        #expect(before.keys.contains("items-1.1.0.sqlite.gz"))
        let shortly = try #require(expiresBefore)
        #expect(shortly > .now.addingTimeInterval(-60) && shortly < .now.addingTimeInterval(60))

        let again = try ReseedBinary.run(["publish", sandbox.directory.appending("seed-1.1.0").path, "--channel", sandbox.channel.path,
                                          "--private-key", keyFile.path, "--valid-for", "30d"])
        try #require(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.contains("already there"))
        let (linesAfter, expiresAfter) = try manifest()
        #expect(try files() == before, "no seed, compressed seed or delta file changed")
        #expect(linesAfter == linesBefore, "only expires and issued changed in channel.json")
        let later = try #require(expiresAfter)
        #expect(abs(later.timeIntervalSince(.now) - 30 * 86_400) < 600)
    }

    // MARK: Root and channel keys

    // MARK: Recovery from a leaked key (fast-forward)

    @Test func afterRootRemovesALeakedKeyAGenuineLowerReleaseInstallsAndSaysWhy() async throws {
        let keyed = try KeyedChannel(try ChannelSandbox())
        let sandbox = keyed.sandbox
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        // The thief of the first key publishes 99.0.0; the device installs it.
        try sandbox.publish(try sandbox.seed("99.0.0", rows: 2), key: keyed.first)
        #expect(try await keyed.updater(bundled).update().version == "99.0.0")

        // Root removes the leaked key; the publisher releases 1.1.0 with the second key.
        try keyed.edit([.remove(keyed.first.publicKey)])
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4), key: keyed.second)
        let rootFile = sandbox.directory.appending("root.pub")
        try Data((keyed.root.publicKey.base64 + "\n").utf8).write(to: rootFile)
        let update = try ReseedBinary.run(["update", "--channel", sandbox.server.url.absoluteString, "--public-key", rootFile.path,
                                           "--seed", bundled.manifestURL.path, "--data-dir", sandbox.dataDirectory.path])
        #expect(update.status == 0, "\(update.stderr)")
        #expect(update.stdout.contains("Updated items to 1.1.0 (was 99.0.0)"), "\(update.stdout)")
        #expect(update.stdout.contains("the channel's root removed the key \(keyed.first.publicKey.keyID.prefix(16))"), "\(update.stdout)")
        #expect(try sandbox.labels() == ["1.1.0-1", "1.1.0-2", "1.1.0-3", "1.1.0-4"])
        #expect(try sandbox.recorded().version == "1.1.0")

        // 1.1.0 has its standing: a lower release is a downgrade again.
        try sandbox.publish(try sandbox.seed("1.0.5"), key: keyed.second)
        let downgrade = try await #require(throws: ReseedError.self) { try await keyed.updater(bundled).update() }
        #expect(downgrade.code == .channelRefused)
    }

    // MARK: The command line

    @Test func keysAndUpdateFailuresAreOneSentence() throws {
        let keyed = try KeyedChannel(try ChannelSandbox())
        let sandbox = keyed.sandbox
        let rootFile = sandbox.directory.appending("root.key"), rootPub = sandbox.directory.appending("root.pub")
        _ = try ChannelPrivateKey.generate(privateKeyFile: rootFile, publicKeyFile: rootPub)
        let stranger = sandbox.directory.appending("stranger.pub")
        try Data((ChannelPrivateKey().publicKey.base64 + "\n").utf8).write(to: stranger)

        // keys.json is signed by another root than the one given.
        let wrongRoot = try ReseedBinary.run(["keys", "--channel", sandbox.channel.path, "--root-key", rootFile.path, "--add", stranger.path])
        #expect(wrongRoot.status == 1)
        #expect(wrongRoot.stderrLines.count == 1 && wrongRoot.stderr.contains("is not signed by this root key"), "\(wrongRoot.stderr)")
        let badDuration = try ReseedBinary.run(["keys", "--channel", sandbox.channel.path, "--root-key", rootFile.path, "--add", stranger.path, "--valid-for", "0d"])
        #expect(badDuration.status != 0)
        #expect(badDuration.stderr.contains("--valid-for must be a whole number and a unit"), "\(badDuration.stderr)")

        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try FileManager.default.removeItem(at: keyed.keysFile)
        let add = try ReseedBinary.run(["keys", "--channel", sandbox.channel.path, "--root-key", rootFile.path, "--add", stranger.path])
        #expect(add.status == 0, "\(add.stderr)")
        #expect(add.stdout.hasPrefix("Wrote \(keyed.keysFile.path) version 1, signed by the root key"), "\(add.stdout)")
        let removeUnlisted = try ReseedBinary.run(["keys", "--channel", sandbox.channel.path, "--root-key", rootFile.path, "--remove", rootPub.path])
        #expect(removeUnlisted.status == 1)
        #expect(removeUnlisted.stderrLines.count == 1 && removeUnlisted.stderr.contains("does not list the channel key"), "\(removeUnlisted.stderr)")
    }

    @Test func updateOfAnExpiredChannelSaysWhenInOneSentence() throws {
        let sandbox = try ChannelSandbox()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4))
        try sandbox.forgeManifest { $0.expires = RFC3339.date("2026-03-04T05:06:07Z") }
        let keyFile = sandbox.directory.appending("channel.pub")
        try Data((sandbox.key.publicKey.base64 + "\n").utf8).write(to: keyFile)

        let update = try ReseedBinary.run(["update", "--channel", sandbox.server.url.absoluteString, "--public-key", keyFile.path,
                                           "--seed", bundled.manifestURL.path, "--data-dir", sandbox.dataDirectory.path])
        #expect(update.status == 1)
        #expect(update.stderrLines.count == 1, "\(update.stderr)")
        #expect(update.stderr.contains("expired at 2026-03-04T05:06:07Z"), "\(update.stderr)")
        #expect(try sandbox.labels().count == 3)
    }

    // MARK: The channel's name, keys.json's expiry, the longest validity

    @Test func keysSignsTheChannelNamePublishCopiesItAndUpdatePinsIt() throws {
        let sandbox = try ChannelSandbox()
        let files = try Self.keyFiles(in: sandbox)
        let keys = try ReseedBinary.run(["keys", "--channel", sandbox.channel.path, "--root-key", files.root, "--add", files.channelPub,
                                         "--channel-name", "production"])
        try #require(keys.status == 0, "\(keys.stderr)")
        #expect(keys.stdout.contains("; channel 'production'; valid until "), "\(keys.stdout)")
        let rename = try ReseedBinary.run(["keys", "--channel", sandbox.channel.path, "--root-key", files.root, "--channel-name", "staging"])
        #expect(rename.status == 1)
        #expect(rename.stderrLines.count == 1 && rename.stderr.contains("keys.json names the channel 'production'; apps that verified that name refuse another one, so nothing was written"), "\(rename.stderr)")

        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        let seed = try sandbox.seed("1.1.0", rows: 4)
        let publish = try ReseedBinary.run(["publish", seed.manifestURL.path, "--channel", sandbox.channel.path, "--private-key", files.channel])
        try #require(publish.status == 0, "\(publish.stderr)")
        let manifest = try ChannelManifest.decode(Array(try Data(contentsOf: sandbox.channel.appendingPathComponent(ChannelManifest.fileName))), source: "channel.json")
        #expect(manifest.channel == "production")
        #expect(manifest.keys?.version == 1)

        let update = ["update", "--channel", sandbox.server.url.absoluteString, "--public-key", files.rootPub,
                      "--seed", bundled.manifestURL.path, "--data-dir", sandbox.dataDirectory.path]
        let staging = try ReseedBinary.run(update + ["--channel-name", "staging"])
        #expect(staging.status == 1)
        #expect(staging.stderrLines.count == 1 && staging.stderr.contains("the channel's keys.json is named 'production'; this app pins the channel 'staging'"), "\(staging.stderr)")
        #expect(try sandbox.labels().count == 3)
        let production = try ReseedBinary.run(update + ["--channel-name", "production"])
        #expect(production.status == 0, "\(production.stderr)")
        #expect(try sandbox.labels().count == 4)
    }

    @Test func keysWithNoChangeReSignsItsExpiryAndNothingElse() throws {
        let sandbox = try ChannelSandbox()
        let files = try Self.keyFiles(in: sandbox)
        let first = try ReseedBinary.run(["keys", "--channel", sandbox.channel.path, "--root-key", files.root, "--add", files.channelPub, "--valid-for", "30d", "--json"])
        try #require(first.status == 0, "\(first.stderr)")
        let before = try ChannelKeys.decode(Array(try Data(contentsOf: sandbox.channel.appendingPathComponent(ChannelKeys.fileName))), source: "keys.json")
        let again = try ReseedBinary.run(["keys", "--channel", sandbox.channel.path, "--root-key", files.root, "--valid-for", "60d"])
        try #require(again.status == 0, "\(again.stderr)")
        let after = try ChannelKeys.decode(Array(try Data(contentsOf: sandbox.channel.appendingPathComponent(ChannelKeys.fileName))), source: "keys.json")
        #expect(after.version == before.version + 1)
        #expect(after.keys == before.keys && after.revoked == before.revoked && after.channelName == before.channelName)
        let (was, now) = (try #require(before.expires), try #require(after.expires))
        #expect(abs(now.timeIntervalSince(was) - 30 * 86_400) < 600, "\(was) → \(now)")
    }

    @Test func updateRefusesAManifestValidLongerThanTheMaximumValidity() throws {
        let sandbox = try ChannelSandbox()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        let keyFile = sandbox.directory.appending("channel.key"), publicKey = sandbox.directory.appending("channel.pub")
        _ = try ChannelPrivateKey.generate(privateKeyFile: keyFile, publicKeyFile: publicKey)
        let seed = try sandbox.seed("1.1.0", rows: 4)
        let publish = try ReseedBinary.run(["publish", seed.manifestURL.path, "--channel", sandbox.channel.path, "--private-key", keyFile.path, "--valid-for", "100d"])
        try #require(publish.status == 0, "\(publish.stderr)")
        let update = ["update", "--channel", sandbox.server.url.absoluteString, "--public-key", publicKey.path,
                      "--seed", bundled.manifestURL.path, "--data-dir", sandbox.dataDirectory.path]
        let refused = try ReseedBinary.run(update)
        #expect(refused.status == 1)
        #expect(refused.stderrLines.count == 1 && refused.stderr.contains("longer than the 90 days this app accepts"), "\(refused.stderr)")
        #expect(try sandbox.labels().count == 3)
        let accepted = try ReseedBinary.run(update + ["--maximum-validity", "120d"])
        #expect(accepted.status == 0, "\(accepted.stderr)")
        #expect(try sandbox.labels().count == 4)
    }

    @Test func keysWithSeveralRootsSetsAThresholdOneRootCannotLowerAndRotatesTheRoots() throws {
        let sandbox = try ChannelSandbox()
        let files = try Self.keyFiles(in: sandbox)
        let (second, secondPub) = try Self.keyPair("second-root", in: sandbox)
        let (third, thirdPub) = try Self.keyPair("third-root", in: sandbox)
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        let channel = ["--channel", sandbox.channel.path]
        func run(_ arguments: [String]) throws -> ReseedBinary.Result { try ReseedBinary.run(arguments) }
        func publish(_ version: String, rows: Int) throws {
            let result = try run(["publish", try sandbox.seed(version, rows: rows).manifestURL.path] + channel + ["--private-key", files.channel])
            try #require(result.status == 0, "\(result.stderr)")
        }
        let update = ["update", "--channel", sandbox.server.url.absoluteString, "--public-key", files.rootPub, "--public-key", secondPub,
                      "--seed", bundled.manifestURL.path, "--data-dir", sandbox.dataDirectory.path]

        let both = try run(["keys"] + channel + ["--root-key", files.root, "--root-key", second, "--threshold", "2", "--add", files.channelPub, "--json"])
        try #require(both.status == 0, "\(both.stderr)")
        #expect(both.stdout.contains("\"threshold\":2"), "\(both.stdout)")
        try publish("1.1.0", rows: 4)
        #expect(try run(update).status == 0)

        // The second root alone writes a keys.json at threshold 1: devices refuse it.
        let alone = try run(["keys"] + channel + ["--root-key", second, "--threshold", "1"])
        try #require(alone.status == 0, "\(alone.stderr)")
        try publish("1.2.0", rows: 5)
        let refused = try run(update)
        #expect(refused.status == 1)
        #expect(refused.stderrLines.count == 1 && refused.stderr.contains("keys.json (version 2) is signed by 1 of the root keys this device trusts; it needs 2"), "\(refused.stderr)")
        #expect(try sandbox.labels().count == 4)

        // Both roots hand over to a third: from then on it alone signs, and devices follow.
        let rotation = try run(["keys"] + channel + ["--root-key", files.root, "--root-key", second, "--root-key", third,
                                                    "--new-root", thirdPub, "--threshold", "1"])
        try #require(rotation.status == 0, "\(rotation.stderr)")
        try publish("1.3.0", rows: 6)
        #expect(try run(update).status == 0)
        let byThird = try run(["keys"] + channel + ["--root-key", third])
        try #require(byThird.status == 0, "\(byThird.stderr)")
        try publish("1.4.0", rows: 7)
        let after = try run(update)
        #expect(after.status == 0, "\(after.stderr)")
        #expect(try sandbox.labels().count == 7)
    }

    /// A key pair `name`.key and `name`.pub, as `reseed keygen` writes them.
    static func keyPair(_ name: String, in sandbox: ChannelSandbox) throws -> (key: String, pub: String) {
        let directory = sandbox.directory.appending("keys")
        let (key, pub) = (directory.appendingPathComponent("\(name).key"), directory.appendingPathComponent("\(name).pub"))
        _ = try ChannelPrivateKey.generate(privateKeyFile: key, publicKeyFile: pub)
        return (key.path, pub.path)
    }

    /// A root key, a channel key listed nowhere yet, and their public halves, as `reseed keygen` writes them.
    static func keyFiles(in sandbox: ChannelSandbox) throws -> (root: String, rootPub: String, channel: String, channelPub: String) {
        let (root, rootPub) = try keyPair("root", in: sandbox)
        let (channel, channelPub) = try keyPair("channel", in: sandbox)
        return (root, rootPub, channel, channelPub)
    }

    // MARK: Compatibility
}
