import Foundation
import Reseed
import ReseedSystem
import ReseedTestSupport
import Testing

/// What every codec's tests check the same way: a decoder fed in pieces, a stream cut anywhere,
/// random damage, and a round trip against the codec's own tool.
enum StreamChecks {
    /// Decodes `stream` with a decoder `make` starts, in pieces of `piece` bytes; the output, or the failure.
    static func decode<Decoder: StreamDecoder & ~Copyable>(
        _ stream: [UInt8], limit: Int64, piece: Int, _ make: (Int64) throws(CodecFailure) -> Decoder
    ) -> Result<[UInt8], CodecFailure> {
        stream.withUnsafeBytes { all in
            do throws(CodecFailure) {
                var decoder = try make(limit)
                var output: [UInt8] = []
                var start = 0
                while start < all.count {
                    let end = min(all.count, start + piece)
                    try decoder.feed(UnsafeRawBufferPointer(rebasing: all[start..<end])) { output += $0 }
                    start = end
                }
                try decoder.finish { output += $0 }
                return .success(output)
            } catch {
                return .failure(error)
            }
        }
    }

    /// Feeds `stream` to a decoder `make` starts with `limit`, in pieces of `piece` bytes, until it
    /// refuses the stream or the stream ends (no `finish()`): its failure, the bytes it handed out and
    /// the bytes it was fed, so a bomb's test can say how soon it stopped.
    static func feedUntilRefused<Decoder: StreamDecoder & ~Copyable>(
        _ stream: [UInt8], limit: Int64, piece: Int, _ make: (Int64) throws(CodecFailure) -> Decoder
    ) -> (failure: CodecFailure?, handedOut: Int64, fed: Int) {
        var handedOut: Int64 = 0
        var fed = 0
        let failure = stream.withUnsafeBytes { all -> CodecFailure? in
            do throws(CodecFailure) {
                var decoder = try make(limit)
                while fed < all.count {
                    let end = min(all.count, fed + piece)
                    try decoder.feed(UnsafeRawBufferPointer(rebasing: all[fed..<end])) { handedOut += Int64($0.count) }
                    fed = end
                }
                return nil
            } catch {
                return error
            }
        }
        return (failure, handedOut, fed)
    }

    /// `bytes` compressed by `codec` into `<name><suffix>` in `folder`, the sizes it reports checked.
    static func compressed(_ bytes: [UInt8], with codec: any Codec, in folder: TemporaryDirectory, as name: String) throws -> URL {
        let plain = folder.appending(name)
        try Data(bytes).write(to: plain)
        let packed = folder.appending(name + codec.fileSuffix)
        let source = try FileSystem.openRegularFile(plain.path)
        #expect(FileManager.default.createFile(atPath: packed.path, contents: nil))
        let destination = try FileSystem.openRegularFile(packed.path, access: .writeOnly)
        let sizes = try codec.compress(from: source, to: destination)
        #expect(sizes.read == Int64(bytes.count))
        #expect(sizes.written == Int64(try Data(contentsOf: packed).count))
        return packed
    }

    /// `size` bytes of ``GzipTests/sample(_:seed:)`` through `codec` and back: read by `tool -dc`,
    /// by the codec into a file with its SHA-256, and by `decode` in pieces of every awkward size.
    static func roundTrip(size: Int, codec: any Codec, tool: String, decode: ([UInt8], Int) -> Result<[UInt8], CodecFailure>) throws {
        let folder = try TemporaryDirectory(prefix: "reseed-\(codec.name)")
        let bytes = GzipTests.sample(size, seed: UInt64(size))
        let packed = try compressed(bytes, with: codec, in: folder, as: "data")
        let theirs = try GzipTests.shell("\(tool) -dc \(GzipTests.quoted(packed))")
        #expect(theirs.status == 0)
        #expect(theirs.output == Data(bytes))
        let out = folder.appending("out")
        let result = try folder.withDescriptors(packed, out) { source, destination in
            try codec.decompress(from: source, to: destination, limit: Int64(size), hashing: true, progress: nil)
        }
        #expect(result.bytes == Int64(size))
        #expect(try Data(contentsOf: out) == Data(bytes))
        #expect(result.sha256 == (try FileFacts(path: out.path)).sha256)
        let stream = try [UInt8](Data(contentsOf: packed))
        for piece in [1, 7, 4096] where stream.count / piece < 200_000 {
            #expect(try decode(stream, piece).get() == bytes)
        }
    }

    /// Every prefix of `stream` is refused as truncated.
    static func expectEveryCutTruncated(_ stream: [UInt8], decode: ([UInt8]) -> Result<[UInt8], CodecFailure>) {
        var failures = FuzzFailures()
        for cut in 0..<stream.count {
            let result = decode(Array(stream.prefix(cut)))
            guard case .failure(.invalid(let reason)) = result else {
                failures.check(false, "cut at \(cut): \(result)")
                continue
            }
            failures.check(reason.hasPrefix("truncated"), "cut at \(cut): \(reason)")
        }
        #expect(failures.count == 0, "\(failures.summary)")
    }

    /// `cases` damaged copies of `stream` (`damage` makes each): the decoder never traps, refuses
    /// them as invalid or too long, and what it accepts is `original`. Returns how many it accepted.
    static func acceptedDamaged(
        _ stream: [UInt8], original: [UInt8], cases: Int, seed: UInt64,
        damage: (inout [UInt8], Int, inout SplitMix64) -> Void, decode: ([UInt8], Int64, Int) -> Result<[UInt8], CodecFailure>
    ) -> Int {
        var random = SplitMix64(seed: seed)
        var failures = FuzzFailures()
        var accepted = 0
        for index in 0..<cases {
            var damaged = stream
            damage(&damaged, index, &random)
            switch decode(damaged, Int64(original.count) * 4, random.pick([1, 100, 1 << 16])) {
            case .success(let output):
                accepted += 1
                failures.check(output == original, "case \(index): accepted different output")
            case .failure(.invalid), .failure(.tooLong):
                break
            case .failure(let other):
                failures.check(false, "case \(index): \(other)")
            }
        }
        #expect(failures.count == 0, "\(failures.summary)")
        return accepted
    }

    /// Flips one to three random bytes of `bytes`.
    static func flipBytes(_ bytes: inout [UInt8], random: inout SplitMix64) {
        for _ in 0..<random.int(1..<4) {
            bytes[random.int(0..<bytes.count)] ^= UInt8(truncatingIfNeeded: random.int(1..<256))
        }
    }
}

extension TemporaryDirectory {
    /// Runs `body` with `input` opened for reading and `output` created for writing.
    func withDescriptors<T>(_ input: URL, _ output: URL, _ body: (borrowing OwnedDescriptor, borrowing OwnedDescriptor) throws -> T) throws -> T {
        let source = try FileSystem.openRegularFile(input.path)
        let destination = try FileSystem().openDirectory(output.deletingLastPathComponent(), create: false).createExclusive(output.lastPathComponent)
        return try body(source, destination)
    }
}
