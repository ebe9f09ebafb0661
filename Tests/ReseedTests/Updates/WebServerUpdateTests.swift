import Foundation
import Reseed
import ReseedTestSupport
import Testing

/// Updates from a channel folder served as plain static files by the web servers people put in
/// front of one, nginx and caddy from Debian, instead of the tests' `channel_server.py`: their own
/// validators (`ETag`, `Last-Modified`), conditional requests, ranges and content types. Skipped
/// where a server is not installed (`.ci/run` installs both).
@Suite(.serialized, .timeLimit(.minutes(10))) struct WebServerUpdateTests {
    static func sandbox(_ kind: WebServer.Kind) throws -> ChannelSandbox {
        try ChannelSandbox { root, scratch in try WebServer(kind, root: root, scratch: scratch) }
    }

    /// A delta update, then a check that finds nothing new (channel.json asked with its validator and
    /// answered 304, nothing else downloaded), then a full update of a device whose seed the channel
    /// has no delta from (the xz, where this platform reads it).
    @Test(.enabled(if: WebServer.Kind.nginx.executable != nil || WebServer.Kind.caddy.executable != nil),
          arguments: WebServer.Kind.allCases)
    func updatesByDeltaAndInFullAndAsksAgainWithTheServersValidator(kind: WebServer.Kind) async throws {
        guard kind.executable != nil else { return }
        let sandbox = try Self.sandbox(kind)
        let bundled = try sandbox.release("1.0.0", generation: 0)
        try sandbox.launch(bundled)
        try sandbox.publish(bundled, compressed: true)
        let offered = try sandbox.release("1.1.0", generation: 1)
        let published = try sandbox.publish(offered, compressed: true)
        let delta = try #require(published.manifest.deltas.first)

        let updated = try await sandbox.updater(bundled).update()
        #expect(updated.action == .updated, "\(kind)")
        #expect(updated.method == .delta, "\(kind)")
        #expect(updated.downloadedBytes == delta.file.smallest.size, "\(kind)")
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash, "\(kind)")
        let served = try sandbox.server.requests()
        // keys.json (a key rotation) is optional: the channel has none.
        #expect(served.allSatisfy { $0.status == ($0.path == "/keys.json" ? 404 : 200) }, "\(kind): \(served)")

        let again = try await sandbox.updater(bundled).update()
        #expect(again.action == .upToDate, "\(kind)")
        #expect(again.notModified, "\(kind)")
        let asked = try sandbox.server.requests().dropFirst(served.count)
        #expect(asked.map(\.path) == ["/channel.json"], "\(kind): \(asked)")
        #expect(asked.first?.status == 304, "\(kind): \(asked)")
        #expect(asked.first?.ifNoneMatch != nil || asked.first?.ifModifiedSince != nil, "\(kind): \(asked)")

        // A device whose installed seed the channel never offered: the whole seed, in its smallest encoding.
        try FileManager.default.removeItem(at: sandbox.dataDirectory)
        let other = try sandbox.seed("0.9.0")
        try sandbox.launch(other)
        let full = try await sandbox.updater(other).update()
        #expect(full.action == .updated, "\(kind)")
        #expect(full.method == .full, "\(kind)")
        let compressed = try #require(published.manifest.compressed)
        #expect(full.downloadedBytes == compressed.smallest.size, "\(kind)")
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash, "\(kind)")
        #expect(try sandbox.recorded() == ("1.1.0", .download), "\(kind)")
    }

    /// A seed download cut on a slow mirror (nginx's `limit_rate`, below the updater's lowest speed)
    /// resumes from the fast one: the same files, so the same `ETag`, and nginx answers the range.
    @Test(.enabled(if: WebServer.Kind.nginx.executable != nil))
    func aDownloadCutOnASlowMirrorResumesFromAnother() async throws {
        let sandbox = try Self.sandbox(.nginx)
        let server = try #require(sandbox.server as? WebServer)
        let slowURL = try #require(server.slowURL)
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        let offered = try sandbox.seed("1.1.0", rows: 4, paddingBytes: 4 << 20)
        try sandbox.publish(offered)

        var slow = sandbox.configuration()
        slow.lowSpeedLimit = 1 << 20
        slow.lowSpeedTime = .seconds(1)
        let cut = ChannelUpdater(channel: slowURL, publicKeys: [sandbox.key.publicKey], launcher: sandbox.launcher(bundled), configuration: slow)
        await #expect(throws: ReseedError.self) { try await cut.update() }
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
        let kept = try sandbox.downloadFiles()
        #expect(!kept.isEmpty, "no partial download was kept")

        let resumed = try await sandbox.updater(bundled).update()
        #expect(resumed.action == .updated)
        let from = try #require(resumed.resumedFrom, "the download started over")
        #expect(from > 0 && from < Int64(4 << 20))
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash)
        let ranged = try sandbox.server.requests().filter { $0.range != nil }
        #expect(ranged.map(\.status) == [206], "\(ranged)")
        #expect(ranged.first?.ifRange != nil, "\(ranged)")
    }
}
