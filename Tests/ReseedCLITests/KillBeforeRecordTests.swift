import Foundation
import GRDB
import Reseed
import ReseedTestSupport
import ReseedTesting
import Testing

/// Issue 32, case 11: SIGKILL a real `reseed update` at each rename it makes (strace delivers the
/// signal as the call starts). Where the kill falls between the store's swap and the preferences'
/// record, the store holds 2.0.0 recorded as 1.0.0: `reseed status` must tell what the store holds,
/// and the next update must record it and install nothing.
@Suite(.serialized, .timeLimit(.minutes(10))) struct KillBeforeRecordTests {
    @Test(.enabled(if: SyscallFaultTests.straceProblem == nil, Comment(rawValue: SyscallFaultTests.straceProblem ?? "")))
    func aKillBetweenTheSwapAndTheRecordIsRecordedByTheNextUpdate() throws {
        let strace = try #require(SyscallFaultTests.strace)
        let sandbox = try ChannelSandbox()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("2.0.0", rows: 5))
        let publicKey = sandbox.directory.appending("channel.pub")
        try Data((sandbox.key.publicKey.base64 + "\n").utf8).write(to: publicKey)
        let device = sandbox.directory.appending("device")
        try FileManager.default.copyItem(at: sandbox.dataDirectory, to: device)
        let update = ["update", "--channel", sandbox.server.url.absoluteString, "--public-key", publicKey.path,
                      "--seed", bundled.manifestURL.path, "--data-dir", sandbox.dataDirectory.path, "--json"]

        var cutShort = 0
        for ordinal in 1...6 {
            try? FileManager.default.removeItem(at: sandbox.dataDirectory)
            try FileManager.default.copyItem(at: device, to: sandbox.dataDirectory)
            let killed = try ReseedBinary.start(update, prefix: [strace, "-f", "-qq", "-o", "/dev/null", "-e", "trace=rename,renameat,renameat2",
                                                                 "-e", "inject=rename,renameat,renameat2:signal=SIGKILL:when=\(ordinal)"]).wait()
            guard killed.status != 0 else { break }
            let embedded = try DatabaseQueue(path: sandbox.storeURL.path).read {
                try String.fetchOne($0, sql: "SELECT value FROM \(SeedMetadata.tableName) WHERE key = 'version'")
            }
            guard embedded == "2.0.0", try sandbox.recorded().version == "1.0.0" else { continue }
            cutShort += 1

            let status = try ReseedBinary.run(["status", "--seed", bundled.manifestURL.path, "--data-dir", sandbox.dataDirectory.path])
            #expect(status.status == 0, "\(status.stderr)")
            #expect(status.stdout.contains("keeps the downloaded 2.0.0"), "kill at rename #\(ordinal): \(status.stdout)")
            let next = try ReseedBinary.run(update)
            #expect(next.status == 0, "\(next.stderr)")
            let outcome = try jsonObject(next.stdout)
            #expect(outcome["version"] as? String == "2.0.0")
            // Nothing installed again: the store already holds what the channel offers.
            #expect(outcome["outcome"] as? String == "upToDate", "kill at rename #\(ordinal): \(next.stdout)")
            #expect(outcome["method"] is NSNull, "kill at rename #\(ordinal): \(next.stdout)")
            #expect(try sandbox.recorded().version == "2.0.0")
            #expect(try sandbox.recorded().source == .download)
            #expect(try sandbox.labels().count == 5)
        }
        #expect(cutShort > 0, "no kill fell between the swap and the record")
    }
}
