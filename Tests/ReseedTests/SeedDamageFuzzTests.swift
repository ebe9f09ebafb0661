import Foundation
import GRDB
import Reseed
import ReseedTesting
import Testing

/// Seeds with flipped bytes or cut short, given to the launcher over an installed 1.0.0.
///
/// Under `.checksum` a damaged seed is never installed. Under `.size` (O(1) checks) one may be
/// installed, but only if SQLite can open it; a launch that fails leaves the old store and its
/// recorded version as they were.
@Suite struct SeedDamageFuzzTests {
    static let casesPerLevel = 200
    static let oldLabels = ["1.0.0-1", "1.0.0-2", "1.0.0-3"]

    @Test(.timeLimit(.minutes(10)), arguments: [Verification.size, .checksum])
    func damagedSeedIsNeverInstalledUnverifiedAndNeverCostsTheOldStore(level: Verification) throws {
        let sandbox = try LaunchSandbox()
        try sandbox.install(try sandbox.seed("1.0.0"))
        let template = sandbox.directory.appending("template")
        try FileManager.default.copyItem(at: sandbox.dataDirectory, to: template)
        let good = try sandbox.seed("2.0.0", rows: 2_000)
        let pristine = try [UInt8](Data(contentsOf: good.fileURL))
        let folder = sandbox.directory.appending("damaged")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let manifestURL = folder.appendingPathComponent(good.manifest.manifestFileName)
        try good.manifest.encoded().write(to: manifestURL)

        var rng = SplitMix64(seed: level == .size ? 0x5EED_00A4 : 0x5EED_00A5)
        var failures = FuzzFailures()
        var tally: [String: Int] = [:]
        let clock = ContinuousClock()
        let start = clock.now
        for index in 0..<Self.casesPerLevel {
            try FileManager.default.removeItem(at: sandbox.dataDirectory)
            try FileManager.default.copyItem(at: template, to: sandbox.dataDirectory)
            let (bytes, damage) = Self.damaged(pristine, pageSize: good.manifest.pageSize, &rng)
            try Data(bytes).write(to: folder.appendingPathComponent(good.manifest.file))
            let label = "case \(index) (\(damage))"

            let launched: (database: DatabasePool, outcome: LaunchOutcome)
            do throws(ReseedError) {
                launched = try sandbox.launcher(try Seed(at: manifestURL)) { $0.verification = level }.launch()
            } catch {
                tally["\(damage.kind) → \(error.code)", default: 0] += 1
                if level == .checksum {
                    failures.check(error.code == .verificationFailed, "\(label): \(error.code), expected verificationFailed: \(error)")
                }
                let recorded = try sandbox.recordedVersion()
                let labels = try? sandbox.labels()
                failures.check(recorded == "1.0.0" && labels == Self.oldLabels,
                               "\(label): the launch failed (\(error)) but the old store is not intact: recorded \(recorded ?? "nil"), "
                               + "labels \(labels.map { "\($0.prefix(3)) (\($0.count) rows)" } ?? "unreadable")")
                let leftovers = try sandbox.temporaryFiles()
                failures.check(leftovers.isEmpty, "\(label): temporary files left: \(leftovers)")
                continue
            }
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

    /// `pristine` with 1-3 bits flipped (half of them in page 1: the header and the schema), or cut short.
    static func damaged(_ pristine: [UInt8], pageSize: Int, _ rng: inout SplitMix64) -> ([UInt8], DamageKind) {
        var bytes = pristine
        if rng.chance(0.2) {
            let length = rng.chance(0.5) ? rng.int(0..<pristine.count) : pageSize * rng.int(0..<pristine.count / pageSize)
            bytes.removeSubrange(length...)
            return (bytes, DamageKind(kind: "truncated", detail: "to \(length) bytes"))
        }
        var positions: [Int] = []
        repeat {
            let position = rng.chance(0.5) ? rng.int(0..<pageSize) : rng.int(0..<bytes.count)
            bytes[position] ^= UInt8(1) << UInt8(rng.int(0..<8))
            positions.append(position)
        } while bytes == pristine || (positions.count < 3 && rng.chance(0.4))
        return (bytes, DamageKind(kind: "flipped", detail: "at \(positions)"))
    }
}
