import Foundation
import GRDB
import Reseed
import ReseedPackaging
import ReseedSystem
import ReseedTesting
import ReseedTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Seeds with flipped bytes or cut short, given to the launcher over an installed 1.0.0.
///
/// Under `.checksum` a damaged seed is never installed. Under `.size` (O(1) checks) one may be
/// installed, but only if SQLite can open it; a launch that fails leaves the old store and its
/// recorded version as they were, and adds or removes no file in the data directory.
@Suite struct SeedDamageFuzzTests {
    static let casesPerLevel = 200
    static let oldLabels = ["1.0.0-1", "1.0.0-2", "1.0.0-3"]

    @Test(.timeLimit(.minutes(10)), arguments: [Verification.size, .checksum])
    func damagedSeedIsNeverInstalledUnverifiedAndNeverCostsTheOldStore(level: Verification) throws {
        let sandbox = try LaunchSandbox()
        try sandbox.install(try sandbox.seed("1.0.0"))
        // Read once before the template is taken: the read's close checkpoints the -wal the install
        // left beside the store, so the template and every case start as the read leaves them.
        #expect(try sandbox.labels() == Self.oldLabels)
        let template = sandbox.directory.appending("template")
        try FileManager.default.copyItem(at: sandbox.dataDirectory, to: template)
        let good = try sandbox.seed("2.0.0", rows: 2_000)
        let pristine = try [UInt8](Data(contentsOf: good.fileURL))
        let folder = sandbox.directory.appending("damaged")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let manifestURL = folder.appendingPathComponent(good.manifest.manifestFileName)
        try good.manifest.encoded().write(to: manifestURL)
        let seedPath = folder.appendingPathComponent(good.manifest.file).path
        try Data(pristine).write(to: URL(fileURLWithPath: seedPath))
        var onDisk = pristine
        let seed = try Seed(at: manifestURL)
        #expect(try sandbox.labels() == Self.oldLabels)
        #expect(try sandbox.recordedVersion() == "1.0.0")
        let templateFiles = try sandbox.files()
        let oldStore = try Data(contentsOf: template.appendingPathComponent(sandbox.storeURL.lastPathComponent))
        let oldPreferences = try Data(contentsOf: template.appendingPathComponent(sandbox.preferencesURL.lastPathComponent))

        var rng = SplitMix64(seed: level == .size ? 0x5EED_00A4 : 0x5EED_00A5)
        var failures = FuzzFailures()
        var tally: [String: Int] = [:]
        let clock = ContinuousClock()
        let start = clock.now
        var needsRestore = false
        for index in 0..<Self.casesPerLevel {
            // Each case starts over an installed 1.0.0: after a failed launch, the one it left
            // (found intact below), else a copy of the template.
            if needsRestore {
                try FileManager.default.removeItem(at: sandbox.dataDirectory)
                try FileManager.default.copyItem(at: template, to: sandbox.dataDirectory)
            }
            let (bytes, damage) = Self.damaged(pristine, pageSize: good.manifest.pageSize, &rng)
            try Self.rewrite(seedPath, from: onDisk, to: bytes, pageSize: good.manifest.pageSize)
            onDisk = bytes
            let label = "case \(index) (\(damage))"

            let launched: (database: DatabasePool, outcome: LaunchOutcome)
            do throws(ReseedError) {
                launched = try sandbox.launcher(seed) { $0.verification = level }.launch()
            } catch {
                tally["\(damage.kind) → \(error.code)", default: 0] += 1
                if level == .checksum {
                    failures.check(error.code == .verificationFailed, "\(label): \(error.code), expected verificationFailed: \(error)")
                }
                // The old store byte for byte (so its rows, checked above), its recorded version,
                // and no file added or removed. Comparing bytes also spares opening the store with
                // SQLite per case, which creates and removes its -wal and -shm files.
                let recorded = try sandbox.recordedVersion()
                let store = try? Data(contentsOf: sandbox.storeURL)
                let preferences = try? Data(contentsOf: sandbox.preferencesURL)
                let files = try sandbox.files()
                failures.check(recorded == "1.0.0", "\(label): the launch failed (\(error)) but the recorded version is \(recorded ?? "nil")")
                failures.check(store == oldStore, "\(label): the launch failed (\(error)) but the old store changed: "
                               + "\(store.map { "\($0.count) bytes, was \(oldStore.count)" } ?? "unreadable")")
                failures.check(preferences == oldPreferences, "\(label): the launch failed but preferences.json changed")
                failures.check(files == templateFiles, "\(label): the launch failed but changed the data directory: \(files), before \(templateFiles)")
                needsRestore = recorded != "1.0.0" || store != oldStore || preferences != oldPreferences || files != templateFiles
                continue
            }
            needsRestore = true
            let check: String
            do {
                check = try launched.database.read { try String.fetchAll($0, sql: "PRAGMA quick_check").joined(separator: "; ") }
            } catch {
                check = "\(error)"
            }
            try launched.database.close()
            tally["\(damage.kind) → installed, quick_check \(check == "ok" ? "ok" : "not ok")", default: 0] += 1
            failures.check(level == .size, "\(label): checksum verification installed a damaged seed")
            failures.check(launched.outcome.action == .installed && launched.outcome.version == "2.0.0", "\(label): outcome \(launched.outcome)")
            let recorded = try sandbox.recordedVersion()
            failures.check(recorded == "2.0.0", "\(label): installed but recorded \(recorded ?? "nil")")
        }
        let seconds = Double((clock.now - start).components.attoseconds) / 1e18 + Double((clock.now - start).components.seconds)
        print("seed damage fuzz (\(level)): \(Self.casesPerLevel) launches in \(String(format: "%.1f", seconds)) s: "
              + tally.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        #expect(failures.count == 0, "\(failures.summary)")
    }

    /// Header fields SQLite reads only when it allocates a page: the free-list page count (offset 36)
    /// and the auto-vacuum largest root page (offset 52). A read-only open of such a seed works; the
    /// first write, which opening the store for use makes, fails. Found by the fuzz test above.
    @Test(arguments: [(offset: 36, value: UInt32(1)), (offset: 52, value: UInt32(4))])
    func seedDamagedWhereOnlyAWriteLooksIsRejectedBeforeItReplacesTheStore(offset: Int, value: UInt32) throws {
        let sandbox = try LaunchSandbox()
        try sandbox.install(try sandbox.seed("1.0.0"))
        let good = try sandbox.seed("2.0.0", rows: 2_000)
        var bytes = try [UInt8](Data(contentsOf: good.fileURL))
        bytes.replaceSubrange(offset..<offset + 4, with: withUnsafeBytes(of: value.bigEndian) { Array($0) })
        let folder = sandbox.directory.appending("damaged")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(bytes).write(to: folder.appendingPathComponent(good.manifest.file))
        let manifestURL = folder.appendingPathComponent(good.manifest.manifestFileName)
        try good.manifest.encoded().write(to: manifestURL)

        let error = try #require(throws: ReseedError.self) {
            try sandbox.launcher(try Seed(at: manifestURL)) { $0.verification = .size }.launch()
        }
        #expect(error.code == .verificationFailed)
        #expect(error.step == .verify)
        #expect(try sandbox.recordedVersion() == "1.0.0")
        #expect(try sandbox.labels() == Self.oldLabels)
        #expect(try sandbox.temporaryFiles().isEmpty)
    }

