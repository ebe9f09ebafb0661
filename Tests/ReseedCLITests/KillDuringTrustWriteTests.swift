import Foundation
import Reseed
import ReseedPackaging
import ReseedTestSupport
import ReseedTesting
import Testing

/// SIGKILL a real `reseed keys` and a real `reseed publish` at each of their file-system calls
/// (strace delivers the signal as the N-th call starts); each time the channel folder must still
/// hold a `keys.json` and `channel.json` pair a device verifies, and the same command run again
/// must finish.
@Suite(.serialized, .timeLimit(.minutes(20))) struct KillDuringTrustWriteTests {
    /// The calls a write of the folder makes: each is a point a kill can come just before (not
    /// `openat`: the first dozens are the runtime loading its libraries). strace ignores a `?name`
    /// this architecture lacks.
    static let calls = ["write", "fsync", "?rename", "?renameat", "?renameat2", "unlinkat"]
    /// The most kill points tried per call (from the first), to bound the run.
    static let capPerCall = 12

    @Test(.enabled(if: SyscallFaultTests.straceProblem == nil, Comment(rawValue: SyscallFaultTests.straceProblem ?? "")))
    func aKillWhileKeysOrChannelJSONIsWrittenLeavesAPairThatVerifies() async throws {
        let strace = try #require(SyscallFaultTests.strace)
        let sandbox = try ChannelSandbox()
        let keys = sandbox.directory.appending("keys")
        func generate(_ name: String) throws -> (key: String, pub: String) {
            let pair = (keys.appendingPathComponent("\(name).key"), keys.appendingPathComponent("\(name).pub"))
            _ = try ChannelPrivateKey.generate(privateKeyFile: pair.0, publicKeyFile: pair.1)
            return (pair.0.path, pair.1.path)
        }
        let root = try generate("root")
        let first = try generate("first")
        let second = try generate("second")
        let rootKey = try ChannelPublicKey(contentsOf: URL(fileURLWithPath: root.pub))

        // The channel before: keys.json listing the first key, 1.1.0 signed by it. The device: 1.0.0.
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        let device = sandbox.directory.appending("device")
        try FileManager.default.copyItem(at: sandbox.dataDirectory, to: device)
        let setUp = try ReseedBinary.run(["keys", "--channel", sandbox.channel.path, "--root-key", root.key, "--add", first.pub])
        try #require(setUp.status == 0, "\(setUp.stderr)")
        let offered = try sandbox.seed("1.1.0", rows: 4)
        let newer = try sandbox.seed("1.2.0", rows: 5)
        let published = try ReseedBinary.run(["publish", offered.manifestURL.path, "--channel", sandbox.channel.path, "--private-key", first.key])
        try #require(published.status == 0, "\(published.stderr)")
        let template = sandbox.directory.appending("channel-before")
        try FileManager.default.copyItem(at: sandbox.channel, to: template)

        let commands: [(name: String, arguments: [String], versions: Set<String>)] = [
            ("keys --add", ["keys", "--channel", sandbox.channel.path, "--root-key", root.key, "--add", second.pub], ["1.1.0"]),
            ("publish", ["publish", newer.manifestURL.path, "--channel", sandbox.channel.path, "--private-key", first.key], ["1.1.0", "1.2.0"]),
        ]
        var killed = 0
        var points: [String: Int] = [:]
        for command in commands {
            for call in Self.calls {
                for ordinal in 1...Self.capPerCall {
                    try reset(sandbox.channel, from: template)
                    let name = call.hasPrefix("?") ? String(call.dropFirst()) : call
                    let run = try ReseedBinary.start(command.arguments, prefix: [strace, "-f", "-qq", "-o", "/dev/null", "-e", "trace=\(call)",
                                                                                "-e", "inject=\(name):signal=SIGKILL:when=\(ordinal)"]).wait()
                    let point = "\(command.name), kill at \(name) #\(ordinal)"
                    if run.status != 0 {
                        killed += 1
                        points[command.name, default: 0] += 1
                    }

                    // The device verifies what the folder holds, whatever the kill left.
                    try reset(sandbox.dataDirectory, from: device)
                    var configuration = ChannelUpdater.Configuration()
                    configuration.timeout = .seconds(120)
                    let updater = ChannelUpdater(channel: sandbox.server.url, publicKeys: [rootKey], launcher: sandbox.launcher(bundled),
                                                 configuration: configuration)
                    do {
                        let outcome = try await updater.update()
                        #expect(command.versions.contains(outcome.version), "\(point): \(outcome.version)")
                    } catch {
                        Issue.record("\(point): the update failed: \(error)")
                    }

                    // The same command again finishes, and leaves no temporary file.
                    let again = try ReseedBinary.run(command.arguments)
                    #expect(again.status == 0, "\(point): \(again.stderr)")
                    let hidden = try FileManager.default.contentsOfDirectory(atPath: sandbox.channel.path).filter { $0.hasPrefix(".") && $0 != ".channel.reseed-lock" }
                    #expect(hidden.isEmpty, "\(point): \(hidden)")
                    if run.status == 0 { break }
                }
            }
        }
        print("trust write kills: \(killed), by command: \(points.sorted { $0.key < $1.key }); after each, an update verified the folder")
        #expect(killed > 10, "the kills hit the commands \(killed) times")
    }

    /// Empties `folder` (kept: the server serves it) and copies `template`'s files into it.
    private func reset(_ folder: URL, from template: URL) throws {
        let manager = FileManager.default
        if !manager.fileExists(atPath: folder.path) { try manager.createDirectory(at: folder, withIntermediateDirectories: true) }
        for name in try manager.contentsOfDirectory(atPath: folder.path) { try manager.removeItem(at: folder.appendingPathComponent(name)) }
        for name in try manager.contentsOfDirectory(atPath: template.path) {
            try manager.copyItem(at: template.appendingPathComponent(name), to: folder.appendingPathComponent(name))
        }
    }
}
