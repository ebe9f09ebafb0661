import Foundation
import Reseed
import ReseedPackaging
import ReseedTestSupport
import ReseedTesting
import Testing

/// SIGKILL a real `reseed keys`, `reseed publish` and `reseed update` at each of their file-system
/// calls (strace delivers the signal as the N-th call starts); each time the channel folder must still
/// hold a `keys.json` and `channel.json` pair a device verifies (the device's trust floors are absent
/// or whole), and the same command run again must finish.
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

    /// SIGKILL a real `reseed update` at each of its first durable-write calls, the trust floors'
    /// writes (keys.json's, then the manifest's, before the download) among them: each time the floors
    /// file beside the store is absent or whole (never half-written), and the same update run again installs the
    /// release and leaves the floors naming it, with no temp file of theirs left.
    @Test(.enabled(if: SyscallFaultTests.straceProblem == nil, Comment(rawValue: SyscallFaultTests.straceProblem ?? "")))
    func aKillWhileAnUpdateKeepsItsFloorsLeavesOldOrNew() throws {
        let strace = try #require(SyscallFaultTests.strace)
        let keyed = try KeyedChannel(try ChannelSandbox())
        let sandbox = keyed.sandbox
        let rootFile = try keyed.rootPublicKeyFile()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4), key: keyed.first)
        let device = sandbox.directory.appending("device")
        try FileManager.default.copyItem(at: sandbox.dataDirectory, to: device)
        let update = ["update", "--channel", sandbox.server.url.absoluteString, "--public-key", rootFile.path,
                      "--seed", bundled.manifestURL.path, "--data-dir", sandbox.dataDirectory.path]
        let floorsName = sandbox.trustFloorsURL.lastPathComponent

        var killed = 0
        // Killed runs that left no floors (killed before their rename) and whole floors (after it).
        var (absent, whole) = (0, 0)
        for call in ["fsync", "?rename", "?renameat", "?renameat2"] {
            for ordinal in 1...4 {
                try reset(sandbox.dataDirectory, from: device)
                let name = call.hasPrefix("?") ? String(call.dropFirst()) : call
                let run = try ReseedBinary.start(update, prefix: [strace, "-f", "-qq", "-o", "/dev/null", "-e", "trace=\(call)",
                                                                 "-e", "inject=\(name):signal=SIGKILL:when=\(ordinal)"]).wait()
                let point = "update, kill at \(name) #\(ordinal)"
                if run.status != 0 { killed += 1 }
                if run.status != 0 { FileManager.default.fileExists(atPath: sandbox.trustFloorsURL.path) ? (whole += 1) : (absent += 1) }
                if let bytes = try? Data(contentsOf: sandbox.trustFloorsURL) {
                    let object = try? JSONSerialization.jsonObject(with: bytes) as? [String: Any]
                    #expect(object?["url"] as? String == sandbox.server.url.absoluteString, "\(point): \(String(decoding: bytes, as: UTF8.self))")
                    // keys.json is kept the moment it verifies, the manifest in a second write: either may be the last.
                    #expect(object?["keysVersion"] as? Int == 1, "\(point)")
                    #expect([nil, "1.1.0"].contains(object?["manifestVersion"] as? String), "\(point)")
                }

                let again = try ReseedBinary.run(update)
                #expect(again.status == 0, "\(point): \(again.stderr)")
                #expect(try sandbox.labels().count == 4, "\(point)")
                let floors = try String(contentsOf: sandbox.trustFloorsURL, encoding: .utf8)
                #expect(floors.contains("\"manifestVersion\": \"1.1.0\"") && floors.contains("\"keysVersion\": 1"), "\(point): \(floors)")
                let leftovers = try FileManager.default.contentsOfDirectory(atPath: sandbox.dataDirectory.path).filter { $0.hasPrefix(".." + floorsName) }
                #expect(leftovers.isEmpty, "\(point): \(leftovers)")
                if run.status == 0 { break }
            }
        }
        print("update kills: \(killed) (floors absent after \(absent), whole after \(whole)); after each, the update finished")
        #expect(killed > 4, "the kills hit the update \(killed) times")
        #expect(absent > 0 && whole > 0, "kills came both before and after the floors' rename")
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
