#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Reseed
import ReseedTestSupport
import ReseedTesting
import Testing

/// `ChannelUpdater` against what an attacker or an odd host can do: files planted in the data
/// directory, a validator edited to smuggle a header, dates that cannot tell two publishes apart,
/// an old signed manifest replayed after the preferences were lost.
@Suite(.timeLimit(.minutes(10))) struct ChannelHostileTests {
    /// What is planted in the data directory under a download's file name before an update.
    enum Plant: String, CaseIterable, CustomTestStringConvertible {
        /// A hard link to the victim at the partial download's name.
        case partialHardLink
        /// A hard link to the victim at the partial download's validator name (`<partial>.etag`).
        case validatorHardLink
        /// A symbolic link to the victim at the partial download's name.
        case partialSymbolicLink

        var testDescription: String { rawValue }
    }

    @Test(arguments: Plant.allCases)
    func aLinkPlantedAtADownloadNameIsNeverWrittenThrough(plant: Plant) async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        let offered = try sandbox.seed("1.1.0", rows: 4)
        try sandbox.publish(offered)
        let victim = sandbox.directory.appending("victim.txt")
        let precious = Data("the user's own file, not a seed\n".utf8)
        try precious.write(to: victim)
        let partial = sandbox.dataDirectory.appendingPathComponent(".items.sqlite.reseed-download-" + offered.manifest.sha256.prefix(16))
        switch plant {
        case .partialHardLink: try #require(link(victim.path, partial.path) == 0)
        case .validatorHardLink: try #require(link(victim.path, partial.path + ".etag") == 0)
        case .partialSymbolicLink: try #require(symlink(victim.path, partial.path) == 0)
        }

        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.action == .updated)
        #expect(outcome.resumedFrom == nil, "nothing is resumed from a file that is not the download's own")
        #expect(try sandbox.labels() == ["1.1.0-1", "1.1.0-2", "1.1.0-3", "1.1.0-4"])
        #expect(try Data(contentsOf: victim) == precious)
        #expect(try FileManager.default.attributesOfItem(atPath: victim.path)[.referenceCount] as? Int == 1,
                "the planted name is gone, the victim is linked from nowhere else")
        #expect(try sandbox.downloadFiles().isEmpty)
    }

    /// The validator kept beside a partial download is sent back in `If-Range`: a hard link to
    /// another file there must not send that file's bytes to the channel's host.
    @Test func aValidatorThatIsAHardLinkIsNotSentToTheServer() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let cut = 100_000
        let (bundled, offered, error) = try await sandbox.cutDownload(after: cut, paddingBytes: 1 << 20)
        #expect(error?.code == .download)
        let partial = sandbox.dataDirectory.appendingPathComponent(".items.sqlite.reseed-download-" + offered.manifest.sha256.prefix(16))
        let secret = sandbox.directory.appending("secret.txt")
        try Data("a secret of the user".utf8).write(to: secret)
        try FileManager.default.removeItem(atPath: partial.path + ".etag")
        try #require(link(secret.path, partial.path + ".etag") == 0)

        try sandbox.server.set([:])
        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.action == .updated)
        let resumed = try #require(try sandbox.server.requests().last { $0.path == "/items-1.1.0.sqlite" })
        #expect(resumed.range == "bytes=\(cut)-")
        #expect(resumed.ifRange == nil)
        #expect(try String(contentsOf: secret, encoding: .utf8) == "a secret of the user")
        #expect(try sandbox.labels().count == 4)
    }

    /// The preferences are the user's file: a validator edited to hold a line break must not
    /// add a header of its own to the request (CR LF is one Character in Swift, so the check is on bytes).
    @Test func aValidatorWithALineBreakInThePreferencesIsNotSent() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4))
        #expect(try await sandbox.updater(bundled).update().version == "1.1.0")
        let preferences = try String(contentsOf: sandbox.preferencesURL, encoding: .utf8)
        let etag = try #require(preferences.firstMatch(of: /"etag": ("(?:[^"\\]|\\.)*")/)?.output.1)
        let smuggled = preferences.replacingOccurrences(of: String(etag), with: #""\"x\"\r\nIf-None-Match: \"x\"""#)
        try #require(smuggled != preferences)
        try Data(smuggled.utf8).write(to: sandbox.preferencesURL)

        let before = try sandbox.server.requests().count
        let again = try await sandbox.updater(bundled).update()
        #expect(again.action == .upToDate)
        let check = try #require(try sandbox.server.requests().dropFirst(before).first)
        #expect(check.path == "/channel.json")
        #expect(check.ifNoneMatch == nil, "the edited validator is left out, and nothing rides in on it")
        #expect(try sandbox.labels().count == 4)
    }

    /// A host without ETag (Python's http.server, many static hosts) that reports the same
    /// Last-Modified for two publishes within one second, and a Date in that same second.
    @Test func aPublishWithinTheSecondOfTheLastCheckIsSeen() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let second = "Wed, 01 Jan 2025 00:00:00 GMT"
        try sandbox.server.set(["validators": ["etag": false, "lastModified": second, "date": second]])
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4))
        #expect(try await sandbox.updater(bundled).update().version == "1.1.0")

        try sandbox.publish(try sandbox.seed("1.2.0", rows: 5))
        let before = try sandbox.server.requests().count
        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.action == .updated)
        #expect(outcome.version == "1.2.0")
        #expect(try sandbox.labels().count == 5)
        let check = try sandbox.server.requests().dropFirst(before).first
        #expect(check?.path == "/channel.json")
        #expect(check?.ifModifiedSince == nil, "a date no later than the response's own is a weak validator, never sent back")
        #expect(check?.status == 200)
    }

    /// The same host when the date is a strong validator: the response is dated a second or more later.
    @Test func aLastModifiedASecondOlderThanItsResponseIsSentBack() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let modified = "Wed, 01 Jan 2025 00:00:00 GMT"
        try sandbox.server.set(["validators": ["etag": false, "lastModified": modified, "date": "Wed, 01 Jan 2025 00:00:01 GMT"]])
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4))
        #expect(try await sandbox.updater(bundled).update().version == "1.1.0")

        let before = try sandbox.server.requests().count
        let again = try await sandbox.updater(bundled).update()
        #expect(again.notModified)
        let check = try sandbox.server.requests().dropFirst(before)
        #expect(check.map(\.path) == ["/channel.json"])
        #expect(check.first?.ifModifiedSince == modified)
        #expect(check.first?.status == 304)
    }

    /// 3.0.0 came from the channel; the app ships 1.0.0; the preferences are lost; an old, validly
    /// signed manifest of 2.0.0 is replayed. The trust floors beside the store say 3.0.0 was verified,
    /// and the store file itself says 3.0.0: each is a floor.
    @Test func aReplayedOlderManifestIsRefusedAfterThePreferencesAreLost() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("2.0.0", rows: 2))
        let manifestURL = sandbox.channel.appendingPathComponent(ChannelManifest.fileName)
        let signatureURL = sandbox.channel.appendingPathComponent(ChannelManifest.signatureFileName)
        let (oldManifest, oldSignature) = (try Data(contentsOf: manifestURL), try Data(contentsOf: signatureURL))
        try sandbox.publish(try sandbox.seed("3.0.0", rows: 4))
        #expect(try await sandbox.updater(bundled).update().version == "3.0.0")

        try FileManager.default.removeItem(at: sandbox.preferencesURL)
        try oldSignature.write(to: signatureURL)
        try oldManifest.write(to: manifestURL)
        let error = await #expect(throws: ReseedError.self) { try await sandbox.updater(bundled).update() }
        #expect(error?.code == .channelRefused)
        #expect(error?.message == "the channel offers items 2.0.0, older than 3.0.0 this device verified from the channel before; refusing a rollback")
        // The trust floors lost too: the store file's own record still holds.
        try FileManager.default.removeItem(at: sandbox.trustFloorsURL)
        let embedded = await #expect(throws: ReseedError.self) { try await sandbox.updater(bundled).update() }
        #expect(embedded?.message == "the channel offers items 2.0.0, older than 3.0.0 in the store file \(sandbox.storeURL.path) (its reseed_metadata table); refusing a downgrade")
        #expect(try sandbox.labels() == ["3.0.0-1", "3.0.0-2", "3.0.0-3", "3.0.0-4"])
        #expect(!(try sandbox.server.requests().contains { $0.path == "/items-2.0.0.sqlite" }), "nothing is downloaded")

        let allowed = try await sandbox.updater(bundled, allowsDowngrade: true).update()
        #expect(allowed.action == .updated)
        #expect(try sandbox.labels() == ["2.0.0-1", "2.0.0-2"])
    }
}
