#if canImport(CLzma)
import CZlib
import Foundation
import Reseed
import ReseedSystem
import ReseedTestSupport
import Testing

/// The xz codec against xz(1), and the streams its decoder must refuse.
@Suite struct XzTests {
    static func stream(_ bytes: [UInt8], in folder: TemporaryDirectory, as name: String = "data") throws -> [UInt8] {
        try [UInt8](Data(contentsOf: StreamChecks.compressed(bytes, with: SeedManifest.Compression.xz.codec, in: folder, as: name)))
    }

    /// Decodes `stream` in pieces of `piece` bytes; the output, or the failure.
    static func decode(_ stream: [UInt8], limit: Int64 = .max, piece: Int = 1 << 16) -> Result<[UInt8], CodecFailure> {
        StreamChecks.decode(stream, limit: limit, piece: piece) { (limit) throws(CodecFailure) in try XzDecoder(limit: limit) }
    }

    static func message(_ result: Result<[UInt8], CodecFailure>) -> String { GzipTests.message(result) }

    @Test(arguments: [0, 1, 65_535, 262_144, 3 << 20 | 7])
    func roundTripMatchesXz(size: Int) throws {
        try StreamChecks.roundTrip(size: size, codec: SeedManifest.Compression.xz.codec, tool: "xz") { Self.decode($0, piece: $1) }
    }

    /// What xz(1) writes, at its strongest and fastest presets, with each check it offers.
    @Test(arguments: ["-9", "-9e", "-1", "-6 --check=crc32", "-6 --check=sha256", "-6 --check=none"])
    func decodesWhatXzWrites(options: String) throws {
        let folder = try TemporaryDirectory(prefix: "reseed-xz")
        let bytes = GzipTests.sample(1 << 20 | 3, seed: 9)
        let plain = folder.appending("a file name.sqlite")
        try Data(bytes).write(to: plain)
        let theirs = try GzipTests.shell("xz \(options) -c \(GzipTests.quoted(plain))")
        #expect(theirs.status == 0)
        #expect(try Self.decode([UInt8](theirs.output)).get() == bytes)
    }

    @Test func sameInputGivesTheSameBytesAndAsSmallAsXz() throws {
        let folder = try TemporaryDirectory(prefix: "reseed-xz")
        let bytes = GzipTests.sample(2 << 20, seed: 4)
        let first = try Self.stream(bytes, in: folder, as: "one")
        let second = try Self.stream(bytes, in: folder, as: "two")
        #expect(first == second)
        #expect(Array(first.prefix(6)) == Xz.magic)
        // The dictionary cut to the input costs nothing against xz -9's 64 MiB one.
        let theirs = try GzipTests.shell("xz -9 -c \(GzipTests.quoted(folder.appending("one")))")
        #expect(first.count <= theirs.output.count + 16, "ours \(first.count), xz -9 \(theirs.output.count)")
    }

    @Test func refusesAStreamCutAnywhere() throws {
        let folder = try TemporaryDirectory(prefix: "reseed-xz")
        let stream = try Self.stream(GzipTests.sample(8_000, seed: 2), in: folder)
        StreamChecks.expectEveryCutTruncated(stream) { Self.decode($0, piece: 1 << 20) }
    }

    @Test func refusesBytesAfterTheStream() throws {
        let folder = try TemporaryDirectory(prefix: "reseed-xz")
        let one = try Self.stream(GzipTests.sample(5_000, seed: 5), in: folder, as: "one")
        let two = try Self.stream(GzipTests.sample(5_000, seed: 6), in: folder, as: "two")
        #expect(Self.message(Self.decode(one + [0])).contains("bytes follow the end of the xz stream"))
        // Stream padding (four zero bytes), which xz -d accepts: a seed is one stream, nothing after it.
        #expect(Self.message(Self.decode(one + [0, 0, 0, 0])).contains("follow the end"))
        // xz -dc would print both streams' bytes.
        #expect(Self.message(Self.decode(one + two)).contains("concatenated streams"))
        #expect(Self.message(Self.decode(one + two, piece: one.count)).contains("concatenated streams"))
    }

    @Test func refusesABadHeaderAndAnEmptyStream() throws {
        let folder = try TemporaryDirectory(prefix: "reseed-xz")
        var stream = try Self.stream(GzipTests.sample(1_000, seed: 7), in: folder)
        #expect(Self.message(Self.decode([])).contains("empty"))
        stream[1] ^= 1
        #expect(Self.message(Self.decode(stream)).contains("magic"))
        // gzip is not xz.
        let gz = try [UInt8](Data(contentsOf: GzipTests.compressed(GzipTests.sample(1_000, seed: 7), in: folder, as: "g")))
        #expect(Self.message(Self.decode(gz)).contains("magic"))
    }

    /// A block whose LZMA2 dictionary is 4 GiB (the header's dictionary byte set to 40, its CRC-32
    /// made right): refused before liblzma allocates it.
    @Test func refusesADictionaryOverTheMemoryLimit() throws {
        let folder = try TemporaryDirectory(prefix: "reseed-xz")
        var stream = try Self.stream(GzipTests.sample(1_000, seed: 8), in: folder)
        // The block header follows the 12-byte stream header; its first byte is its size / 4 - 1.
        let start = 12, size = (Int(stream[start]) + 1) * 4
        let filter = try #require((start..<(start + size - 6)).first { stream[$0] == 0x21 && stream[$0 + 1] == 1 })
        stream[filter + 2] = 40
        let crc = UInt32(truncatingIfNeeded: stream[start..<(start + size - 4)].withContiguousStorageIfAvailable {
            crc32(0, $0.baseAddress, uInt($0.count))
        } ?? 0)
        for index in 0..<4 { stream[start + size - 4 + index] = UInt8(truncatingIfNeeded: crc >> (8 * index)) }
        let message = Self.message(Self.decode(stream))
        #expect(message.contains("MiB of memory to decode, more than the 96 MiB allowed"), "\(message)")
    }

    /// 16 MiB of zeros in a 2 KiB stream: the decoder stops after the limit, before the stream's end.
    @Test func stopsABombAtTheLimit() throws {
        let folder = try TemporaryDirectory(prefix: "reseed-xz")
        let stream = try Self.stream([UInt8](repeating: 0, count: 16 << 20), in: folder)
        let limit: Int64 = 1 << 20
        let (failure, handedOut, fed) = StreamChecks.feedUntilRefused(stream, limit: limit, piece: 16) { limit throws(CodecFailure) in
            try XzDecoder(limit: limit)
        }
        #expect(failure == .tooLong(limit: limit))
        #expect(handedOut <= limit)
        #expect(fed < stream.count / 2, "read \(fed) of \(stream.count) bytes")
    }

    /// Random byte flips in a valid stream, and random bytes behind its header: the decoder never
    /// traps, and what it accepts is the original.
    @Test func flippedBytesAreRefusedOrHarmless() throws {
        let folder = try TemporaryDirectory(prefix: "reseed-xz")
        let original = GzipTests.sample(12_000, seed: 8)
        let stream = try Self.stream(original, in: folder)
        let accepted = StreamChecks.acceptedDamaged(stream, original: original, cases: 2_000, seed: 0x7a58, damage: { bytes, index, random in
            if index % 4 == 3 {
                bytes = Array(bytes.prefix(12 + random.int(0..<40))) + (0..<random.int(0..<4_000)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            } else {
                StreamChecks.flipBytes(&bytes, random: &random)
            }
        }, decode: { Self.decode($0, limit: $1, piece: $2) })
        // Every byte of an xz stream is covered by a CRC or the check: no damage passes.
        #expect(accepted == 0)
    }
}
#endif
