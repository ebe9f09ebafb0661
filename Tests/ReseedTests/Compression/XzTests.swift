#if canImport(CLzma)
import CZlib
import Foundation
import Reseed
@testable import ReseedSystem
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

    /// `stream` with the first block header's LZMA2 dictionary byte set to `code` (its CRC-32 made right).
    static func withDictionaryCode(_ code: UInt8, _ stream: [UInt8]) throws -> [UInt8] {
        var stream = stream
        // The block header follows the 12-byte stream header; its first byte is its size / 4 - 1.
        let start = 12, size = (Int(stream[start]) + 1) * 4
        let filter = try #require((start..<(start + size - 6)).first { stream[$0] == 0x21 && stream[$0 + 1] == 1 })
        stream[filter + 2] = code
        let crc = UInt32(truncatingIfNeeded: stream[start..<(start + size - 4)].withContiguousStorageIfAvailable {
            crc32(0, $0.baseAddress, uInt($0.count))
        } ?? 0)
        for index in 0..<4 { stream[start + size - 4 + index] = UInt8(truncatingIfNeeded: crc >> (8 * index)) }
        return stream
    }

    /// A block whose LZMA2 dictionary is 4 GiB (dictionary byte 40) or 192 MiB (31): refused before
    /// the decoder allocates it, by the header check both platforms run (the Compression framework
    /// on Apple platforms has no memory limit of its own), in whatever pieces the header arrives.
    @Test(arguments: [(UInt8(40), 4095), (31, 192)])
    func refusesADictionaryOverTheMemoryLimit(code: UInt8, mebibytes: Int) throws {
        let folder = try TemporaryDirectory(prefix: "reseed-xz")
        let stream = try Self.withDictionaryCode(code, Self.stream(GzipTests.sample(1_000, seed: 8), in: folder))
        for piece in [1, 5, 1 << 16] {
            let message = Self.message(Self.decode(stream, piece: piece))
            #expect(message.contains("the stream needs \(mebibytes) MiB of memory to decode, more than the 96 MiB allowed"), "\(message)")
        }
    }

    /// The header check passes every stream xz(1) writes under the limit, its first bytes arriving one
    /// at a time: two filters, several blocks, each check, the sizes in the block header, no block at all.
    @Test(arguments: ["-9", "-0", "-6 --check=none", "--x86 --lzma2=preset=6", "-6 --block-size=4KiB", "-6 -T2 --block-size=8KiB", "--lzma2=dict=64MiB"])
    func theHeaderCheckPassesWhatXzWrites(options: String) throws {
        let folder = try TemporaryDirectory(prefix: "reseed-xz")
        for (name, bytes) in [("empty", [UInt8]()), ("sample", GzipTests.sample(20_000, seed: 11))] {
            let plain = folder.appending(name)
            try Data(bytes).write(to: plain)
            let theirs = try GzipTests.shell("xz \(options) -c \(GzipTests.quoted(plain))")
            try #require(theirs.status == 0)
            let stream = [UInt8](theirs.output)
            var check = XzHeaderCheck(memoryLimit: XzDecoder.memoryLimit)
            for byte in stream.prefix(XzHeaderCheck.capacity) where !check.done {
                if let failure = Self.take([byte], &check) { Issue.record("\(options), \(name): \(failure)") }
            }
            #expect(check.done, "\(options), \(name): the check never reached the end of the first block header")
            #expect(try Self.decode(stream, piece: 3).get() == bytes, "\(options), \(name)")
        }
    }

    /// Feeds `bytes` to `check` as one piece; the failure, if it refused them.
    static func take(_ bytes: [UInt8], _ check: inout XzHeaderCheck) -> CodecFailure? {
        var taking = check
        defer { check = taking }
        return bytes.withUnsafeBytes { piece -> CodecFailure? in
            do throws(CodecFailure) { try taking.take(piece) } catch { return error }
            return nil
        }
    }

    /// Headers the format does not allow, refused by the check with a sentence saying what is wrong.
    @Test func theHeaderCheckRefusesMalformedBlockHeaders() throws {
        let folder = try TemporaryDirectory(prefix: "reseed-xz")
        let stream = try Self.stream(GzipTests.sample(1_000, seed: 12), in: folder)
        func refusal(_ bytes: [UInt8]) -> String {
            var check = XzHeaderCheck(memoryLimit: XzDecoder.memoryLimit)
            if let failure = Self.take(bytes, &check) { return failure.description }
            return check.done ? "accepted" : "waiting"
        }
        #expect(refusal(stream) == "accepted")
        #expect(refusal(Array(stream.prefix(20))) == "waiting")
        #expect(refusal(try Self.withDictionaryCode(41, stream)).contains("dictionary size is not one the format allows"))
        var reserved = stream
        reserved[13] |= 0x04
        #expect(refusal(reserved).contains("reserved flags"))
        // A filter ID whose variable-length integer never ends within the header.
        var endless = stream
        let size = (Int(stream[12]) + 1) * 4
        for index in 14..<(12 + size - 4) { endless[index] = 0xFF }
        endless[13] = 0
        #expect(refusal(endless).contains("header is malformed"))
        #expect(refusal([0xfd, 0x37, 0x7a, 0x58]) == "waiting")
        #expect(refusal([0xfd, 0x37, 0x7b]).contains("magic"))
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
