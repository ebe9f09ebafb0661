#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Reseed
import ReseedPackaging
import ReseedTestSupport
import ReseedTesting
import Testing

/// `reseed update` against a hostile mirror (a real HTTP server that replays an old snapshot of the
/// folder and answers 503 or 304 per file), and against a gzip bomb: the whole process's peak memory,
/// measured from outside.
@Suite(.timeLimit(.minutes(10))) struct ChannelHostileCommandTests {
    /// 3.0.0 verified, its download answered 503; then the mirror replays the folder of 2.0.0, and
    /// later answers 304 for the channel.json of 3.0.0 after root removed the key that signed it.
    @Test func aMirrorThatFailsADownloadThenReplaysAnOlderFolderIsRefusedInOneSentence() throws {
        let keyed = try KeyedChannel(try ChannelSandbox())
        let sandbox = keyed.sandbox
        let rootFile = try keyed.rootPublicKeyFile()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("2.0.0", rows: 2), key: keyed.first)
        let older = try sandbox.snapshot()
        try sandbox.publish(try sandbox.seed("3.0.0", rows: 4), key: keyed.first)
        let update = ["update", "--channel", sandbox.server.url.absoluteString, "--public-key", rootFile.path,
                      "--seed", bundled.manifestURL.path, "--data-dir", sandbox.dataDirectory.path]

        try sandbox.server.set(["status": ["items-3.0.0.sqlite": 503]])
        let failed = try ReseedBinary.run(update)
        #expect(failed.status == 1)
        #expect(failed.stderr.contains("HTTP 503"), "\(failed.stderr)")

        try sandbox.server.set([:])
        let current = try sandbox.snapshot()
        try sandbox.restore(older)
        let replay = try ReseedBinary.run(update)
        #expect(replay.status == 1)
        #expect(replay.stderrLines.count == 1, "\(replay.stderr)")
        #expect(replay.stderr.contains("the channel offers items 2.0.0, older than 3.0.0 this device verified from the channel before; refusing a rollback"), "\(replay.stderr)")
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
        #expect(!(try sandbox.server.requests().contains { $0.path == "/items-2.0.0.sqlite" }), "nothing is downloaded")

        // The genuine folder again: 3.0.0 installs. Then root removes its signer and the mirror answers 304.
        try sandbox.restore(current)
        #expect(try ReseedBinary.run(update).status == 0)
        try keyed.edit([.remove(keyed.first.publicKey)])
        try sandbox.server.set(["status": [ChannelManifest.fileName: 304]])
        let notModified = try ReseedBinary.run(update)
        #expect(notModified.status == 1)
        #expect(notModified.stderrLines.count == 1, "\(notModified.stderr)")
        #expect(notModified.stderr.contains("the channel answered 304 Not Modified for a channel.json signed by the channel key \(keyed.first.publicKey.keyID.prefix(16)), which the channel's root removed"), "\(notModified.stderr)")
        #expect(try sandbox.labels() == ["3.0.0-1", "3.0.0-2", "3.0.0-3", "3.0.0-4"])
    }

    /// 1 MB of gzip that inflates to 1 GiB, as `channel.json` and as the seed: the CLI's peak
    /// memory stays within 64 MiB (measured by the parent's `getrusage`, so it is the peak of the
    /// whole process, not a sample).
    @Test func aGzipBombKeepsTheUpdateCommandWithin64MiB() throws {
        let sandbox = try ChannelSandbox()
        let publicKey = sandbox.directory.appending("channel.pub")
        try (sandbox.key.publicKey.base64 + "\n").write(to: publicKey, atomically: true, encoding: .utf8)
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4))
        let update = ["update", "--channel", sandbox.server.url.absoluteString, "--public-key", publicKey.path,
                      "--seed", bundled.manifestURL.path, "--data-dir", sandbox.dataDirectory.path, "--timeout", "120"]

        for file in [ChannelManifest.fileName, "items-1.1.0.sqlite"] {
            try sandbox.server.set(["gzip": [file: 1024]])
            let (result, peak) = try Self.runMeasuringPeakMemory(update)
            print("gzip bomb as \(file): peak RSS of reseed update \(peak >> 10) KiB")
            #expect(result.status == 1)
            #expect(result.stderr.hasPrefix("reseed: \(sandbox.server.url.absoluteString)\(file): the server sent the body with Content-Encoding 'gzip'"), "\(result.stderr)")
            #expect(peak <= 64 << 20, "peak RSS \(peak) bytes")
        }
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
    }

    /// Runs `reseed arguments…` as the only child of a small Python parent that reports the
    /// child's peak resident set size (`getrusage(RUSAGE_CHILDREN).ru_maxrss`, KiB on Linux).
    static func runMeasuringPeakMemory(_ arguments: [String]) throws -> (result: ReseedBinary.Result, peakBytes: Int) {
        let script = """
            import resource, subprocess, sys
            code = subprocess.call(sys.argv[1:])
            sys.stderr.write("peak-rss-kib %d\\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
            sys.exit(code if code >= 0 else 128 - code)
            """
        var result = try ReseedBinary.start(arguments, prefix: ["/usr/bin/env", "python3", "-c", script]).wait()
        var lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        guard let last = lines.popLast(), last.hasPrefix("peak-rss-kib "), let kib = Int(last.dropFirst(13)) else {
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "no peak memory reported: \(result.stderr.suffix(300))"])
        }
        result.stderr = lines.map { $0 + "\n" }.joined()
        return (result, kib << 10)
    }
}
