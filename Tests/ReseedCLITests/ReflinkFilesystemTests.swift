#if canImport(Glibc)
import Glibc
#endif
import Foundation
import GRDB
import Reseed
import ReseedPackaging
import ReseedTesting
import ReseedTestSupport
import Testing

/// A 2 GiB XFS with reflinks in a sparse image, loop-mounted on a fresh folder for one test, unmounted
/// (and its image removed) when released.
final class ReflinkFilesystem {
    let mountPoint: URL
    private let directory: TemporaryDirectory
    private var mounted = false

    /// Why an XFS cannot be loop-mounted here (not root, no `mkfs.xfs`, no loop device in this
    /// container), or nil.
    static let problem: String? = {
        guard geteuid() == 0 else { return "mounting an XFS image needs root" }
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/mkfs.xfs") else {
            return "mkfs.xfs is not installed (apt-get install xfsprogs)"
        }
        do {
            _ = try ReflinkFilesystem()
            return nil
        } catch {
            return "cannot loop-mount an XFS image here: \(error)"
        }
    }()

    init() throws {
        directory = try TemporaryDirectory(prefix: "reseed-xfs")
        mountPoint = directory.appending("mnt")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        let image = directory.appending("xfs.img").path
        for (tool, arguments) in [("/usr/bin/truncate", ["-s", "2G", image]), ("/usr/sbin/mkfs.xfs", ["-q", "-m", "reflink=1", image]),
                                  ("/bin/mount", ["-o", "loop", image, mountPoint.path])] {
            let result = try SmallFilesystem.run(tool, arguments)
            guard result.status == 0 else {
                throw CocoaError(.fileWriteNoPermission, userInfo: [NSLocalizedDescriptionKey: "\(tool) exits \(result.status): \(result.output)"])
            }
        }
        mounted = true
    }

    deinit { if mounted { _ = try? SmallFilesystem.run("/bin/umount", [mountPoint.path]) } }
}

