import Foundation
import Reseed
import ReseedPackaging
import ReseedTesting
import Testing

/// Channel trust against TUF's attacks: an old manifest served forever (freeze), a leaked channel
/// key (compromise, and the high version it signs: fast-forward), a forged or rolled-back
/// `keys.json`. Each device is a real data directory updated from a real HTTP server.
@Suite(.timeLimit(.minutes(10))) struct ChannelTrustTests {
    /// The channel's root and two channel keys, `keys.json` listing both, and the app pinning the root.
    struct Keyed {
        let sandbox: ChannelSandbox
        let root = ChannelPrivateKey()
        let first = ChannelPrivateKey()
        let second = ChannelPrivateKey()

        init() throws {
            sandbox = try ChannelSandbox()
            try edit([.add(first.publicKey, expires: .now.addingTimeInterval(86_400)), .add(second.publicKey, expires: .now.addingTimeInterval(86_400))])
        }

        @discardableResult
        func edit(_ changes: [ChannelKeysEditor.Change], root: ChannelPrivateKey? = nil) throws -> ChannelKeys {
            try ChannelKeysEditor(channel: sandbox.channel, rootKey: root ?? self.root).apply(changes)
        }

        func updater(_ bundled: Seed) -> ChannelUpdater { sandbox.updater(bundled, publicKey: root.publicKey) }
        var keysFile: URL { sandbox.channel.appendingPathComponent(ChannelKeys.fileName) }
    }

    // MARK: Expiry (freeze)

    @Test func anExpiredChannelIsRefusedAndTheStoreStaysAsItWas() async throws {
        let sandbox = try ChannelSandbox()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4))
        let expired = try #require(RFC3339.date("2026-01-02T03:04:05Z"))
        try sandbox.forgeManifest { $0.expires = expired }

        let error = try await #require(throws: ReseedError.self) { try await sandbox.updater(bundled).update() }
        #expect(error.code == .channelExpired)
        #expect(error.message.contains("expired at 2026-01-02T03:04:05Z"), "\(error.message)")
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
        #expect(try sandbox.recorded().version == "1.0.0")
    }

    @Test func aChannelExpiredWithinTheClockSkewAllowanceIsAccepted() async throws {
        let sandbox = try ChannelSandbox()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4))
        try sandbox.forgeManifest { $0.expires = .now.addingTimeInterval(-120) }

        let strict = try await #require(throws: ReseedError.self) { try await sandbox.updater(bundled, clockSkew: .zero).update() }
        #expect(strict.code == .channelExpired)
        let outcome = try await sandbox.updater(bundled, clockSkew: .seconds(600)).update()
        #expect(outcome.action == .updated)
        #expect(try sandbox.labels().count == 4)
    }

    /// A 304 stands for the manifest checked before: once that one expired, the 304 is no excuse.
    @Test func anExpiredManifestIsRefusedEvenWhenTheServerSaysNotModified() async throws {
        let sandbox = try ChannelSandbox()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4))
        try sandbox.forgeManifest { $0.expires = .now.addingTimeInterval(3600) }
        #expect(try await sandbox.updater(bundled).update().action == .updated)

        // Two hours later, by the updater's clock: no sleep.
        let later = { @Sendable in Date(timeIntervalSinceNow: 7200) }
        let error = try await #require(throws: ReseedError.self) { try await sandbox.updater(bundled, clockSkew: .zero, now: later).update() }
        #expect(error.code == .channelExpired)
        #expect(try sandbox.server.requests().last { $0.path == "/channel.json" }?.status == 304)
    }

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
            return (String(decoding: bytes, as: UTF8.self).split(separator: "\n").filter { !$0.contains("\"expires\"") }, decoded.expires)
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
        #expect(linesAfter == linesBefore, "only expires changed in channel.json")
        let later = try #require(expiresAfter)
        #expect(abs(later.timeIntervalSince(.now) - 30 * 86_400) < 600)
    }

    // MARK: Root and channel keys

    @Test func aChannelSignedByAListedChannelKeyInstallsAndTheSignerIsRecorded() async throws {
        let keyed = try Keyed()
        let bundled = try keyed.sandbox.seed("1.0.0")
        try keyed.sandbox.launch(bundled)
        try keyed.sandbox.publish(try keyed.sandbox.seed("1.1.0", rows: 4), key: keyed.first)

        let outcome = try await keyed.updater(bundled).update()
        #expect(outcome.action == .updated)
        #expect(outcome.revokedKeyID == nil)
        let preferences = try String(contentsOf: keyed.sandbox.preferencesURL, encoding: .utf8)
        #expect(preferences.contains("\"signedBy\": \"\(keyed.first.publicKey.keyID)\""), "\(preferences)")
        #expect(preferences.contains("\"keysVersion\": 1"), "\(preferences)")
    }

    @Test func aForgedKeysJSONIsRefused() async throws {
        let keyed = try Keyed()
        let bundled = try keyed.sandbox.seed("1.0.0")
        try keyed.sandbox.launch(bundled)
        let intruder = ChannelPrivateKey()
        try keyed.sandbox.publish(try keyed.sandbox.seed("1.1.0", rows: 4), key: keyed.first)
        // The intruder's key listed in place of the first one, the root's signature kept.
        let text = try String(contentsOf: keyed.keysFile, encoding: .utf8)
            .replacingOccurrences(of: keyed.first.publicKey.keyID, with: intruder.publicKey.keyID)
            .replacingOccurrences(of: keyed.first.publicKey.base64, with: intruder.publicKey.base64)
        try Data(text.utf8).write(to: keyed.keysFile)
        try keyed.sandbox.forgeManifest(key: intruder) { $0.expires = .now.addingTimeInterval(3_600) }

        let error = try await #require(throws: ReseedError.self) { try await keyed.updater(bundled).update() }
        #expect(error.code == .signature)
        #expect(error.step == .checkKeys)
        #expect(error.message.contains("keys.json is not signed by a root key the app pins"), "\(error.message)")
        #expect(try keyed.sandbox.labels().count == 3)
    }

    @Test func aKeysJSONSignedByAKeyThatIsNotARootIsRefused() async throws {
        let keyed = try Keyed()
        let bundled = try keyed.sandbox.seed("1.0.0")
        try keyed.sandbox.launch(bundled)
        try FileManager.default.removeItem(at: keyed.keysFile)
        // A channel key, not the root, signs a keys.json of its own.
        try keyed.edit([.add(keyed.first.publicKey, expires: .now.addingTimeInterval(3_600))], root: keyed.first)
        try keyed.sandbox.publish(try keyed.sandbox.seed("1.1.0", rows: 4), key: keyed.first)

        let error = try await #require(throws: ReseedError.self) { try await keyed.updater(bundled).update() }
        #expect(error.code == .signature)
        #expect(error.step == .checkKeys)
        #expect(try keyed.sandbox.recorded().version == "1.0.0")
    }

    @Test func aChannelSignedByARemovedKeyIsRefused() async throws {
        let keyed = try Keyed()
        let bundled = try keyed.sandbox.seed("1.0.0")
        try keyed.sandbox.launch(bundled)
        try keyed.sandbox.publish(try keyed.sandbox.seed("1.1.0", rows: 4), key: keyed.first)
        try keyed.edit([.remove(keyed.first.publicKey)])

        let error = try await #require(throws: ReseedError.self) { try await keyed.updater(bundled).update() }
        #expect(error.code == .channelKeyRevoked)
        #expect(error.message.contains(String(keyed.first.publicKey.keyID.prefix(16))))
        #expect(try keyed.sandbox.labels().count == 3)
        // And the publisher is told before it signs with it again.
        #expect(throws: PackagingError.self) { try keyed.sandbox.publish(try keyed.sandbox.seed("1.2.0"), key: keyed.first) }
    }

    @Test func aChannelSignedByAnExpiredChannelKeyIsRefused() async throws {
        let keyed = try Keyed()
        let bundled = try keyed.sandbox.seed("1.0.0")
        try keyed.sandbox.launch(bundled)
        try keyed.sandbox.publish(try keyed.sandbox.seed("1.1.0", rows: 4), key: keyed.first)
        let expiry = try #require(RFC3339.date("2026-01-01T00:00:00Z"))
        try keyed.edit([.add(keyed.first.publicKey, expires: expiry)])

        let error = try await #require(throws: ReseedError.self) { try await keyed.updater(bundled).update() }
        #expect(error.code == .channelKeyExpired)
        #expect(error.message.contains("expired at 2026-01-01T00:00:00Z"), "\(error.message)")
        #expect(try keyed.sandbox.labels().count == 3)
    }

    @Test func anOlderKeysJSONThanOneSeenIsRefusedAndSoIsNone() async throws {
        let keyed = try Keyed()
        let bundled = try keyed.sandbox.seed("1.0.0")
        try keyed.sandbox.launch(bundled)
        let versionOne = try Data(contentsOf: keyed.keysFile)
        try keyed.edit([.add(ChannelPrivateKey().publicKey, expires: .now.addingTimeInterval(3_600))])
        try keyed.sandbox.publish(try keyed.sandbox.seed("1.1.0", rows: 4), key: keyed.first)
        #expect(try await keyed.updater(bundled).update().version == "1.1.0")

        try versionOne.write(to: keyed.keysFile)
        try keyed.sandbox.publish(try keyed.sandbox.seed("1.2.0", rows: 5), key: keyed.first)
        let rollback = try await #require(throws: ReseedError.self) { try await keyed.updater(bundled).update() }
        #expect(rollback.code == .channelRefused)
        #expect(rollback.message.contains("keys.json is version 1, older than version 2"), "\(rollback.message)")

        try FileManager.default.removeItem(at: keyed.keysFile)
        let stripped = try await #require(throws: ReseedError.self) { try await keyed.updater(bundled).update() }
        #expect(stripped.code == .channelRefused)
        #expect(try keyed.sandbox.labels().count == 4)
    }

    @Test func aKeysJSONOverSixtyFourKiBIsRefusedWithoutReadingItAll() async throws {
        let keyed = try Keyed()
        let bundled = try keyed.sandbox.seed("1.0.0")
        try keyed.sandbox.launch(bundled)
        try keyed.sandbox.publish(try keyed.sandbox.seed("1.1.0", rows: 4), key: keyed.first)
        try Data(repeating: UInt8(ascii: " "), count: 8 << 20).write(to: keyed.keysFile)

        let error = try await #require(throws: ReseedError.self) { try await keyed.updater(bundled).update() }
        #expect(error.code == .channelRefused)
        #expect(error.step == .checkKeys)
        #expect(error.message.contains("more than the \(ChannelKeys.maximumFileSize)-byte limit"), "\(error.message)")
        #expect(try keyed.sandbox.labels().count == 3)
    }

    @Test func aKeysJSONOverItsLimitsIsRefusedNamingTheField() throws {
        let key = ChannelPrivateKey().publicKey
        let entry = "{\"keyid\": \"\(key.keyID)\", \"publicKey\": \"\(key.base64)\", \"expires\": \"2030-01-01T00:00:00Z\"}"
        let many = Array(repeating: entry, count: ChannelKeys.maximumKeys + 1).joined(separator: ",")
        let file = "{\"signed\": {\"type\": \"reseed-keys\", \"format\": 1, \"version\": 1, \"threshold\": 1, \"keys\": [\(many)], \"revoked\": []}, \"signatures\": []}"
        let error = try #require(throws: ReseedError.self) { try ChannelKeys.decode(Array(file.utf8), source: "keys.json") }
        #expect(error.field == "signed.keys")
        let twice = file.replacingOccurrences(of: many, with: entry + "," + entry)
        #expect(throws: ReseedError.self) { try ChannelKeys.decode(Array(twice.utf8), source: "keys.json") }
        let badTime = file.replacingOccurrences(of: many, with: entry.replacingOccurrences(of: "2030-01-01T00:00:00Z", with: "2030-01-01 00:00"))
        let timeError = try #require(throws: ReseedError.self) { try ChannelKeys.decode(Array(badTime.utf8), source: "keys.json") }
        #expect(timeError.field == "signed.keys[0].expires", "\(timeError.message)")
        #expect(timeError.message.hasPrefix("field \"signed.keys[0].expires\": "), "\(timeError.message)")
        #expect(timeError.path == "keys.json")
        // Every field of the signed object is named with its place, the ones read first too.
        let one = file.replacingOccurrences(of: many, with: entry)
        for (edit, field) in [("\"type\": \"reseed-keys\", ", "signed.type"), ("\"format\": 1, ", "signed.format"), ("\"version\": 1, ", "signed.version")] {
            let missing = try #require(throws: ReseedError.self) { try ChannelKeys.decode(Array(one.replacingOccurrences(of: edit, with: "").utf8), source: "keys.json") }
            #expect(missing.field == field && missing.message == "field \"\(field)\": missing", "\(missing.message)")
        }
        let signature = one.replacingOccurrences(of: "\"signatures\": []", with: "\"signatures\": [{\"keyid\": \"x\", \"sig\": \"\"}]")
        let signatureError = try #require(throws: ReseedError.self) { try ChannelKeys.decode(Array(signature.utf8), source: "keys.json") }
        #expect(signatureError.field == "signatures[0].keyid", "\(signatureError.message)")
    }

    // MARK: Recovery from a leaked key (fast-forward)

    @Test func afterRootRemovesALeakedKeyAGenuineLowerReleaseInstallsAndSaysWhy() async throws {
        let keyed = try Keyed()
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

    @Test func theOutcomeNamesTheRemovedKeyThatSignedTheReplacedRelease() async throws {
        let keyed = try Keyed()
        let bundled = try keyed.sandbox.seed("1.0.0")
        try keyed.sandbox.launch(bundled)
        try keyed.sandbox.publish(try keyed.sandbox.seed("99.0.0", rows: 2), key: keyed.first)
        _ = try await keyed.updater(bundled).update()
        try keyed.edit([.remove(keyed.first.publicKey)])
        try keyed.sandbox.publish(try keyed.sandbox.seed("1.1.0", rows: 4), key: keyed.second)

        let outcome = try await keyed.updater(bundled).update()
        #expect(outcome.action == .updated)
        #expect(outcome.version == "1.1.0")
        #expect(outcome.previousVersion == "99.0.0")
        #expect(outcome.revokedKeyID == keyed.first.publicKey.keyID)
    }

    // MARK: The command line

    @Test func keysAndUpdateFailuresAreOneSentence() throws {
        let keyed = try Keyed()
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

    // MARK: Compatibility

    @Test func aChannelWithoutKeysJSONOrExpiryFromAnOlderPublisherStillInstalls() async throws {
        let sandbox = try ChannelSandbox()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4))
        try sandbox.forgeManifest { $0.expires = nil }
        let text = try String(contentsOf: sandbox.channel.appendingPathComponent(ChannelManifest.fileName), encoding: .utf8)
        #expect(!text.contains("expires"))

        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.action == .updated)
        #expect(try sandbox.labels().count == 4)
    }
}
