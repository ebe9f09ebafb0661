import Foundation
import Reseed
import ReseedPackaging
import ReseedTestSupport
import ReseedTesting
import Testing

/// Channel trust against a hostile mirror that replays old snapshots of the folder, answers `503`
/// or `304` per file and swaps one file: what a device verified is kept the moment it verifies
/// (``ChannelFloors``), the two signed files are bound to each other, and each refusal is its own
/// sentence with the store left as it was. Times come from the updater's clock, never from waiting.
@Suite(.timeLimit(.minutes(10))) struct ChannelFloorsTests {
    static let bundledLabels = ["1.0.0-1", "1.0.0-2", "1.0.0-3"]

    /// A channel served in memory, and a device that launched the bundled 1.0.0.
    static func device() throws -> (sandbox: ChannelSandbox, bundled: Seed) {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        return (sandbox, bundled)
    }

    /// The same with `keys.json` (``KeyedChannel``: a root, two channel keys), the app pinning the root.
    static func keyedDevice() throws -> (keyed: KeyedChannel, sandbox: ChannelSandbox, bundled: Seed) {
        let keyed = try KeyedChannel(try ChannelSandbox.inMemory())
        let bundled = try keyed.sandbox.seed("1.0.0")
        try keyed.sandbox.launch(bundled)
        return (keyed, keyed.sandbox, bundled)
    }

    // MARK: Persist on verify

    /// A device on 1.0.0 that verified 3.0.0 whose download was answered 503, and the channel folder
    /// of 2.0.0 before it (what a mirror replays).
    static func threeVerifiedNotInstalled() async throws -> (sandbox: ChannelSandbox, bundled: Seed, older: [String: Data]) {
        let (sandbox, bundled) = try device()
        try sandbox.publish(try sandbox.seed("2.0.0", rows: 2))
        let older = try sandbox.snapshot()
        try sandbox.publish(try sandbox.seed("3.0.0", rows: 4))
        try sandbox.server.set(["status": ["items-3.0.0.sqlite": 503]])
        let failed = try await #require(throws: ReseedError.self) { try await sandbox.updater(bundled).update() }
        #expect(failed.httpStatus == 503)
        return (sandbox, bundled, older)
    }

    /// 3.0.0 verified, its download answered 503; then the mirror replays the folder of 2.0.0.
    @Test func aReleaseSeenButNotInstalledIsAFloorWhenItsDownloadFailed() async throws {
        let (sandbox, bundled, older) = try await Self.threeVerifiedNotInstalled()
        try sandbox.server.set([:])
        try sandbox.restore(older)
        let error = try await #require(throws: ReseedError.self) { try await sandbox.updater(bundled).update() }
        #expect(error.code == .channelRefused)
        #expect(error.message == "the channel offers items 2.0.0, older than 3.0.0 this device verified from the channel before; refusing a rollback")
        #expect(try sandbox.labels() == Self.bundledLabels)
        #expect(try sandbox.recorded().version == "1.0.0")
    }

    /// keys.json v2 (the first key removed) and 4.0.0 verified, the seed's download failed; then the
    /// mirror replays keys.json v1 and the 99.0.0 the removed key signed.
    @Test func aKeyRemovalSeenIsNotUndoneByAFailedDownload() async throws {
        let (keyed, sandbox, bundled) = try Self.keyedDevice()
        try sandbox.publish(try sandbox.seed("99.0.0", rows: 2), key: keyed.first)
        let leaked = try sandbox.snapshot()
        try keyed.edit([.remove(keyed.first.publicKey)])
        try sandbox.publish(try sandbox.seed("4.0.0", rows: 4), key: keyed.second)
        try sandbox.server.set(["status": ["items-4.0.0.sqlite": 503]])
        _ = try await #require(throws: ReseedError.self) { try await keyed.updater(bundled).update() }

        try sandbox.server.set([:])
        try sandbox.restore(leaked)
        let error = try await #require(throws: ReseedError.self) { try await keyed.updater(bundled).update() }
        #expect(error.code == .channelRefused)
        #expect(error.message == "keys.json is version 1, older than version 2 this store has seen; refusing a rollback of the channel's keys")
        #expect(try sandbox.labels() == Self.bundledLabels)
    }

    /// The floors belong to the channel the pinned key anchors, not to one address: after 3.0.0 was
    /// verified from the origin (its download failed), a mirror at another URL serves the older folder.
    @Test func aMirrorAtAnotherAddressMeetsTheSameFloors() async throws {
        let (sandbox, bundled, older) = try await Self.threeVerifiedNotInstalled()

        let mirror = try ChannelSandbox()
        try mirror.restore(older)
        let updater = ChannelUpdater(channel: mirror.server.url, publicKey: sandbox.key.publicKey, launcher: sandbox.launcher(bundled),
                                     configuration: mirror.configuration())
        let error = try await #require(throws: ReseedError.self) { try await updater.update() }
        #expect(error.message == "the channel offers items 2.0.0, older than 3.0.0 this device verified from the channel before; refusing a rollback")
        #expect(try sandbox.labels() == Self.bundledLabels)
    }

    /// keys.json v2 (the first key removed) verified beside a channel.json that key signed, which is
    /// refused; then the mirror replays keys.json v1, which still lists it.
    @Test func aKeysJSONIsKeptTheMomentItVerifiesEvenWhenItsManifestIsRefused() async throws {
        let (keyed, sandbox, bundled) = try Self.keyedDevice()
        let versionOne = try Data(contentsOf: keyed.keysFile)
        try sandbox.publish(try sandbox.seed("99.0.0", rows: 2), key: keyed.first)
        try keyed.edit([.remove(keyed.first.publicKey)])
        let removed = try await #require(throws: ReseedError.self) { try await keyed.updater(bundled).update() }
        #expect(removed.code == .channelKeyRevoked)

        try versionOne.write(to: keyed.keysFile)
        let error = try await #require(throws: ReseedError.self) { try await keyed.updater(bundled).update() }
        #expect(error.message == "keys.json is version 1, older than version 2 this store has seen; refusing a rollback of the channel's keys")
        #expect(try sandbox.labels() == Self.bundledLabels)
    }

    // MARK: A 304 never skips the key check

    /// 99.0.0, signed by the first key, installed; root removes that key; the mirror answers 304.
    @Test func aNotModifiedAnswerDoesNotHideARemovedKey() async throws {
        let (keyed, sandbox, bundled) = try Self.keyedDevice()
        try sandbox.publish(try sandbox.seed("99.0.0", rows: 2), key: keyed.first)
        #expect(try await keyed.updater(bundled).update().version == "99.0.0")
        try keyed.edit([.remove(keyed.first.publicKey)])
        try sandbox.server.set(["status": ["channel.json": 304]])

        let error = try await #require(throws: ReseedError.self) { try await keyed.updater(bundled).update() }
        #expect(error.code == .channelKeyRevoked)
        #expect(error.message == "the channel answered 304 Not Modified for a channel.json signed by the channel key \(keyed.first.publicKey.keyID.prefix(16)), which the channel's root removed (keys.json version 2); refusing to call it up to date")
        #expect(try sandbox.labels() == ["99.0.0-1", "99.0.0-2"])
    }

    /// The same 304 once the signer's own expiry has passed, by the updater's clock.
    @Test func aNotModifiedAnswerDoesNotOutliveTheSignersExpiry() async throws {
        let (keyed, sandbox, bundled) = try Self.keyedDevice()
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4), key: keyed.first)
        #expect(try await keyed.updater(bundled).update().version == "1.1.0")
        try sandbox.server.set(["status": ["channel.json": 304]])

        // Two days later: the channel keys were listed for one.
        let later = Date.now.addingTimeInterval(2 * 86_400)
        let error = try await #require(throws: ReseedError.self) { try await keyed.updater(bundled, now: { later }).update() }
        #expect(error.code == .channelKeyExpired)
        #expect(error.message.hasPrefix("the channel answered 304 Not Modified for a channel.json signed by the channel key \(keyed.first.publicKey.keyID.prefix(16)), which expired at "), "\(error.message)")
        #expect(try sandbox.labels().count == 4)
    }

    // MARK: keys.json bound to channel.json

    /// 99.0.0 signed by the first key installed under keys.json v2; root removes the key (v3) and
    /// 4.0.0 is published under v3; the mirror serves v2 again beside it.
    @Test func aStaleKeysJSONBesideANewerManifestIsRefusedAsStaleNotAsADowngrade() async throws {
        let (keyed, sandbox, bundled) = try Self.keyedDevice()
        try keyed.edit([.add(keyed.second.publicKey, expires: .now.addingTimeInterval(30 * 86_400))])
        try sandbox.publish(try sandbox.seed("99.0.0", rows: 2), key: keyed.first)
        #expect(try await keyed.updater(bundled).update().version == "99.0.0")
        let versionTwo = try Data(contentsOf: keyed.keysFile)
        try keyed.edit([.remove(keyed.first.publicKey)])
        let versionThree = try Data(contentsOf: keyed.keysFile)
        try sandbox.publish(try sandbox.seed("4.0.0", rows: 4), key: keyed.second)
        try versionTwo.write(to: keyed.keysFile)

        // Now, and after the removed key's own expiry: the same sentence.
        for now in [Date.now, Date.now.addingTimeInterval(2 * 86_400)] {
            let error = try await #require(throws: ReseedError.self) { try await keyed.updater(bundled, now: { now }).update() }
            #expect(error.code == .channelRefused)
            #expect(error.message == "the channel serves keys.json version 2, older than version 3 its channel.json was published under: a stale copy; refusing until the host serves the keys the manifest names")
        }
        #expect(try sandbox.labels() == ["99.0.0-1", "99.0.0-2"])

        // Once the host serves the keys the manifest names, the genuine release installs.
        try versionThree.write(to: keyed.keysFile)
        let outcome = try await keyed.updater(bundled).update()
        #expect(outcome.version == "4.0.0")
        #expect(outcome.revokedKeyID == keyed.first.publicKey.keyID)
    }

    /// A keys.json of the version channel.json names, but other bytes (root signed two files v2).
    @Test func aKeysJSONOfTheNamedVersionWithOtherBytesIsRefused() async throws {
        let (keyed, sandbox, bundled) = try Self.keyedDevice()
        let versionOne = try Data(contentsOf: keyed.keysFile)
        try keyed.edit([.add(ChannelPrivateKey().publicKey, expires: .now.addingTimeInterval(3_600))])
        let other = try Data(contentsOf: keyed.keysFile)
        try versionOne.write(to: keyed.keysFile)
        try keyed.edit([.add(ChannelPrivateKey().publicKey, expires: .now.addingTimeInterval(3_600))])
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4), key: keyed.first)
        try other.write(to: keyed.keysFile)

        let error = try await #require(throws: ReseedError.self) { try await keyed.updater(bundled).update() }
        #expect(error.code == .channelRefused)
        #expect(error.message.hasPrefix("the channel's keys.json version 2 has SHA-256 "), "\(error.message)")
        #expect(try sandbox.labels() == Self.bundledLabels)
    }

    // MARK: Strict parsing, the format floor

    @Test func aLowerFormatThanOneVerifiedIsRefused() async throws {
        let (sandbox, bundled) = try Self.device()
        try sandbox.publish(try sandbox.seed("2.0.0", rows: 2))
        #expect(try await sandbox.updater(bundled).update().version == "2.0.0")
        let current = ChannelManifest.currentFormat
        try sandbox.publish(try sandbox.seed("3.0.0", rows: 4))
        // Format 1: no content hash, no compressed seed, no deltas, nothing after expires.
        try sandbox.forgeManifest { manifest in
            manifest.format = 1
            manifest.contentHash = nil
            manifest.incrementalContentHash = nil
            manifest.compressed = nil
            manifest.deltas = []
            (manifest.issued, manifest.channel, manifest.keys) = (nil, nil, nil)
        }

        let error = try await #require(throws: ReseedError.self) { try await sandbox.updater(bundled).update() }
        #expect(error.code == .channelRefused)
        #expect(error.message == "the channel's channel.json is in format 1, below format \(current) this device verified from the channel before; refusing a manifest without what that format checks")
        #expect(try sandbox.labels() == ["2.0.0-1", "2.0.0-2"])
    }

    /// A member named twice, in either signed file, is refused naming it: no reader sees another document.
    @Test(arguments: ["\"version\"", "\"expires\""])
    func aManifestMemberNamedTwiceIsRefused(member: String) throws {
        let manifest = """
            {"format": 2, "minimumFormat": 1, "name": "items", "version": "1.0.0", "file": "items-1.0.0.sqlite", "size": 4096,
             "sha256": "\(String(repeating: "a", count: 64))", "userVersion": 0, "applicationID": 0, "pageSize": 4096,
             "expires": "2030-01-01T00:00:00Z"}
            """
        let twice = manifest.replacingOccurrences(of: "}", with: member == "\"version\"" ? ", \"version\": \"9.0.0\"}" : ", \"expires\": \"2099-01-01T00:00:00Z\"}")
        #expect(throws: Never.self) { try ChannelManifest.decode(Array(manifest.utf8), source: "channel.json") }
        let error = try #require(throws: ReseedError.self) { try ChannelManifest.decode(Array(twice.utf8), source: "channel.json") }
        #expect(error.code == .invalidManifest)
        #expect(error.message == "field \(member): named twice in channel.json; a signed file names each member once")
    }

    @Test(arguments: ["\"version\": 1, ", "\"threshold\": 1, ", "\"revoked\": [], "])
    func aKeysJSONMemberNamedTwiceIsRefused(member: String) throws {
        let file = "{\"signed\": {\"type\": \"reseed-keys\", \"format\": 1, \"version\": 1, \"threshold\": 1, \"keys\": [], \"revoked\": []}, \"signatures\": []}"
        let twice = file.replacingOccurrences(of: "\"type\"", with: member.replacingOccurrences(of: ": 1", with: ": 2") + "\"type\"")
        #expect(throws: Never.self) { try ChannelKeys.decode(Array(file.utf8), source: "keys.json") }
        let error = try #require(throws: ReseedError.self) { try ChannelKeys.decode(Array(twice.utf8), source: "keys.json") }
        let name = String(member.split(separator: ":")[0].dropFirst().dropLast())
        #expect(error.field == "signed.\(name)", "\(error.message)")
        #expect(error.message == "field \"signed.\(name)\": named twice in keys.json; a signed file names each member once")
    }

    // MARK: Expiry of keys.json, issue time of channel.json

    @Test func anExpiredKeysJSONIsRefused() async throws {
        let (keyed, sandbox, bundled) = try Self.keyedDevice()
        let expires = Date.now.addingTimeInterval(3_600)
        var editor = ChannelKeysEditor(channel: sandbox.channel, rootKey: keyed.root)
        editor.expires = expires
        try editor.apply([])
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4), key: keyed.first)

        let later = expires.addingTimeInterval(600)
        let error = try await #require(throws: ReseedError.self) { try await keyed.updater(bundled, now: { later }).update() }
        #expect(error.code == .channelExpired)
        #expect(error.step == .checkKeys)
        #expect(error.message == "keys.json (version 2) expired at \(RFC3339.string(expires)); refusing keys the channel's root no longer vouches for")
        #expect(error.advice == "the channel's root key holder must re-sign keys.json (reseed keys --valid-for), or the host serves an old copy")
        #expect(try sandbox.labels() == Self.bundledLabels)
    }

    @Test func aManifestIssuedInTheFutureIsRefused() async throws {
        let (sandbox, bundled) = try Self.device()
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4))
        let issued = try #require(RFC3339.date("2026-06-01T00:00:00Z"))
        try sandbox.forgeManifest { $0.issued = issued; $0.expires = issued.addingTimeInterval(86_400) }

        // An hour before it was issued, by the updater's clock; then within the skew.
        let early = issued.addingTimeInterval(-3_600)
        let error = try await #require(throws: ReseedError.self) { try await sandbox.updater(bundled, now: { early }).update() }
        #expect(error.code == .channelRefused)
        #expect(error.message == "the channel's channel.json was issued at 2026-06-01T00:00:00Z, after this device's time 2026-05-31T23:00:00Z and its clock skew; refusing a manifest that is not valid yet")
        #expect(try sandbox.labels() == Self.bundledLabels)
        #expect(try await sandbox.updater(bundled, now: { issued.addingTimeInterval(-60) }).update().version == "1.1.0")
    }

    @Test func aManifestValidLongerThanTheMaximumIsRefused() async throws {
        let (sandbox, bundled) = try Self.device()
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4))
        let issued = try #require(RFC3339.date("2026-06-01T00:00:00Z"))
        try sandbox.forgeManifest { $0.issued = issued; $0.expires = RFC3339.date("9999-01-01T00:00:00Z") }
        let now = { @Sendable in issued.addingTimeInterval(60) }

        let error = try await #require(throws: ReseedError.self) { try await sandbox.updater(bundled, now: now).update() }
        #expect(error.code == .channelRefused)
        #expect(error.message == "the channel's channel.json is valid from 2026-06-01T00:00:00Z to 9999-01-01T00:00:00Z, longer than the 90 days this app accepts; refusing a manifest its signer made to outlive them")
        #expect(try sandbox.labels() == Self.bundledLabels)

        // 100 days is more than the default 90, and within a maximum of 120 days.
        try sandbox.forgeManifest { $0.expires = issued.addingTimeInterval(100 * 86_400) }
        await #expect(throws: ReseedError.self) { try await sandbox.updater(bundled, now: now).update() }
        let longer = sandbox.updater(bundled, now: now, adjust: { $0.maximumValidity = .seconds(120 * 86_400) })
        #expect(try await longer.update().version == "1.1.0")
    }

    // MARK: The channel's name

    /// A staging channel (same root, same channel key, same store) served at the production URL.
    @Test func aChannelOfAnotherNameIsRefusedPinnedOrRecorded() async throws {
        let (keyed, sandbox, bundled) = try Self.keyedDevice()
        var production = ChannelKeysEditor(channel: sandbox.channel, rootKey: keyed.root)
        production.channelName = "production"
        try production.apply([])
        try sandbox.publish(try sandbox.seed("2.0.0", rows: 2), key: keyed.first)
        #expect(try await keyed.updater(bundled).update().version == "2.0.0")

        var staging = production
        staging.channelName = "staging"
        #expect(throws: PackagingError.self) { try staging.apply([]) }
        staging.renamesChannel = true
        try staging.apply([])
        try sandbox.publish(try sandbox.seed("5.0.0-staging.1", rows: 5), key: keyed.first)

        // Unpinned: the first name verified is kept.
        let recorded = try await #require(throws: ReseedError.self) { try await keyed.updater(bundled).update() }
        #expect(recorded.code == .channelRefused)
        #expect(recorded.message == "the channel's keys.json is named 'staging'; this device verified the channel 'production' there before and takes no other")
        #expect(try sandbox.labels() == ["2.0.0-1", "2.0.0-2"])

        // Pinned, on a device that never saw the channel.
        try FileManager.default.removeItem(at: sandbox.trustFloorsURL)
        try FileManager.default.removeItem(at: sandbox.preferencesURL)
        let pinned = try await #require(throws: ReseedError.self) {
            try await keyed.updater(bundled, adjust: { $0.channelName = "production" }).update()
        }
        #expect(pinned.message == "the channel's keys.json is named 'staging'; this app pins the channel 'production'")
        #expect(try sandbox.labels() == ["2.0.0-1", "2.0.0-2"])
    }

    // MARK: Thresholds and root rotation

    @Test func oneRootAloneCannotLowerTheThreshold() async throws {
        let keyed = try KeyedChannel(try ChannelSandbox.inMemory())
        let sandbox = keyed.sandbox
        let otherRoot = ChannelPrivateKey()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        var both = ChannelKeysEditor(channel: sandbox.channel, rootKey: keyed.root)
        both.additionalRootKeys = [otherRoot]
        both.threshold = 2
        try both.apply([])
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4), key: keyed.first)
        let pins = [keyed.root.publicKey, otherRoot.publicKey]
        #expect(try await sandbox.updater(bundled, publicKeys: pins).update().version == "1.1.0")

        // The other root alone lists a leaked key at threshold 1, and the leaked key signs 9.0.0.
        let leaked = ChannelPrivateKey()
        var alone = ChannelKeysEditor(channel: sandbox.channel, rootKey: otherRoot)
        alone.threshold = 1
        try alone.apply([.add(leaked.publicKey, expires: .now.addingTimeInterval(3_600))])
        try sandbox.publish(try sandbox.seed("9.0.0", rows: 5), key: leaked)

        let error = try await #require(throws: ReseedError.self) { try await sandbox.updater(bundled, publicKeys: pins).update() }
        #expect(error.code == .signature)
        #expect(error.message == "keys.json (version 3) is signed by 1 of the root keys this device trusts; it needs 2: it was changed, or fewer roots signed it")
        #expect(try sandbox.labels().count == 4)
    }

    @Test func rootsRotateWithoutAnAppRelease() async throws {
        let (keyed, sandbox, bundled) = try Self.keyedDevice()
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4), key: keyed.first)
        #expect(try await keyed.updater(bundled).update().version == "1.1.0")

        // The pinned root hands over to a new one: signed by both.
        let newRoot = ChannelPrivateKey()
        var rotation = ChannelKeysEditor(channel: sandbox.channel, rootKey: keyed.root)
        rotation.additionalRootKeys = [newRoot]
        rotation.rootRotation = [newRoot.publicKey]
        try rotation.apply([])
        try sandbox.publish(try sandbox.seed("1.2.0", rows: 5), key: keyed.first)
        #expect(try await keyed.updater(bundled).update().version == "1.2.0")

        // From then on the new root alone signs, and the old one alone is refused.
        try ChannelKeysEditor(channel: sandbox.channel, rootKey: newRoot).apply([.add(keyed.second.publicKey, expires: .now.addingTimeInterval(86_400))])
        try sandbox.publish(try sandbox.seed("1.3.0", rows: 6), key: keyed.second)
        #expect(try await keyed.updater(bundled).update().version == "1.3.0")
        // A keys.json of a higher version signed by the old root alone (written elsewhere, then swapped in).
        let elsewhere = sandbox.directory.appending("forged")
        let forger = ChannelKeysEditor(channel: elsewhere, rootKey: keyed.root)
        for _ in 1...5 { try forger.apply([.add(keyed.second.publicKey, expires: .now.addingTimeInterval(86_400))]) }
        try FileManager.default.removeItem(at: keyed.keysFile)
        try FileManager.default.copyItem(at: elsewhere.appendingPathComponent(ChannelKeys.fileName), to: keyed.keysFile)
        try sandbox.publish(try sandbox.seed("1.4.0", rows: 7), key: keyed.second)
        let error = try await #require(throws: ReseedError.self) { try await keyed.updater(bundled).update() }
        #expect(error.code == .signature)
        #expect(error.message == "keys.json (version 5) is signed by 0 of the root keys this device trusts; it needs 1: it was changed, or fewer roots signed it")
        #expect(try sandbox.labels().count == 6)
    }

    // MARK: Floors that survive lost preferences

    /// 3.0.0 came from the channel; the preferences are lost; the app, shipping 1.0.0, launches; then
    /// the mirror replays 2.0.0.
    @Test func aLaunchAfterLostPreferencesKeepsTheDownloadAndTheFloors() async throws {
        let (sandbox, bundled) = try Self.device()
        try sandbox.publish(try sandbox.seed("2.0.0", rows: 2))
        let older = try sandbox.snapshot()
        try sandbox.publish(try sandbox.seed("3.0.0", rows: 4))
        #expect(try await sandbox.updater(bundled).update().version == "3.0.0")

        try FileManager.default.removeItem(at: sandbox.preferencesURL)
        let launch = try sandbox.launch(bundled)
        #expect(launch.version == "3.0.0")
        #expect(try sandbox.labels() == ["3.0.0-1", "3.0.0-2", "3.0.0-3", "3.0.0-4"])

        try sandbox.restore(older)
        let error = try await #require(throws: ReseedError.self) { try await sandbox.updater(bundled).update() }
        #expect(error.code == .channelRefused)
        #expect(try sandbox.labels() == ["3.0.0-1", "3.0.0-2", "3.0.0-3", "3.0.0-4"])
        #expect(FileManager.default.fileExists(atPath: sandbox.trustFloorsURL.path))
    }
}
