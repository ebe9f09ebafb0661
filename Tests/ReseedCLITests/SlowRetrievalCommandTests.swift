import Foundation
import Reseed
import ReseedPackaging
import ReseedTestSupport
import ReseedTesting
import Testing

/// TUF's slow-retrieval attack through `reseed update`: a server that trickles the seed is cut once
/// it averages under `--low-speed-limit`, in one sentence, and the next run resumes with a `Range`
/// request (the library's own cut, and the resume's logic, are tested in `ReseedTests`).
@Suite(.timeLimit(.minutes(10))) struct SlowRetrievalCommandTests {
    static let seedFile = "items-1.1.0.sqlite"
    /// What the trickling server sends at once before it slows to a byte every half second.
    static let burst = 200_000

    /// `reseed update --low-speed-limit --low-speed-time` cuts the trickle: one sentence, exit 1;
    /// then a run with the defaults resumes, and the server's log shows the range and the bytes.
    @Test func reseedUpdateCutsATricklingServerInSecondsAndTheNextRunResumes() throws {
        let sandbox = try ChannelSandbox()
        let (bundled, offered) = try sandbox.trickling(after: Self.burst)
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
}
