import CZlib
import Foundation
import Reseed
import ReseedSystem
import ReseedTestSupport
import Testing

/// The gzip codec against gzip(1), and the streams its decoder must refuse.
@Suite struct GzipTests {
    /// Bytes that compress like a database: runs of text and numbers, with random stretches.
    static func sample(_ count: Int, seed: UInt64) -> [UInt8] {
        var random = SplitMix64(seed: seed)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        let words = ["injury", "category", "triage", "urgent", "minor", "0001", "hemorrhage", " ", ",", "\n"].map { Array($0.utf8) }
        while bytes.count < count {
            if random.chance(0.2) {
                for _ in 0..<random.int(1..<64) { bytes.append(UInt8(truncatingIfNeeded: random.next())) }
            } else {
                bytes += random.pick(words)
            }
        }
        return Array(bytes.prefix(count))
    }

    static func compressed(_ bytes: [UInt8], in folder: TemporaryDirectory, as name: String = "data") throws -> URL {
        try StreamChecks.compressed(bytes, with: SeedManifest.Compression.gzip.codec, in: folder, as: name)
    }

    /// Decodes `stream` in pieces of `piece` bytes; the output, or the failure.
    static func decode(_ stream: [UInt8], limit: Int64 = .max, piece: Int = 1 << 16) -> Result<[UInt8], CodecFailure> {
        StreamChecks.decode(stream, limit: limit, piece: piece) { (limit) throws(CodecFailure) in try GzipDecoder(limit: limit) }
    }

