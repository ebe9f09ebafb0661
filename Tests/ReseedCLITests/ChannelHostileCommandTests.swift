#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Reseed
import ReseedTestSupport
import ReseedTesting
import Testing

/// `reseed update` against a gzip bomb: the whole process's peak memory, measured from outside.
@Suite(.timeLimit(.minutes(10))) struct ChannelHostileCommandTests {
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
