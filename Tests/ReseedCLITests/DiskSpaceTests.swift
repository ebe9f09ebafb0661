#if canImport(Glibc)
import Glibc
#endif
import Foundation
import GRDB
@testable import Reseed
import ReseedSystem
import ReseedTesting
import ReseedTestSupport
import Testing

/// A disk too short for an install or an update: found before anything is copied or downloaded,
/// failing as `insufficientSpace` with one sentence, and leaving the store, the preferences and the
/// data directory as they were. The seam's ``ShortDisk`` fakes the short disk in process; the
/// `reseed` binary meets a real one, a small tmpfs, when the tests may mount one.
@Suite(.timeLimit(.minutes(10))) struct DiskSpaceTests {
    /// The launcher of the app shipping `seed` in `sandbox`, measuring `available` bytes free.
    func launcher(_ seed: Seed, in sandbox: ChannelSandbox, available: Int64, disk: ShortDisk? = nil) -> (Launcher, ShortDisk) {
        let disk = disk ?? ShortDisk(availableBytes: available)
        var launcher = sandbox.launcher(seed)
        launcher.fileSystem = FileSystem(observer: disk)
        return (launcher, disk)
    }

    /// The sentence of a shortfall of `needed` bytes with `available` free, for `purpose`, in `sandbox`'s data directory.
    func sentence(_ purpose: String, needed: Int64, available: Int64, in sandbox: ChannelSandbox) -> String {
        let (need, free) = DiskSpace.sizes(needed, available)
        return "\(sandbox.dataDirectory.path): not enough free space to \(purpose): it needs \(need), \(free) are free; free some space on that device, then try again"
    }

    /// What any update makes before it decides anything, as the data directory held `before`: its
    /// lock file, and the `-shm` (and an empty `-wal` where the store had none) of SQLite's read-only
    /// look at the store's embedded version; and the trust floors, kept the moment the channel's files
    /// verify, before any download.
    func madeByEveryUpdate(_ name: String, before: [String: Data]) -> Bool {
        name.hasSuffix("update-lock") || name == "items.sqlite-shm" || (name == "items.sqlite-wal" && before[name] == nil)
            || name.hasSuffix(".reseed-trust.json")
    }

    /// The data directory's files, each with its bytes: what a refused install must leave alone.
    func snapshot(_ sandbox: ChannelSandbox) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: sandbox.dataDirectory.path) {
            files[name] = try Data(contentsOf: sandbox.dataDirectory.appendingPathComponent(name))
        }
        return files
    }

    @Test func aLaunchInstallIsRefusedBeforeTheCopyWhenTheDiskIsShort() throws {
        let sandbox = try ChannelSandbox()
        try sandbox.launch(try sandbox.seed("1.0.0"))
        let before = try snapshot(sandbox)
        let offered = try sandbox.seed("2.0.0", paddingBytes: 2 << 20)
        let needed = offered.manifest.size + DiskSpace.margin
        let (launcher, disk) = launcher(offered, in: sandbox, available: needed - 1)

        let error = try #require(throws: ReseedError.self) { try launcher.prepare() }
        #expect(error.code == .insufficientSpace)
        #expect(error.step == .checkSpace)
        #expect(error.description == sentence("install items 2.0.0", needed: needed, available: needed - 1, in: sandbox))
        #expect(disk.measurements == [sandbox.dataDirectory.path])
        #expect(try snapshot(sandbox) == before, "the store and the preferences are as they were, and no temp file is left")
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])

        // One byte more and the same launch installs.
        let (enough, _) = self.launcher(offered, in: sandbox, available: needed)
        #expect(try enough.prepare().action == .installed)
        #expect(try sandbox.recorded().version == "2.0.0")
    }

    @Test func onlyALaunchThatInstallsMeasuresTheFreeSpace() throws {
        let sandbox = try ChannelSandbox()
        let seed = try sandbox.seed("1.0.0")
        let (launcher, disk) = launcher(seed, in: sandbox, available: 1 << 30)
        #expect(try launcher.prepare().action == .installed)
        #expect(disk.measurements == [sandbox.dataDirectory.path])
        #expect(try launcher.prepare().action == .upToDate)
        #expect(disk.measurements == [sandbox.dataDirectory.path], "the up-to-date launch made no fstatvfs")
    }

    @Test func aFullUpdateIsRefusedBeforeAnyByteIsDownloaded() async throws {
        let sandbox = try ChannelSandbox()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        let offered = try sandbox.seed("1.1.0", paddingBytes: 2 << 20)
        try sandbox.publish(offered)
        let before = try snapshot(sandbox).filter { $0.key != "items.sqlite-shm" }
        let needed = offered.manifest.size + DiskSpace.install(seedSize: offered.manifest.size)
        var updater = sandbox.updater(bundled)
        updater = ChannelUpdater(channel: updater.channelURL, publicKeys: updater.publicKeys,
                                 launcher: launcher(bundled, in: sandbox, available: needed - 1).0, configuration: updater.configuration)

        let error = try await #require(throws: ReseedError.self) { try await updater.update() }
        #expect(error.code == .insufficientSpace)
        #expect(error.description == sentence("download and install items 1.1.0", needed: needed, available: needed - 1, in: sandbox))
        #expect(try sandbox.server.requests().map(\.path) == ["/channel.json", "/channel.json.sig", "/keys.json"], "no GET of the seed")
        #expect(try sandbox.downloadFiles().isEmpty)
        let after = try snapshot(sandbox).filter { !madeByEveryUpdate($0.key, before: before) }
        #expect(after == before, "\(after.filter { before[$0.key] != $0.value }.keys.sorted())")
        #expect(try sandbox.recorded().version == "1.0.0")
    }

    @Test func aFullUpdateCountsOnlyWhatAPartialDownloadLacks() async throws {
        let sandbox = try ChannelSandbox()
        let (bundled, offered, error) = try await sandbox.cutDownload(after: 1 << 20, paddingBytes: 2 << 20)
        #expect(error?.code == .download)
        try sandbox.server.set([:])
        let needed = offered.manifest.size - (1 << 20) + DiskSpace.install(seedSize: offered.manifest.size)
        for (available, works) in [(needed - 1, false), (needed, true)] {
            let updater = ChannelUpdater(channel: sandbox.server.url, publicKey: sandbox.key.publicKey,
                                         launcher: launcher(bundled, in: sandbox, available: available).0)
            do {
                let outcome = try await updater.update()
                #expect(works && outcome.resumedFrom == 1 << 20, "updated with \(available) bytes free of \(needed) needed")
            } catch {
                #expect(!works && error.code == .insufficientSpace, "\(error)")
            }
        }
        #expect(try sandbox.recorded().version == "1.1.0")
    }

    @Test func aDeltaUpdateShortOfSpaceFailsWithoutFallingBackToTheFullSeed() async throws {
        let sandbox = try ChannelSandbox()
        let bundled = try sandbox.release("1.0.0", generation: 0)
        try sandbox.launch(bundled)
        try sandbox.publish(bundled, compressed: true)
        let offered = try sandbox.release("1.1.0", generation: 1)
        let delta = try #require(try sandbox.publish(offered, compressed: true).manifest.deltas.first)
        let before = try snapshot(sandbox).filter { $0.key != "items.sqlite-shm" }
        // The copy the delta is applied to is the installed store's (its file and its -wal), not the new seed's size.
        let installedSize = try ["", "-wal"].reduce(Int64(0)) { total, suffix in
            try total + ((FileManager.default.attributesOfItem(atPath: sandbox.storeURL.path + suffix)[.size] as? Int64) ?? 0)
        }
        #expect(installedSize != offered.manifest.size)
        let downloaded = delta.file.smallest.size
        let needed = 2 * downloaded + DiskSpace.deltaInstall(installedSize: installedSize, deltaSize: downloaded)
        let updater = ChannelUpdater(channel: sandbox.server.url, publicKey: sandbox.key.publicKey,
                                     launcher: launcher(bundled, in: sandbox, available: needed - 1).0)

        let error = try await #require(throws: ReseedError.self) { try await updater.update() }
        #expect(error.code == .insufficientSpace)
        #expect(error.description == sentence("download and install items 1.1.0 from a delta", needed: needed, available: needed - 1, in: sandbox))
        #expect(try sandbox.server.requests().map(\.path) == ["/channel.json", "/channel.json.sig", "/keys.json"], "neither the delta nor the seed is fetched")
        #expect(try sandbox.downloadFiles().isEmpty)
        let after = try snapshot(sandbox).filter { !madeByEveryUpdate($0.key, before: before) }
        #expect(after == before, "\(after.filter { before[$0.key] != $0.value }.keys.sorted())")
        #expect(try sandbox.storeContentHash() == bundled.manifest.contentHash)
    }

    @Test func aLiveReplaceIsRefusedBeforeStaging() async throws {
        let sandbox = try ChannelSandbox()
        let bundled = try sandbox.seed("1.0.0")
        let offered = try sandbox.seed("2.0.0", paddingBytes: 1 << 20)
        let needed = offered.manifest.size + DiskSpace.margin
        let store = try await LiveStore(launcher: launcher(bundled, in: sandbox, available: needed - 1).0)
        let before = try snapshot(sandbox)

        let error = try await #require(throws: ReseedError.self) { try await store.replace(with: offered) }
        #expect(error.code == .insufficientSpace)
        #expect(error.description == sentence("install items 2.0.0", needed: needed, available: needed - 1, in: sandbox))
        #expect(try await store.read { try String.fetchAll($0, sql: "SELECT label FROM item ORDER BY id") } == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
        #expect(try snapshot(sandbox).keys == before.keys, "no temp file")
        #expect(try sandbox.recorded().version == "1.0.0")
    }

    @Test(arguments: [
        (0, "0 bytes"), (1, "1 byte"), (999, "999 bytes"), (1000, "1.0 kB"), (1949, "1.9 kB"), (1950, "2.0 kB"),
        (41_900_000, "41.9 MB"), (999_949_999, "999.9 MB"), (999_950_000, "1.0 GB"), (12_345_678_901_234, "12.3 TB"),
    ] as [(Int64, String)])
    func sizesReadInDecimalUnitsWithOneDecimal(bytes: Int64, text: String) {
        #expect(DiskSpace.format(bytes) == text)
    }

    @Test func sizesThatWouldReadTheSameAreGivenInBytes() {
        #expect(DiskSpace.sizes(41_912_000, 12_300_000) == ("41.9 MB", "12.3 MB"))
        #expect(DiskSpace.sizes(41_912_000, 41_911_999) == ("41912000 bytes", "41911999 bytes"))
    }

    @Test func theFiguresCountTheDownloadTheCopyAndTheJournal() {
        #expect(DiskSpace.install(seedSize: 10) == 10 + DiskSpace.margin)
        #expect(DiskSpace.fullUpdate(downloadSize: 4, alreadyDownloaded: 0, seedSize: 10) == 14 + DiskSpace.margin)
        #expect(DiskSpace.fullUpdate(downloadSize: 4, alreadyDownloaded: 3, seedSize: 10) == 11 + DiskSpace.margin)
        #expect(DiskSpace.fullUpdate(downloadSize: 4, alreadyDownloaded: 9, seedSize: 10) == 10 + DiskSpace.margin)
        #expect(DiskSpace.deltaInstall(installedSize: 10, deltaSize: 2) == 12 + DiskSpace.margin)
        #expect(DiskSpace.deltaUpdate(deltaSize: 2, alreadyDownloaded: 0, installedSize: 10) == 16 + DiskSpace.margin)
        #expect(DiskSpace.deltaUpdate(deltaSize: 2, alreadyDownloaded: 2, installedSize: 10) == 14 + DiskSpace.margin)
    }
}
