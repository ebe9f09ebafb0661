import Foundation
import ReseedTesting
import Testing
@testable import Reseed

extension SplitMix64 {
    /// A scalar from a mix of ranges: ASCII, controls, Latin-1, BMP, astral, combining marks, separators, the BOM.
    mutating func scalar(controls: Bool = true) -> Unicode.Scalar {
        let ranges: [ClosedRange<UInt32>] = [0x20...0x7E, 0x20...0x7E, 0x00...0x1F, 0x7F...0xFF, 0x100...0x7FF, 0x800...0xFFFD,
                                             0x1_0000...0x10_FFFF, 0x300...0x36F, 0x2028...0x2029, 0xFEFF...0xFEFF]
        while true {
            let value = UInt32.random(in: pick(ranges), using: &self)
            if !controls, value < 0x20 { continue }
            if let scalar = Unicode.Scalar(value) { return scalar }
        }
    }

    mutating func text(maxScalars: Int, controls: Bool = true) -> String {
        var text = ""
        for _ in 0..<int(0..<maxScalars + 1) { text.unicodeScalars.append(scalar(controls: controls)) }
        return text
    }

    mutating func bytes(maxCount: Int) -> [UInt8] {
        (0..<int(0..<maxCount + 1)).map { _ in UInt8.random(in: 0...255, using: &self) }
    }
}



/// How a fuzz case damages a document: what broken disks, editors, truncated downloads and attackers produce.
enum Damage: String, CaseIterable {
    case flipBits, truncate, punctuation, hugeNumber, deepNesting, unicode, nul, randomBytes

    static let punctuationBytes = Array("{}[],:\"\\".utf8)
    static let numbers = ["99999999999999999999999999", "-9223372036854775809", "9223372036854775808", "9223372036854775807",
                          "1e999999", "-1e-999999", "-0", "0.5", "1E2", "00", "-", "1.", ".5", "+1", "NaN", "Infinity", "0x10",
                          String(repeating: "9", count: 5000)]
    static let brokenUTF8: [[UInt8]] = [[0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0x80], [0xFF], [0xE2, 0x82], [0xEF, 0xBB, 0xBF]]
    static let escapes = [#"\ud800"#, #"\udc00"#, #"\ud800\u0041"#, #"\udbff\udfff"#, #"\u0000"#, #"\uzzzz"#, #"\u12"#, #"\"#, #"\x41"#]
    static let depths = [15, 16, 17, 255, 256, 257, 511, 512, 513, 10_000, 100_000]

    /// Damages `bytes` in place; a nonempty document always changes (but for an unlucky truncation at its end).
    func apply(to bytes: inout [UInt8], _ rng: inout SplitMix64) {
        let position = rng.int(0..<bytes.count + 1)
        switch self {
        case .flipBits:
            guard !bytes.isEmpty else { return }
            for _ in 0..<rng.int(1..<5) { bytes[rng.int(0..<bytes.count)] ^= UInt8(1) << UInt8(rng.int(0..<8)) }
        case .truncate:
            bytes.removeSubrange(rng.int(0..<max(bytes.count, 1))...)
        case .punctuation:
            for _ in 0..<rng.int(1..<6) { bytes.insert(rng.pick(Self.punctuationBytes), at: rng.int(0..<bytes.count + 1)) }
        case .hugeNumber:
            let digits = bytes.indices.filter { (48...57).contains(bytes[$0]) }
            guard let start = digits.isEmpty ? nil : rng.pick(digits) else {
                bytes.insert(contentsOf: Array(rng.pick(Self.numbers).utf8), at: position)
                return
            }
            var end = start
            while end < bytes.count, (48...57).contains(bytes[end]) { end += 1 }
            bytes.replaceSubrange(start..<end, with: Array(rng.pick(Self.numbers).utf8))
        case .deepNesting:
            let depth = rng.pick(Self.depths)
            let (open, close) = rng.chance(0.5) ? ("[", "]") : ("{\"a\":", "}")
            let inner = rng.chance(0.5) ? "1" : "{}"
            let nested = String(repeating: open, count: depth) + inner + String(repeating: close, count: rng.chance(0.8) ? depth : depth / 2)
            if rng.chance(0.3) {
                bytes = Array(nested.utf8)
            } else {
                bytes.insert(contentsOf: Array(nested.utf8), at: position)
            }
        case .unicode:
            let inserted: [UInt8] = switch rng.int(0..<3) {
            case 0: Array(String(rng.scalar()).utf8)
            case 1: rng.pick(Self.brokenUTF8)
            default: Array(rng.pick(Self.escapes).utf8)
            }
            bytes.insert(contentsOf: inserted, at: position)
        case .nul:
            if !bytes.isEmpty, rng.chance(0.5) { bytes[rng.int(0..<bytes.count)] = 0 } else { bytes.insert(0, at: position) }
        case .randomBytes:
            bytes = rng.bytes(maxCount: 600)
        }
    }
}

@Suite struct ManifestFuzzTests {
    static let path = "/bundle/items.manifest.json"

