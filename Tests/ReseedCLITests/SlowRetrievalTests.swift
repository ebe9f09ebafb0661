#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import Reseed
import ReseedPackaging
import ReseedTesting
import Testing

/// TUF's slow-retrieval attack, and the resume that follows: a server that trickles the seed is cut
/// once it averages under the minimum rate, the locks are free, and the next try resumes with a
/// `Range` request that a changed file, or a host without ranges, can never splice.
@Suite(.timeLimit(.minutes(10))) struct SlowRetrievalTests {
    static let seedFile = "items-1.1.0.sqlite"
    /// What the trickling server sends at once before it slows to a byte every half second.
    static let burst = 200_000

    /// 1.0.0 installed, 1.1.0 (about 1 MiB) published, and the server set to trickle it after a burst.
    static func tricklingChannel(_ sandbox: ChannelSandbox) throws -> (bundled: Seed, offered: Seed) {
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        let offered = try sandbox.seed("1.1.0", rows: 4, paddingBytes: 1 << 20)
        try sandbox.publish(offered)
        try sandbox.server.set(["trickleAfter": [seedFile: [burst, 0.5]]])
        return (bundled, offered)
    }

    /// True when this process can take `name`'s `flock` at once: no one, this process included, holds it.
    static func isFree(_ lockFile: URL) -> Bool {
        let descriptor = open(lockFile.path, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        return flock(descriptor, LOCK_EX | LOCK_NB) == 0
    }

    /// The defence against slow retrieval, in the library: the idle timeout (120 s here) never
    /// fires, the minimum rate does, within seconds; the store, its version and both locks are as
    /// before, and what arrived is kept for the resume.
    @Test func aTricklingServerIsCutUnderTheMinimumRateAndTheLocksAreFree() async throws {
        let sandbox = try ChannelSandbox()
        let (bundled, offered) = try Self.tricklingChannel(sandbox)
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

    /// The same through `reseed update --low-speed-limit --low-speed-time`: one sentence, exit 1;
    /// then a run with the defaults resumes, and the server's log shows the range and the bytes.
    @Test func reseedUpdateCutsATricklingServerInSecondsAndTheNextRunResumes() throws {
        let sandbox = try ChannelSandbox()
        let (bundled, offered) = try Self.tricklingChannel(sandbox)
        let publicKey = sandbox.directory.appending("channel.pub")
        try Data((sandbox.key.publicKey.base64 + "\n").utf8).write(to: publicKey)
        let update = ["update", "--channel", sandbox.server.url.absoluteString, "--public-key", publicKey.path,
                      "--seed", bundled.manifestURL.path, "--data-dir", sandbox.dataDirectory.path, "--timeout", "120"]

        let slow = try ReseedBinary.run(update + ["--low-speed-limit", "1000", "--low-speed-time", "2"])
        #expect(slow.status == 1)
        #expect(slow.stdout == "")
        #expect(slow.stderrLines.count == 1)
        let url = sandbox.server.url.appendingPathComponent(Self.seedFile).absoluteString
        #expect(slow.stderr.hasPrefix("reseed: \(url): the server sent "))
        #expect(slow.stderr.contains(" under the minimum of 1000 bytes a second averaged over 2 seconds (too slow); "))
        #expect(slow.stderr.hasSuffix(" of \(offered.manifest.size) bytes are kept and the next try resumes; try again later or on a better network\n"))
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
        #expect(try sandbox.recorded() == ("1.0.0", .bundle))

        try sandbox.server.set([:])
        let resumed = try ReseedBinary.run(update + ["--json"])
        #expect(resumed.status == 0)
        #expect(resumed.stderr == "")
        let report = try jsonObject(resumed.stdout)
        #expect(report["outcome"] as? String == "updated")
        let from = try #require((report["resumedFrom"] as? NSNumber)?.intValue)
        #expect(from >= Self.burst)
        let requests = try sandbox.server.requests().filter { $0.path == "/" + Self.seedFile }
        #expect(requests.map(\.range) == [nil, "bytes=\(from)-"])
        #expect(requests.map(\.status) == [200, 206])
        // Both responses' ends are logged (the trickled one's once its handler sees the client gone).
        var sent = try sandbox.server.bodyBytesSent(to: "/" + Self.seedFile)
        for _ in 0..<200 where sent.count < 2 {
            Thread.sleep(forTimeInterval: 0.1)
            sent = try sandbox.server.bodyBytesSent(to: "/" + Self.seedFile)
        }
        #expect(sent.contains(Int(offered.manifest.size) - from), "the resume sends only the rest: \(sent)")
        #expect(sent.allSatisfy { $0 < Int(offered.manifest.size) })
        #expect(try sandbox.labels() == ["1.1.0-1", "1.1.0-2", "1.1.0-3", "1.1.0-4"])
        #expect(try sandbox.recorded() == ("1.1.0", .download))
        #expect(try sandbox.downloadFiles().isEmpty)
    }

    @Test func aServerThatIgnoresTheRangeSendsTheWholeSeedAndItInstalls() async throws {
        let sandbox = try ChannelSandbox()
        let cut = 300_000
        let (bundled, offered, error) = try await sandbox.cutDownload(after: cut, paddingBytes: 1 << 20)
        #expect(error?.code == .download)

        try sandbox.server.set(["ignoreRange": [Self.seedFile]])
        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.action == .updated)
        #expect(outcome.resumedFrom == nil)
        #expect(outcome.downloadedBytes == offered.manifest.size)
        let requests = try sandbox.server.requests().filter { $0.path == "/" + Self.seedFile }
        #expect(requests.map(\.range) == [nil, "bytes=\(cut)-"])
        #expect(requests.map(\.status) == [200, 200])
        #expect(try sandbox.labels() == ["1.1.0-1", "1.1.0-2", "1.1.0-3", "1.1.0-4"])
        #expect(try sandbox.downloadFiles().isEmpty)
    }

    /// A server that answers the range with other bytes (the file changed on the host, its validator
    /// not): the whole file's SHA-256 refuses the splice, nothing is installed, nothing is kept, and
    /// the next try asks for the whole file.
    @Test func aRangeAnsweredWithOtherBytesIsRefusedByTheWholeChecksumAndTheNextTryStartsOver() async throws {
        let sandbox = try ChannelSandbox()
        let cut = 300_000
        let (bundled, _, error) = try await sandbox.cutDownload(after: cut, paddingBytes: 1 << 20)
        #expect(error?.code == .download)

        try sandbox.server.set(["rangeFlipped": [Self.seedFile]])
        let spliced = await #expect(throws: ReseedError.self) { try await sandbox.updater(bundled).update() }
        #expect(spliced?.code == .verificationFailed)
        #expect(spliced?.message.contains("the signed channel manifest says") == true)
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
        #expect(try sandbox.recorded() == ("1.0.0", .bundle))
        #expect(try sandbox.downloadFiles().isEmpty)

        try sandbox.server.set([:])
        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.action == .updated)
        #expect(outcome.resumedFrom == nil)
        let requests = try sandbox.server.requests().filter { $0.path == "/" + Self.seedFile }
        #expect(requests.map(\.range) == [nil, "bytes=\(cut)-", nil])
        #expect(requests.map(\.status) == [200, 206, 200])
        #expect(try sandbox.labels() == ["1.1.0-1", "1.1.0-2", "1.1.0-3", "1.1.0-4"])
    }

    /// A `206` for another range than the one asked for is never written; the same update asks
    /// once more for the whole file, as after a `416`.
    @Test func aContentRangeForAnotherRangeStartsOverOnce() async throws {
        let sandbox = try ChannelSandbox()
        let cut = 300_000
        let (bundled, offered, error) = try await sandbox.cutDownload(after: cut, paddingBytes: 1 << 20)
        #expect(error?.code == .download)

        let size = offered.manifest.size
        try sandbox.server.set(["contentRange": [Self.seedFile: "bytes 0-\(size - 1)/\(size)"]])
        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.action == .updated)
        #expect(outcome.resumedFrom == nil)
        #expect(outcome.downloadedBytes == size)
        let requests = try sandbox.server.requests().filter { $0.path == "/" + Self.seedFile }
        #expect(requests.map(\.range) == [nil, "bytes=\(cut)-", nil])
        #expect(requests.map(\.status) == [200, 206, 200])
        #expect(try sandbox.labels() == ["1.1.0-1", "1.1.0-2", "1.1.0-3", "1.1.0-4"])
    }
}