    struct DamageKind: CustomStringConvertible {
        var kind: String
        var detail: String
        var description: String { "\(kind) \(detail)" }
    }

    /// Makes the file at `path`, which holds `old`, hold `new`: writes the pages that differ in place and
    /// sets the length. Creating a file per case (or truncating and rewriting it) cost more than some
    /// launches on a busy ext4 disk; a damaged seed differs from the last one in a few pages.
    static func rewrite(_ path: String, from old: [UInt8], to new: [UInt8], pageSize: Int) throws {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SeedFileError(path: path, call: "open", code: errno) }
        var failure: SeedFileError?
        new.withUnsafeBytes { newBytes in
            old.withUnsafeBytes { oldBytes in
                var offset = 0
                while offset < new.count, failure == nil {
                    let count = min(pageSize, new.count - offset)
                    if offset + count > old.count || memcmp(newBytes.baseAddress! + offset, oldBytes.baseAddress! + offset, count) != 0 {
                        var written = 0
                        while written < count {
                            let result = pwrite(fd, newBytes.baseAddress! + offset + written, count - written, off_t(offset + written))
                            if result < 0, errno == EINTR { continue }
                            guard result > 0 else {
                                failure = SeedFileError(path: path, call: "pwrite", code: result < 0 ? errno : EIO)
                                break
                            }
                            written += result
                        }
                    }
                    offset += count
                }
            }
        }
        if failure == nil, new.count != old.count, ftruncate(fd, off_t(new.count)) != 0 {
            failure = SeedFileError(path: path, call: "ftruncate", code: errno)
        }
        if close(fd) != 0, failure == nil { failure = SeedFileError(path: path, call: "close", code: errno) }
        if let failure { throw failure }
    }

    struct SeedFileError: Error, CustomStringConvertible {
        var path: String
        var call: String
        var code: Int32
        var description: String { "\(call) \(path): \(String(cString: strerror(code)))" }
    }

    /// `pristine` with 1-3 bits flipped, or cut short. Half the flips land in the 100-byte header:
    /// the bytes `.size` verification and SQLite's open read, and where this test found offsets 36
    /// and 52. A quarter land in the rest of page 1 (the schema), a quarter anywhere: in row data,
    /// a flip is installed under `.size` and refused by the hash under `.checksum` wherever it is.
    static func damaged(_ pristine: [UInt8], pageSize: Int, _ rng: inout SplitMix64) -> ([UInt8], DamageKind) {
        var bytes = pristine
        if rng.chance(0.2) {
            let length = rng.chance(0.5) ? rng.int(0..<pristine.count) : pageSize * rng.int(0..<pristine.count / pageSize)
            bytes.removeSubrange(length...)
            return (bytes, DamageKind(kind: "truncated", detail: "to \(length) bytes"))
        }
        var positions: [Int] = []
        repeat {
            let position = switch rng.int(0..<4) {
            case 0, 1: rng.int(0..<StoreHeader.size)
            case 2: rng.int(StoreHeader.size..<pageSize)
            default: rng.int(0..<bytes.count)
            }
            bytes[position] ^= UInt8(1) << UInt8(rng.int(0..<8))
            positions.append(position)
        } while !positions.contains(where: { bytes[$0] != pristine[$0] }) || (positions.count < 3 && rng.chance(0.4))
        return (bytes, DamageKind(kind: "flipped", detail: "at \(positions)"))
    }
}
