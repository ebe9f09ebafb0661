#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Reseed
import ReseedPackaging
import ReseedTesting
import ReseedTestSupport
import Testing

/// A tmpfs of `size` mounted on a fresh folder for one test, unmounted when released.
final class SmallFilesystem {
    let mountPoint: URL
    private let directory: TemporaryDirectory

    /// Why a tmpfs cannot be mounted here (not root, no permission in this container), or nil.
    static let problem: String? = {
        guard geteuid() == 0 else { return "mounting a tmpfs needs root" }
        do {
            _ = try SmallFilesystem(size: "1m")
            return nil
        } catch {
            return "cannot mount a tmpfs here: \(error)"
        }
    }()

    init(size: String) throws {
        directory = try TemporaryDirectory(prefix: "reseed-tmpfs")
        mountPoint = directory.appending("mnt")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        let mount = try Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", mountPoint.path])
        guard mount.status == 0 else {
            throw CocoaError(.fileWriteNoPermission, userInfo: [NSLocalizedDescriptionKey: "mount exits \(mount.status): \(mount.output)"])
        }
    }

    deinit { _ = try? Self.run("/bin/umount", [mountPoint.path]) }

    /// Runs `tool` with `arguments`; its exit status and its stdout and stderr together.
    static func run(_ tool: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, output.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

/// The built `reseed` on a real filesystem too small for the seed: a 20 MB tmpfs as the data directory.
@Suite(.serialized, .enabled(if: SmallFilesystem.problem == nil, Comment(rawValue: SmallFilesystem.problem ?? "")), .timeLimit(.minutes(10)))
struct SmallFilesystemTests {
    /// `insufficientSpace`'s sentence for `purpose` in `data`, its two sizes as any ("…: it needs 26.3 MB, 20.9 MB are free; …").
    func expectShortfall(_ result: ReseedBinary.Result, purpose: String, data: URL, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status != 0, sourceLocation: sourceLocation)
        #expect(result.stderrLines.count == 1, "\(result.stderr)", sourceLocation: sourceLocation)
        let pattern = #"^reseed: \#(NSRegularExpression.escapedPattern(for: data.path)): not enough free space to \#(purpose): it needs [0-9.]+ [kMG]?B, [0-9.]+ [kMG]?B are free; free some space on that device, then try again$"#
        #expect(result.stderr.trimmingCharacters(in: .newlines).range(of: pattern, options: .regularExpression) != nil,
                "\(result.stderr)", sourceLocation: sourceLocation)
    }

    /// Names in `data`, but the lock files (created before anything is decided, and never removed) and
    /// the trust floors (kept the moment the channel's files verify, before any download).
    func files(in data: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: data.path).filter { !$0.hasSuffix("-lock") && !$0.hasSuffix(".reseed-trust.json") }.sorted()
    }

    @Test func aLaunchOfASeedBiggerThanTheFilesystemFailsAndLeavesNothing() throws {
        let disk = try SmallFilesystem(size: "20m")
        let sandbox = try ChannelSandbox()
        let seed = try sandbox.seed("2.0.0", paddingBytes: 24 << 20)
        let data = disk.mountPoint.appendingPathComponent("data")

        let launch = try ReseedBinary.run(["launch", "--seed", seed.manifestURL.path, "--data-dir", data.path])
        expectShortfall(launch, purpose: "install items 2.0.0", data: data)
        #expect(try files(in: data).isEmpty, "no store, no preferences, no temp file")
    }

    @Test func anUpdateOfASeedBiggerThanTheFilesystemDownloadsNothing() throws {
        let disk = try SmallFilesystem(size: "20m")
        let sandbox = try ChannelSandbox()
        let data = disk.mountPoint.appendingPathComponent("data")
        let bundled = try sandbox.seed("1.0.0")
        #expect(try ReseedBinary.run(["launch", "--seed", bundled.manifestURL.path, "--data-dir", data.path]).status == 0)
        let before = try files(in: data)
        let preferences = try Data(contentsOf: data.appendingPathComponent("preferences.json"))
        // Random bytes: the compressed seed is as big as the database, bigger than the tmpfs.
        try sandbox.publish(try sandbox.seed("1.1.0", paddingBytes: 24 << 20), compressed: true)
        let publicKey = sandbox.directory.appending("channel.pub")
        try Data((sandbox.key.publicKey.base64 + "\n").utf8).write(to: publicKey)

        let update = try ReseedBinary.run(["update", "--channel", sandbox.server.url.absoluteString, "--public-key", publicKey.path,
                                           "--seed", bundled.manifestURL.path, "--data-dir", data.path])
        expectShortfall(update, purpose: "download and install items 1.1.0", data: data)
        #expect(try sandbox.server.requests().map(\.path) == ["/channel.json", "/channel.json.sig", "/keys.json"], "no GET of the seed")
        #expect(try files(in: data) == before, "no download file, no temp file")
        #expect(try Data(contentsOf: data.appendingPathComponent("preferences.json")) == preferences)
    }
}
