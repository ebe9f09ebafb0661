import Foundation
import Reseed
import ReseedPackaging
import ReseedTestSupport
import ReseedTesting
import Testing

/// Channel trust against TUF's attacks: an old manifest served forever (freeze), a leaked channel
/// key (compromise, and the high version it signs: fast-forward), a forged or rolled-back
/// `keys.json`. Each device is a real data directory updated from a channel served in memory;
/// expiry is checked against the updater's clock (``ChannelUpdater/Configuration/now``), never by waiting.
@Suite(.timeLimit(.minutes(10))) struct ChannelTrustTests {
    @Test func anExpiredChannelIsRefusedAndTheStoreStaysAsItWas() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4))
        let expired = try #require(RFC3339.date("2026-01-02T03:04:05Z"))
        try sandbox.forgeManifest { $0.expires = expired }

        // A day later, by the updater's clock.
        let error = try await #require(throws: ReseedError.self) {
            try await sandbox.updater(bundled, now: { expired.addingTimeInterval(86_400) }).update()
        }
        #expect(error.code == .channelExpired)
        #expect(error.message.contains("expired at 2026-01-02T03:04:05Z"), "\(error.message)")
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
        #expect(try sandbox.recorded().version == "1.0.0")
    }

    @Test func aChannelExpiredWithinTheClockSkewAllowanceIsAccepted() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4))
        let expires = try #require(RFC3339.date("2026-03-01T00:00:00Z"))
        try sandbox.forgeManifest { $0.expires = expires; $0.issued = expires.addingTimeInterval(-86_400) }
        // Two minutes past the expiry, by the updater's clock.
        let now = { @Sendable in expires.addingTimeInterval(120) }

        let strict = try await #require(throws: ReseedError.self) { try await sandbox.updater(bundled, clockSkew: .zero, now: now).update() }
        #expect(strict.code == .channelExpired)
        let outcome = try await sandbox.updater(bundled, clockSkew: .seconds(600), now: now).update()
        #expect(outcome.action == .updated)
        #expect(try sandbox.labels().count == 4)
    }

    /// A 304 stands for the manifest checked before: once that one expired, the 304 is no excuse.
    @Test func anExpiredManifestIsRefusedEvenWhenTheServerSaysNotModified() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4))
        let checked = try #require(RFC3339.date("2026-03-01T00:00:00Z"))
        try sandbox.forgeManifest { $0.expires = checked.addingTimeInterval(3600); $0.issued = checked }
        #expect(try await sandbox.updater(bundled, now: { checked }).update().action == .updated)

        // Two hours later, by the updater's clock: no sleep.
        let later = { @Sendable in checked.addingTimeInterval(7200) }
        let error = try await #require(throws: ReseedError.self) { try await sandbox.updater(bundled, clockSkew: .zero, now: later).update() }
        #expect(error.code == .channelExpired)
        #expect(try sandbox.server.requests().last { $0.path == "/channel.json" }?.status == 304)
    }

    @Test func aChannelSignedByAListedChannelKeyInstallsAndTheSignerIsRecorded() async throws {
        let keyed = try KeyedChannel(try ChannelSandbox.inMemory())
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
        let keyed = try KeyedChannel(try ChannelSandbox.inMemory())
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
        let keyed = try KeyedChannel(try ChannelSandbox.inMemory())
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
        let keyed = try KeyedChannel(try ChannelSandbox.inMemory())
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
        let keyed = try KeyedChannel(try ChannelSandbox.inMemory())
        let bundled = try keyed.sandbox.seed("1.0.0")
        try keyed.sandbox.launch(bundled)
        try keyed.sandbox.publish(try keyed.sandbox.seed("1.1.0", rows: 4), key: keyed.first)
        let expiry = try #require(RFC3339.date("2026-01-01T00:00:00Z"))
        try keyed.edit([.add(keyed.first.publicKey, expires: expiry)])

        // A day past the key's expiry, by the updater's clock.
        let updater = keyed.sandbox.updater(bundled, publicKey: keyed.root.publicKey, now: { expiry.addingTimeInterval(86_400) })
        let error = try await #require(throws: ReseedError.self) { try await updater.update() }
        #expect(error.code == .channelKeyExpired)
        #expect(error.message.contains("expired at 2026-01-01T00:00:00Z"), "\(error.message)")
        #expect(try keyed.sandbox.labels().count == 3)
    }

    @Test func anOlderKeysJSONThanOneSeenIsRefusedAndSoIsNone() async throws {
        let keyed = try KeyedChannel(try ChannelSandbox.inMemory())
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
        let keyed = try KeyedChannel(try ChannelSandbox.inMemory())
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

    @Test func theOutcomeNamesTheRemovedKeyThatSignedTheReplacedRelease() async throws {
        let keyed = try KeyedChannel(try ChannelSandbox.inMemory())
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

    @Test func aChannelWithoutKeysJSONOrExpiryFromAnOlderPublisherStillInstalls() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4))
        // Format 2, as publishers before issue times wrote it.
        try sandbox.forgeManifest { $0.expires = nil; $0.issued = nil; $0.format = 2 }
        let text = try String(contentsOf: sandbox.channel.appendingPathComponent(ChannelManifest.fileName), encoding: .utf8)
        #expect(!text.contains("expires"))

        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.action == .updated)
        #expect(try sandbox.labels().count == 4)
    }
}