    static func shell(_ command: String) throws -> (status: Int32, output: Data) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }

    static func quoted(_ url: URL) -> String { "'" + url.path.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    @Test(arguments: [0, 1, 65_535, 65_536, 65_537, 3 << 20 | 7])
    func roundTripMatchesGzip(size: Int) throws {
        try StreamChecks.roundTrip(size: size, codec: SeedManifest.Compression.gzip.codec, tool: "gzip") { Self.decode($0, piece: $1) }
    }

    @Test(arguments: ["-9n", "-9", "-1"])
    func decodesWhatGzipWrites(options: String) throws {
        let folder = try TemporaryDirectory(prefix: "reseed-gzip")
        let bytes = Self.sample(1 << 20 | 3, seed: 9)
        let plain = folder.appending("a file name.sqlite")
        try Data(bytes).write(to: plain)
        // Without -n, gzip stores the name (FNAME) and time: read and skipped.
        let theirs = try Self.shell("gzip \(options) -c \(Self.quoted(plain))")
        #expect(theirs.status == 0)
        #expect(try Self.decode([UInt8](theirs.output)).get() == bytes)
    }

    @Test func sameInputGivesTheSameBytes() throws {
        let folder = try TemporaryDirectory(prefix: "reseed-gzip")
        let bytes = Self.sample(2 << 20, seed: 4)
        let first = try Data(contentsOf: Self.compressed(bytes, in: folder, as: "one"))
        let second = try Data(contentsOf: Self.compressed(bytes, in: folder, as: "two"))
        #expect(first == second)
        // MTIME 0, no flags, XFL 2 (level 9), OS 255.
        #expect(Array(first.prefix(10)) == [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 255])
        #expect(Gzip.header(level: 1)[8] == 4)
    }

    /// A stream split in two near its end, at every byte: where the first piece ends just as the
    /// decoder's 256 KiB output buffer fills, the rest of the output and the trailer come with the
    /// second piece, and the stream is whole.
    @Test(arguments: [false, true])
    func aStreamSplitNearItsEndIsWholeWhereverTheOutputBufferFills(zeros: Bool) throws {
        let folder = try TemporaryDirectory(prefix: "reseed-gzip")
        let bytes = zeros ? [UInt8](repeating: 0, count: 2 * (256 << 10)) : Self.sample(2 * (256 << 10), seed: 5)
        let stream = try [UInt8](Data(contentsOf: Self.compressed(bytes, in: folder)))
        for cut in max(0, stream.count - 40)...stream.count {
            let output = stream.withUnsafeBytes { all -> Result<[UInt8], CodecFailure> in
                do throws(CodecFailure) {
                    var decoder = try GzipDecoder(limit: .max)
                    var output: [UInt8] = []
                    try decoder.feed(UnsafeRawBufferPointer(rebasing: all[..<cut])) { output += $0 }
                    try decoder.feed(UnsafeRawBufferPointer(rebasing: all[cut...])) { output += $0 }
                    try decoder.finish { output += $0 }
                    return .success(output)
                } catch {
                    return .failure(error)
                }
            }
            #expect((try? output.get()) == bytes, "cut at \(cut) of \(stream.count)")
        }
    }

    @Test func refusesAStreamCutAnywhere() throws {
        let folder = try TemporaryDirectory(prefix: "reseed-gzip")
        let stream = try [UInt8](Data(contentsOf: Self.compressed(Self.sample(8_000, seed: 2), in: folder)))
        StreamChecks.expectEveryCutTruncated(stream) { Self.decode($0, piece: 1 << 20) }
    }

    @Test func refusesAWrongTrailer() throws {
        let folder = try TemporaryDirectory(prefix: "reseed-gzip")
        let stream = try [UInt8](Data(contentsOf: Self.compressed(Self.sample(10_000, seed: 3), in: folder)))
        var badCRC = stream
        badCRC[stream.count - 8] ^= 0x01
        #expect(Self.message(Self.decode(badCRC)).contains("CRC-32"))
        var badSize = stream
        badSize[stream.count - 4] ^= 0x01
        #expect(Self.message(Self.decode(badSize)).contains("the trailer says"))
    }

    @Test func refusesBytesAfterTheMember() throws {
        let folder = try TemporaryDirectory(prefix: "reseed-gzip")
        let one = try [UInt8](Data(contentsOf: Self.compressed(Self.sample(5_000, seed: 5), in: folder, as: "one")))
        let two = try [UInt8](Data(contentsOf: Self.compressed(Self.sample(5_000, seed: 6), in: folder, as: "two")))
        #expect(Self.message(Self.decode(one + [0])).contains("bytes follow the end of the gzip member"))
        // gzip -dc would print both members' bytes; a seed is one file.
        #expect(Self.message(Self.decode(one + two)).contains("concatenated members are not supported"))
        #expect(Self.message(Self.decode(one + two, piece: one.count + 1)).contains("concatenated"))
    }

    @Test func refusesABadHeader() {
        let body: [UInt8] = [3, 0, 0, 0, 0, 0, 0, 0, 0, 0]  // an empty final block, CRC 0, ISIZE 0
        #expect(Self.message(Self.decode([0x1f, 0x8c] + body)).contains("magic"))
        #expect(Self.message(Self.decode([0x1f, 0x8b, 7, 0, 0, 0, 0, 0, 0, 3] + body)).contains("method 7"))
        #expect(Self.message(Self.decode([0x1f, 0x8b, 8, 0x20, 0, 0, 0, 0, 0, 3] + body)).contains("reserved"))
        // FHCRC: the low 16 bits of the header's CRC-32.
        let header: [UInt8] = [0x1f, 0x8b, 8, 2, 0, 0, 0, 0, 0, 3]
        let crc = UInt32(truncatingIfNeeded: header.withUnsafeBufferPointer { crc32(0, $0.baseAddress, uInt($0.count)) })
        #expect((try? Self.decode(header + [UInt8(crc & 0xff), UInt8(crc >> 8 & 0xff)] + body).get()) == [])
        #expect(Self.message(Self.decode(header + [UInt8(crc & 0xff) ^ 1, UInt8(crc >> 8 & 0xff)] + body)).contains("header CRC"))
        // FNAME longer than 64 KiB.
        let long = [UInt8](repeating: 0x61, count: GzipDecoder.maximumHeaderField + 1)
        #expect(Self.message(Self.decode([0x1f, 0x8b, 8, 8, 0, 0, 0, 0, 0, 3] + long + [0] + body)).contains("file name is longer"))
        #expect(Self.message(Self.decode([])).contains("empty"))
    }

    /// 1 GiB of zeros as 1024 identical, byte-aligned 1 MiB deflate blocks (each ended by a full
    /// flush), behind a gzip header: the decoder stops after the limit, having read a few KiB.
    @Test func stopsABombAtTheLimit() throws {
        let chunk = try Self.fullyFlushedZeros(1 << 20)
        let stream = Gzip.header(level: 9) + Array([[UInt8]](repeating: chunk, count: 1024).joined()) + [3, 0]
        let limit: Int64 = 1 << 20
        let (failure, handedOut, fed) = StreamChecks.feedUntilRefused(stream, limit: limit, piece: 4096) { limit throws(CodecFailure) in
            try GzipDecoder(limit: limit)
        }
        #expect(failure == .tooLong(limit: limit))
        #expect(handedOut <= limit)
        // It stopped within the second chunk: the rest was never read.
        #expect(fed <= 3 * chunk.count + 4096, "read \(fed) of \(stream.count) bytes")
    }

    /// Random byte flips in a valid stream: the decoder never traps, and what it accepts is the original.
    @Test func flippedBytesAreRefusedOrHarmless() throws {
        let folder = try TemporaryDirectory(prefix: "reseed-gzip")
        let original = Self.sample(12_000, seed: 8)
        let stream = try [UInt8](Data(contentsOf: Self.compressed(original, in: folder)))
        let accepted = StreamChecks.acceptedDamaged(stream, original: original, cases: 1_500, seed: 0x9217,
                                                    damage: { bytes, _, random in StreamChecks.flipBytes(&bytes, random: &random) },
                                                    decode: { Self.decode($0, limit: $1, piece: $2) })
        // Only flips in MTIME, XFL or OS pass: a few percent of the cases at most.
        #expect(accepted < 150)
    }

    static func message(_ result: Result<[UInt8], CodecFailure>) -> String {
        switch result {
        case .success: "accepted"
        case .failure(let failure): failure.description
        }
    }

    /// `count` zeros as raw deflate from a fresh stream, ended by Z_FULL_FLUSH: byte-aligned and
    /// needing no earlier bytes, so copies of it follow one another in one valid stream.
    static func fullyFlushedZeros(_ count: Int) throws -> [UInt8] {
        // On the heap: zlib keeps the stream's address and checks it on every call.
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        defer { stream.deallocate() }
        try #require(deflateInit2_(stream, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK)
        defer { deflateEnd(stream) }
        var input = [UInt8](repeating: 0, count: count)
        var output = [UInt8](repeating: 0, count: count / 100 + 1024)
        let produced = input.withUnsafeMutableBufferPointer { input in
            output.withUnsafeMutableBufferPointer { output in
                stream.pointee.next_in = input.baseAddress
                stream.pointee.avail_in = uInt(input.count)
                stream.pointee.next_out = output.baseAddress
                stream.pointee.avail_out = uInt(output.count)
                let code = deflate(stream, Z_FULL_FLUSH)
                return code == Z_OK && stream.pointee.avail_in == 0 && stream.pointee.avail_out > 0 ? output.count - Int(stream.pointee.avail_out) : -1
            }
        }
        try #require(produced > 0)
        return Array(output.prefix(produced))
    }
}
