import Foundation
import ReseedPackaging
import ReseedSystem
import ReseedTesting
import ReseedTestSupport
import Testing
@testable import Reseed

extension SplitMix64 {
    /// The ranges ``scalar(controls:)`` draws from: ASCII (twice as often), controls, Latin-1, BMP,
    /// astral, combining marks, separators, the BOM.
    static let scalarRanges: [ClosedRange<UInt32>] = [0x20...0x7E, 0x20...0x7E, 0x00...0x1F, 0x7F...0xFF, 0x100...0x7FF, 0x800...0xFFFD,
                                                      0x1_0000...0x10_FFFF, 0x300...0x36F, 0x2028...0x2029, 0xFEFF...0xFEFF]

    /// A scalar from one of ``scalarRanges``.
    mutating func scalar(controls: Bool = true) -> Unicode.Scalar {
        while true {
            let value = uint32(in: pick(Self.scalarRanges))
            if !controls, value < 0x20 { continue }
            if let scalar = Unicode.Scalar(value) { return scalar }
        }
    }

    mutating func text(maxScalars: Int, controls: Bool = true) -> String {
        var scalars = String.UnicodeScalarView()
        for _ in 0..<int(0..<maxScalars + 1) { scalars.append(scalar(controls: controls)) }
        return String(scalars)
    }

    /// A uniform value in `range`: the draw `UInt32.random(in: range, using:)` makes (Lemire's method
    /// on 32 bits), written out because a debug build runs the generic one unspecialised.
    mutating func uint32(in range: ClosedRange<UInt32>) -> UInt32 {
        let span = range.upperBound &- range.lowerBound
        if span == .max { return UInt32(truncatingIfNeeded: next()) }
        let bound = span + 1
        var product = UInt32(truncatingIfNeeded: next()).multipliedFullWidth(by: bound)
        if product.low < bound {
            let threshold = (0 &- bound) % bound
            while product.low < threshold { product = UInt32(truncatingIfNeeded: next()).multipliedFullWidth(by: bound) }
        }
        return range.lowerBound &+ product.high
    }