/// A delta update whose data directory is on a filesystem that clones (XFS with reflinks): the
/// installed seed is cloned, not copied, and is never written, whatever happens to the update.
@Suite(.serialized, .enabled(if: ReflinkFilesystem.problem == nil, Comment(rawValue: ReflinkFilesystem.problem ?? "")), .timeLimit(.minutes(20)))
struct ReflinkFilesystemTests {
    /// 60,000 rows (about 12 MB); the next release changes 6 of them, so the delta writes a few pages.
    static func release(_ sandbox: ChannelSandbox, _ version: String, generation: Int) throws -> Seed {
        try SeedFixture(name: "items", version: version, sql: [
            "CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT NOT NULL, body TEXT NOT NULL)",
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 60000)
            INSERT INTO item (id, label, body) SELECT i, 'item ' || i, printf('%.*c', 120, 'x') || hex(i * 2654435761 % 4294967291) FROM n
            """,
            "UPDATE item SET label = label || ' v\(generation)' WHERE \(generation) > 0 AND id % 10000 = 3",
        ]).build(in: sandbox.directory.appending("release-\(version)"))
    }

    /// A device on the XFS with 1.0.0 installed by `reseed launch`, and a channel offering 1.1.0 with
    /// its delta (the full seed compressed or not).
    struct Device {
        let disk: ReflinkFilesystem
        let sandbox: ChannelSandbox
        let old: Seed
        let data: URL
        let update: [String]
        var store: URL { data.appendingPathComponent("items.sqlite") }

        init(compressed: Bool = true) throws {
            disk = try ReflinkFilesystem()
            sandbox = try ChannelSandbox()
            old = try ReflinkFilesystemTests.release(sandbox, "1.0.0", generation: 0)
            let new = try ReflinkFilesystemTests.release(sandbox, "1.1.0", generation: 1)
            try sandbox.publish(old, compressed: compressed)
            let published = try sandbox.publish(new, compressed: compressed)
            #expect(published.manifest.deltas.count == 1, "\(published.skippedDeltas)")
            data = disk.mountPoint.appendingPathComponent("data")
            let launched = try ReseedBinary.run(["launch", "--seed", old.manifestURL.path, "--data-dir", data.path])
            #expect(launched.status == 0, "\(launched.stderr)")
            let publicKey = sandbox.directory.appending("channel.pub")
            try Data((sandbox.key.publicKey.base64 + "\n").utf8).write(to: publicKey)
            update = ["update", "--channel", sandbox.server.url.absoluteString, "--public-key", publicKey.path,
                      "--seed", old.manifestURL.path, "--data-dir", data.path, "--json", "--verbose"]
        }

        /// The labels that changed in 1.1.0, as the store answers.
        func changedLabels() throws -> [String] {
            var readOnly = Configuration()
            readOnly.readonly = true
            let queue = try DatabaseQueue(path: store.path, configuration: readOnly)
            defer { try? queue.close() }
            return try queue.read { try String.fetchAll($0, sql: "SELECT label FROM item WHERE id % 10000 = 3 ORDER BY id") }
        }

        func temporaryFiles() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: data.path).filter { $0.contains(".reseed-") && !$0.hasSuffix("-lock") && !$0.hasSuffix(".reseed-trust.json") }
        }
    }

    @Test func aDeltaUpdateClonesTheInstalledSeedAndWritesAFractionOfIt() throws {
        let device = try Device()
        let seedSize = try #require(try FileManager.default.attributesOfItem(atPath: device.store.path)[.size] as? Int)
        let counts = device.sandbox.directory.appending("time.out")
        // GNU time's %O: the blocks of 512 bytes the process wrote to the filesystem (ru_oublock).
        let running = try ReseedBinary.start(device.update, prefix: ["/usr/bin/time", "-f", "%O", "-o", counts.path])
        let result = running.wait()
        #expect(result.status == 0, "\(result.stderr)")
        #expect((try? jsonObject(result.stdout))?["method"] as? String == "delta", "\(result.stdout)")
        #expect(result.stderr.contains("copied the installed seed") && result.stderr.contains("method=clone"), "\(result.stderr)")
        let blocks = try #require(Int(String(decoding: try Data(contentsOf: counts), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(blocks * 512 < seedSize / 10, "the update wrote \(blocks * 512) bytes for a \(seedSize)-byte seed")
        #expect(try device.changedLabels() == (0..<6).map { "item \($0 * 10000 + 3) v1" })
        #expect(try device.temporaryFiles().isEmpty)
        print("reflink delta update: \(blocks * 512) bytes written for a \(seedSize)-byte seed")
    }

    @Test func aKilledDeltaUpdateOnAReflinkFilesystemLeavesTheInstalledSeedWhole() throws {
        let disk = try ReflinkFilesystem()
        try KillDuringDeltaTests.killDeltaUpdates(fullText: false, kills: 12, deviceFolder: disk.mountPoint)
    }

    /// strace makes the clone (`ioctl FICLONE`) fail: the copy falls back to `copy_file_range`. When
    /// that fails too, the delta is given up; so is the full seed's install, which copies the same way
    /// (published uncompressed): one sentence, and the installed seed's bytes as they were.
    @Test(.enabled(if: SyscallFaultTests.straceProblem == nil, Comment(rawValue: SyscallFaultTests.straceProblem ?? "")))
    func aFailedCloneFallsBackToCopyFileRangeAndAFailedCopyLeavesTheInstalledSeedUntouched() throws {
        let strace = try #require(SyscallFaultTests.strace)
        let device = try Device(compressed: false)
        let installed = try fileSHA256(device.store)
        let template = device.sandbox.directory.appending("template")
        try FileManager.default.copyItem(at: device.data, to: template)
        let trace = device.sandbox.directory.appending("run.trace")
        let traced = ["-f", "-qq", "-o", trace.path, "-e", "trace=ioctl,copy_file_range"]

        let noClone = try ReseedBinary.start(device.update, prefix: [strace] + traced + ["-e", "inject=ioctl:error=EIO"],
                                             environment: ["SWIFT_BACKTRACE": "enable=no"]).wait()
        #expect(noClone.status == 0, "\(noClone.stderr)")
        #expect((try? jsonObject(noClone.stdout))?["method"] as? String == "delta", "\(noClone.stdout)")
        #expect(noClone.stderr.contains("method=copyFileRange"), "\(noClone.stderr)")
        let calls = try String(contentsOf: trace, encoding: .utf8)
        #expect(calls.contains("FICLONE") && calls.contains("(INJECTED)"), "\(calls.prefix(2000))")
        #expect(try device.changedLabels() == (0..<6).map { "item \($0 * 10000 + 3) v1" })

        try FileManager.default.removeItem(at: device.data)
        try FileManager.default.copyItem(at: template, to: device.data)
        let noCopy = try ReseedBinary.start(device.update, prefix: [strace] + traced + ["-e", "inject=ioctl,copy_file_range:error=EIO"],
                                            environment: ["SWIFT_BACKTRACE": "enable=no"]).wait()
        #expect(noCopy.status != 0)
        let errors = noCopy.stderrLines.filter { $0.hasPrefix("reseed: ") }
        #expect(errors.count == 1 && noCopy.stderrLines.last?.hasPrefix("reseed: ") == true, "\(noCopy.stderr)")
        #expect(try fileSHA256(device.store) == installed, "the installed seed's bytes changed")
        #expect(try device.temporaryFiles().isEmpty)

        let again = try ReseedBinary.run(device.update)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try device.changedLabels() == (0..<6).map { "item \($0 * 10000 + 3) v1" })
    }
}
