#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import Reseed
import ReseedPackaging
import ReseedTestSupport
import ReseedTesting
import Testing

/// The HTTP itself, against a real server on 127.0.0.1 (`channel_server.py`, through the
/// platform's engine: libcurl on Linux): timeouts and deadlines, redirects, a body refused on its
/// headers or past its limit, and TUF's slow-retrieval attack, cut once a transfer averages under
/// the minimum rate, the locks then free and what arrived kept for the resume.
@Suite(.timeLimit(.minutes(10))) struct ChannelTransferTests {
    /// What the trickling server sends at once before it slows to a byte every half second.
    static let burst = 200_000

    /// True when this process can take `lockFile`'s `flock` at once: no one, this process included, holds it.
    static func isFree(_ lockFile: URL) -> Bool {
        let descriptor = open(lockFile.path, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        return flock(descriptor, LOCK_EX | LOCK_NB) == 0
    }

    @Test func aServerThatHangsHitsTheTimeoutWithAClearError() async throws {
        let sandbox = try ChannelSandbox()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0", paddingBytes: 1 << 20))
        try sandbox.server.set(["hang": ["channel.json"]])
        let clock = ContinuousClock()
        let start = clock.now
        let error = await #expect(throws: ReseedError.self) { try await sandbox.updater(bundled, timeout: .seconds(1)).update() }
        let elapsed = clock.now - start
        #expect(error?.code == .download)
        #expect(error?.step == .fetchManifest)
        #expect(error?.description == "\(sandbox.server.url.absoluteString)channel.json: no answer within 1.0 seconds (timed out); check the channel's URL and the network, then try again")
        // Not earlier than the timeout. No upper bound: with the whole suite running, other tests'
        // blocking waits held the 2 cooperative threads for minutes (277 s seen); the suite's time
        // limit is the guard against waiting forever.
        #expect(elapsed >= .milliseconds(900))

        // A seed download that stops moving in the middle is cut the same way, and keeps what arrived.
        try sandbox.server.set(["stall": ["items-1.1.0.sqlite": 50_000]])
        let stalled = await #expect(throws: ReseedError.self) { try await sandbox.updater(bundled, timeout: .seconds(1)).update() }
        #expect(stalled?.code == .download)
        #expect(stalled?.step == .download)
        #expect(stalled?.message.hasPrefix("the server sent nothing more for 1.0 seconds (timed out); 50000 of ") == true)
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
    }

    /// A server that sends the manifest a byte every 0.2 s never trips the idle timeout (10 s here);
    /// the manifest's deadline ends it.
    @Test func aManifestTrickledByteByByteHitsItsDeadline() async throws {
        let sandbox = try ChannelSandbox()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0"))
        try sandbox.server.set(["trickle": [ChannelManifest.fileName: 0.2]])
        let clock = ContinuousClock()
        let start = clock.now
        let error = await #expect(throws: ReseedError.self) {
            try await sandbox.updater(bundled, timeout: .seconds(10), manifestDeadline: .seconds(1)).update()
        }
        let elapsed = clock.now - start
        #expect(error?.code == .download)
        #expect(error?.step == .fetchManifest)
        #expect(error?.description == "\(sandbox.server.url.absoluteString)channel.json: the transfer took longer than 1.0 seconds in all (the server sends too slowly); check the channel's URL and the network, then try again")
        #expect(elapsed >= .milliseconds(900), "not earlier than the deadline (no upper bound: see the hang test)")
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
    }

    /// A host that moved the files answers with redirects; they are followed, the body of each dropped.
    @Test func redirectsAreFollowed() async throws {
        let sandbox = try ChannelSandbox()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4))
        for name in [ChannelManifest.fileName, ChannelManifest.signatureFileName, "items-1.1.0.sqlite"] {
            try FileManager.default.copyItem(at: sandbox.channel.appendingPathComponent(name), to: sandbox.channel.appendingPathComponent("moved-" + name))
        }
        try sandbox.server.set(["redirect": [
            ChannelManifest.fileName: "/moved-channel.json", ChannelManifest.signatureFileName: "/moved-channel.json.sig",
            "items-1.1.0.sqlite": sandbox.server.url.absoluteString + "moved-items-1.1.0.sqlite",
        ]])
        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.action == .updated)
        #expect(try sandbox.labels() == ["1.1.0-1", "1.1.0-2", "1.1.0-3", "1.1.0-4"])
        #expect(try sandbox.server.requests().map { "\($0.path) \($0.status ?? 0)" } == [
            "/channel.json 302", "/moved-channel.json 200", "/channel.json.sig 302", "/moved-channel.json.sig 200", "/keys.json 404",
            "/items-1.1.0.sqlite 302", "/moved-items-1.1.0.sqlite 200",
        ])
    }

    @Test func aManifestOverTheLimitIsRefusedWithoutReadingItAll() async throws {
        let sandbox = try ChannelSandbox()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.server.set(["oversize": ["channel.json"]])
        let error = await #expect(throws: ReseedError.self) { try await sandbox.updater(bundled).update() }
        #expect(error?.code == .channelRefused)
        #expect(error?.message.hasPrefix("the channel manifest is larger than the 65536-byte limit; stopped reading after") == true)
        let sent = try sandbox.server.bodyBytesSent(to: "/channel.json")
        let offered = 256 << 20
        print("oversized manifest: the server got \(sent.first ?? -1) of \(offered) bytes out before the client left")
        #expect(sent.count == 1)
        #expect((sent.first ?? .max) < offered / 4)
        #expect(!(try sandbox.server.requests().contains { $0.path == "/channel.json.sig" }))
    }

    /// The timeout is the app's to choose: one of centuries is clamped for libcurl, not an overflow trap.
    @Test func aTimeoutOfCenturiesIsClampedNotATrap() async throws {
        let sandbox = try ChannelSandbox()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4))
        let outcome = try await sandbox.updater(bundled, timeout: .seconds(Int64.max / 2)).update()
        #expect(outcome.version == "1.1.0")
        #expect(try sandbox.labels().count == 4)
    }

    @Test(arguments: [ChannelManifest.fileName, "items-1.1.0.sqlite"])
    func aGzipEncodedAnswerIsRefusedOnItsHeaders(file: String) async throws {
        let sandbox = try ChannelSandbox()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4))
        try sandbox.server.set(["gzip": [file: 1024]])

        let error = await #expect(throws: ReseedError.self) { try await sandbox.updater(bundled).update() }
        #expect(error?.code == .download)
        #expect(error?.step == (file == ChannelManifest.fileName ? .fetchManifest : .download))
        #expect(error?.message.hasPrefix("the server sent the body with Content-Encoding 'gzip', which the request did not accept (Accept-Encoding: identity)") == true)
        #expect(error?.url?.lastPathComponent == file)
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
        #expect(try sandbox.recorded() == ("1.0.0", .bundle))
    }

    /// The defence against slow retrieval, in the library: the idle timeout (120 s here) never
    /// fires, the minimum rate does, within seconds; the store, its version and both locks are as
    /// before, and what arrived is kept for the resume.
    @Test func aTricklingServerIsCutUnderTheMinimumRateAndTheLocksAreFree() async throws {
        let sandbox = try ChannelSandbox()
        let (bundled, offered) = try sandbox.trickling(after: Self.burst)
        var updater = sandbox.updater(bundled)
        updater.configuration.lowSpeedLimit = 1000
        updater.configuration.lowSpeedTime = .seconds(2)

        let error = await #expect(throws: ReseedError.self) { try await updater.update() }
        #expect(error?.code == .downloadTooSlow)
        #expect(error?.step == .download)
        #expect(error?.message.contains("under the minimum of 1000 bytes a second averaged over 2 seconds (too slow)") == true)
        #expect(error?.message.contains("bytes are kept and the next try resumes") == true)
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
        #expect(try sandbox.recorded() == ("1.0.0", .bundle))
        let layout = StoreLayout(store: "items")
        #expect(Self.isFree(sandbox.dataDirectory.appendingPathComponent(layout.updateLock)), "the update lock is released")
        #expect(Self.isFree(sandbox.dataDirectory.appendingPathComponent(layout.installLock)), "the store's lock is free")
        let partial = sandbox.dataDirectory.appendingPathComponent(SeedDownload.partialName(store: "items", sha256: offered.manifest.sha256))
        let kept = try #require(try FileManager.default.attributesOfItem(atPath: partial.path)[.size] as? Int)
        #expect(kept >= Self.burst && kept < Int(offered.manifest.size))

        // The same process updates again at once against a healthy server: it resumes.
        try sandbox.server.set([:])
        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.action == .updated)
        #expect(outcome.resumedFrom == Int64(kept))
        #expect(outcome.downloadedBytes == offered.manifest.size - Int64(kept))
        #expect(try sandbox.labels() == ["1.1.0-1", "1.1.0-2", "1.1.0-3", "1.1.0-4"])
        #expect(try sandbox.downloadFiles().isEmpty)
    }

    /// `keys.json` is a transfer of the update too: trickled a byte every half second, it is cut by
    /// the minimum rate within seconds, long before the small files' deadline (30 s here).
    @Test func aTrickledKeysFileIsCutUnderTheMinimumRate() async throws {
        let sandbox = try ChannelSandbox()
        let root = ChannelPrivateKey(), channelKey = ChannelPrivateKey()
        try ChannelKeysEditor(channel: sandbox.channel, rootKey: root).apply([.add(channelKey.publicKey, expires: .now.addingTimeInterval(86_400))])
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4), key: channelKey)
        try sandbox.server.set(["trickle": [ChannelKeys.fileName: 0.5]])
        var updater = sandbox.updater(bundled, publicKey: root.publicKey)
        updater.configuration.lowSpeedLimit = 1000
        updater.configuration.lowSpeedTime = .seconds(2)
        updater.configuration.manifestDeadline = .seconds(30)

        let error = await #expect(throws: ReseedError.self) { try await updater.update() }
        #expect(error?.code == .downloadTooSlow, "\(String(describing: error))")
        #expect(try sandbox.recorded() == ("1.0.0", .bundle))
    }
}