    /// Up to `maxCount` uniform bytes (each the draw `UInt8.random(in: 0...255, using:)` makes).
    mutating func bytes(maxCount: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        for _ in 0..<int(0..<maxCount + 1) { bytes.append(UInt8(truncatingIfNeeded: next())) }
        return bytes
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
    /// How deep a nesting case goes: each side of JSONNode's default limit (256) and of the limits
    /// other parsers use (16, 512).
    static let depths = [15, 16, 17, 255, 256, 257, 511, 512, 513]
    /// Depths only a parser without recursion survives, 60 kB and 600 kB of brackets, in one nesting
    /// case in ``hugeDepthOneIn``. A debug build reads 600 kB of JSON in about 0.1 s, and a damaged
    /// preferences case reads it up to five times: at the rate of the other depths these two were
    /// nine tenths of that test's time. HostileFilesTests launches over preferences 100,000 deep.
    static let hugeDepths = [10_000, 100_000]
    static let hugeDepthOneIn = 128

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
            let digits = Self.digitPositions(in: bytes)
            guard let start = digits.isEmpty ? nil : rng.pick(digits) else {
                bytes.insert(contentsOf: Array(rng.pick(Self.numbers).utf8), at: position)
                return
            }
            var end = start
            while end < bytes.count, bytes[end] &- 48 < 10 { end += 1 }
            bytes.replaceSubrange(start..<end, with: Array(rng.pick(Self.numbers).utf8))
        case .deepNesting:
            let depth = rng.int(0..<Self.hugeDepthOneIn) == 0 ? rng.pick(Self.hugeDepths) : rng.pick(Self.depths)
            let (open, close) = rng.chance(0.5) ? ("[", "]") : ("{\"a\":", "}")
            let inner = rng.chance(0.5) ? "1" : "{}"
            let nested = Self.nesting(open, inner, close, depth: depth, closing: rng.chance(0.8) ? depth : depth / 2)
            if rng.chance(0.3) {
                bytes = nested
            } else {
                bytes.insert(contentsOf: nested, at: position)
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

    /// `open` `depth` times, `inner`, `close` `closing` times, as bytes.
    static func nesting(_ open: String, _ inner: String, _ close: String, depth: Int, closing: Int) -> [UInt8] {
        repeated(Array(open.utf8), depth) + Array(inner.utf8) + repeated(Array(close.utf8), closing)
    }

    /// `unit` `count` times, in as many appends as `count` has bits: a debug build takes tens of
    /// milliseconds to repeat a string 100,000 times, or to append 100,000 times.
    static func repeated(_ unit: [UInt8], _ count: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(unit.count * count)
        var chunk = unit
        var remaining = count
        while remaining > 0 {
            if remaining & 1 == 1 { bytes += chunk }
            remaining >>= 1
            if remaining > 0 { chunk += chunk }
        }
        return bytes
    }

    /// The offsets of ASCII digits in `bytes` (a plain loop: `filter` is slow in a debug build).
    static func digitPositions(in bytes: [UInt8]) -> [Int] {
        var positions: [Int] = []
        var index = 0
        while index < bytes.count {
            if bytes[index] &- 48 < 10 { positions.append(index) }
            index += 1
        }
        return positions
    }
}

/// The fuzz tests draw with written-out arithmetic for speed; these are the standard library's draws,
/// so a seed gives the cases it always gave.
@Suite struct FuzzDrawTests {
    @Test func writtenOutDrawsAreTheStandardLibrarys() {
        var ours = SplitMix64(seed: 0x5EED_D4A3)
        var library = SplitMix64(seed: 0x5EED_D4A3)
        var mismatches: [String] = []
        let ranges = [0..<1, 0..<2, 0..<3, 0..<7, 1..<129, -5..<5, 0..<600, 0..<(1 << 62) + 1, Int.min..<Int.max, Int.min..<0]
        for round in 0..<20_000 {
            let range = ranges[round % ranges.count]
            let (int, expected) = (ours.int(range), Int.random(in: range, using: &library))
            if int != expected { mismatches.append("int(\(range)): \(int), expected \(expected)") }
            let probability = [0.0, 0.1, 0.5, 0.85, 1.0][round % 5]
            if ours.chance(probability) != (Double.random(in: 0..<1, using: &library) < probability) { mismatches.append("chance(\(probability))") }
            let scalarRange = SplitMix64.scalarRanges[round % SplitMix64.scalarRanges.count]
            let (value, expectedValue) = (ours.uint32(in: scalarRange), UInt32.random(in: scalarRange, using: &library))
            if value != expectedValue { mismatches.append("uint32(in: \(scalarRange)): \(value), expected \(expectedValue)") }
            if ours.uint32(in: 0...UInt32.max) != UInt32.random(in: 0...UInt32.max, using: &library) { mismatches.append("uint32(in: full range)") }
            if UInt8(truncatingIfNeeded: ours.next()) != UInt8.random(in: 0...255, using: &library) { mismatches.append("byte") }
            if Int32(truncatingIfNeeded: ours.next()) != Int32.random(in: .min ... .max, using: &library) { mismatches.append("Int32") }
            if Int64(truncatingIfNeeded: ours.next()) != Int64.random(in: .min ... .max, using: &library) { mismatches.append("Int64") }
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) draws differ, first: \(mismatches.prefix(5))")
    }
}

@Suite struct ManifestFuzzTests {
    static let path = "/bundle/items.manifest.json"
    static let nameCharacters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-".utf8)

    static func randomManifest(_ rng: inout SplitMix64) -> SeedManifest {
        var nameBytes: [UInt8] = []
        for _ in 0..<rng.int(1..<129) { nameBytes.append(rng.pick(Self.nameCharacters)) }
        var name = String(decoding: nameBytes, as: UTF8.self)
        if name.hasPrefix(".") { name = "n" + name.dropFirst() }
        // Random text kept to what a version may hold: no control, format, separator or unassigned
        // scalar, at most 64 bytes of UTF-8.
        var version = ""
        for scalar in rng.text(maxScalars: 40, controls: false).unicodeScalars where SeedManifest.versionProblem(String(scalar)) == nil {
            guard version.utf8.count + String(scalar).utf8.count <= SeedManifest.maximumVersionBytes else { break }
            version.unicodeScalars.append(scalar)
        }
        if version.isEmpty { version = "1.0.0" }
        // By scalars: a "/" with a combining mark after it is one Character that is not "/".
        var file = String(String.UnicodeScalarView(rng.text(maxScalars: 30).unicodeScalars.filter { $0 != "/" && $0 != "\\" && $0 != "\0" }))
        if file.isEmpty || file == "." || file == ".." { file = name + ".sqlite" }
        let pageSize = 1 << rng.int(9..<17)
        let hex = { (rng: inout SplitMix64) in
            var bytes: [UInt8] = []
            for _ in 0..<32 { bytes.append(UInt8(truncatingIfNeeded: rng.next())) }  // as UInt8.random(in: 0...255, using:) draws
            return bytes.hexString
        }
        let steps = (0..<rng.int(0..<4)).map { index in
            SeedManifest.Step(id: String(format: "%04d_step.sql", index + 1), checksum: hex(&rng))
        }
        let facts = SeedFacts(
            name: name, version: version, file: file, size: Int64(pageSize) * Int64(rng.int(1..<1_000_000)), sha256: hex(&rng),
            userVersion: Int32(truncatingIfNeeded: rng.next()), applicationID: Int32(truncatingIfNeeded: rng.next()),
            pageSize: pageSize)
        return SeedManifest(facts: facts, steps: steps)
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