    static func randomManifest(_ rng: inout SplitMix64) -> SeedManifest {
        let nameCharacters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        var name = String((0..<rng.int(1..<129)).map { _ in rng.pick(nameCharacters) })
        if name.hasPrefix(".") { name = "n" + name.dropFirst() }
        // Random text kept to what a version may hold: no control, format, separator or unassigned
        // scalar, at most 64 bytes of UTF-8.
        var version = ""
        for scalar in rng.text(maxScalars: 40, controls: false).unicodeScalars where SeedManifest.versionProblem(String(scalar)) == nil {
            guard version.utf8.count + String(scalar).utf8.count <= SeedManifest.maximumVersionBytes else { break }
            version.unicodeScalars.append(scalar)
        }
        if version.isEmpty { version = "1.0.0" }
        var file = rng.text(maxScalars: 30).filter { $0 != "/" && $0 != "\\" && $0 != "\0" }
        if file.isEmpty || file == "." || file == ".." { file = name + ".sqlite" }
        let pageSize = 1 << rng.int(9..<17)
        let hex = { (rng: inout SplitMix64) in (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) }.hexString }
        let steps = (0..<rng.int(0..<4)).map { index in
            SeedManifest.Step(id: String(format: "%04d_step.sql", index + 1), checksum: hex(&rng))
        }
        return SeedManifest(
            name: name, version: version, file: file, size: Int64(pageSize) * Int64(rng.int(1..<1_000_000)), sha256: hex(&rng),
            userVersion: Int32.random(in: .min ... .max, using: &rng), applicationID: Int32.random(in: .min ... .max, using: &rng),
            pageSize: pageSize, steps: steps)
    }

    /// Every promise ``SeedManifest/decode(_:path:)`` documents about a manifest it returns.
    static func isWellFormed(_ manifest: SeedManifest) -> Bool {
        manifest.format == SeedManifest.currentFormat && SeedManifest.isValidStoreName(manifest.name)
            && !manifest.version.isEmpty && manifest.version.utf8.count <= SeedManifest.maximumVersionBytes
            && SeedManifest.versionProblem(manifest.version) == nil
            && SeedManifest.isPlainFileName(manifest.file) && (512...65536).contains(manifest.pageSize)
            && manifest.pageSize & (manifest.pageSize - 1) == 0 && manifest.size >= Int64(manifest.pageSize)
            && manifest.size <= SeedManifest.maximumSeedSize && manifest.size % Int64(manifest.pageSize) == 0
            && SeedManifest.isSHA256(manifest.sha256)
            && manifest.steps.allSatisfy { SeedManifest.isPlainFileName($0.id) && SeedManifest.isSHA256($0.checksum) }
    }

    @Test(.timeLimit(.minutes(10)))
    func randomValidManifestsRoundTrip() {
        var rng = SplitMix64(seed: 0x5EED_0001)
        var failures = FuzzFailures()
        let cases = 10_000
        for _ in 0..<cases {
            let manifest = Self.randomManifest(&rng)
            let bytes = Array(manifest.encoded())
            do throws(ReseedError) {
                let decoded = try SeedManifest.decode(bytes, path: Self.path)
                failures.check(decoded == manifest, "decoded \(decoded) from \(FuzzFailures.shown(bytes))")
            } catch {
                failures.check(false, "valid manifest rejected (\(error)): \(FuzzFailures.shown(bytes))")
            }
        }
        print("manifest fuzz: \(cases) valid manifests round-tripped")
        #expect(failures.count == 0, "\(failures.summary)")
    }

    @Test(.timeLimit(.minutes(10)))
    func damagedManifestsAreRejectedOrDecodeToWellFormedValues() {
        var rng = SplitMix64(seed: 0x5EED_0002)
        var failures = FuzzFailures()
        var tally: [String: Int] = [:]
        let cases = 12_000
        for _ in 0..<cases {
            var bytes = Array(Self.randomManifest(&rng).encoded())
            let damage = rng.pick(Damage.allCases)
            damage.apply(to: &bytes, &rng)
            do throws(ReseedError) {
                let decoded = try SeedManifest.decode(bytes, path: Self.path)
                tally["\(damage.rawValue) decoded", default: 0] += 1
                failures.check(Self.isWellFormed(decoded), "accepted a manifest breaking its rules: \(decoded) from \(FuzzFailures.shown(bytes))")
                failures.check((try? SeedManifest.decode(Array(decoded.encoded()), path: Self.path)) == decoded,
                               "an accepted manifest does not round-trip: \(FuzzFailures.shown(bytes))")
            } catch {
                tally["\(damage.rawValue) rejected", default: 0] += 1
                failures.check(error.code == .invalidManifest && error.step == .readManifest && error.path == Self.path,
                               "unexpected error \(error.code)/\(error.step) for \(FuzzFailures.shown(bytes))")
                failures.check(!error.description.unicodeScalars.contains { $0 == "\n" || $0 == "\r" },
                               "the error is not one line (the CLI prints it as one): \(error.description.debugDescription)")
            }
        }
        print("manifest fuzz: \(cases) damaged manifests: \(tally.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))")
        #expect(failures.count == 0, "\(failures.summary)")
    }
}
