import Foundation
@testable import Reseed
import ReseedSystem
import ReseedTestSupport
import Testing

/// Every codec Reseed knows is one case of `SeedManifest.Compression`: the channel reads exactly
/// those encodings, and each codec gives back what it compressed, refusing past its limit.
@Suite struct CodecTests {
    @Test func theCodecsAreTheCompressionCasesAndTheChannelsEncodings() {
        #expect(Codecs.all.map(\.name) == SeedManifest.Compression.allCases.map(\.rawValue))
        #expect(ChannelManifest.File.knownEncodings == Set(SeedManifest.Compression.allCases.map(\.rawValue)))
        #expect(Codecs.written.name == SeedManifest.Compression.written.rawValue)
        for compression in SeedManifest.Compression.allCases {
            #expect(Codecs.named(compression.rawValue)?.name == compression.rawValue)
            #expect(SeedManifest.Compression(encoding: compression.codec.name) == compression)
        }
        #expect(Codecs.named("zstd") == nil)
    }

    @Test(arguments: SeedManifest.Compression.allCases)
    func eachCodecRoundTripsAndStopsAtItsLimit(compression: SeedManifest.Compression) throws {
        let directory = try TemporaryDirectory(prefix: "reseed-codec")
        var generator = SplitMix64(seed: 0xC0DEC)
        let original = Data((0..<300_000).map { index in index % 7 == 0 ? UInt8(truncatingIfNeeded: generator.next()) : UInt8(ascii: "a") + UInt8(index % 5) })
        let plain = directory.appending("plain"), packed = directory.appending("packed"), unpacked = directory.appending("unpacked")
        try original.write(to: plain)
        let codec = compression.codec
        try directory.withDescriptors(plain, packed) { source, destination in
            let sizes = try codec.compress(from: source, to: destination)
            #expect(sizes.read == Int64(original.count))
            #expect(sizes.written < sizes.read)
        }
        try directory.withDescriptors(packed, unpacked) { source, destination in
            let result = try codec.decompress(from: source, to: destination, limit: Int64(original.count), hashing: true, progress: nil)
            #expect(result.bytes == Int64(original.count))
        }
        #expect(try Data(contentsOf: unpacked) == original)
        try FileManager.default.removeItem(at: unpacked)
        try directory.withDescriptors(packed, unpacked) { source, destination in
            _ = #expect(throws: CodecFailure.tooLong(limit: 1000)) {
                try codec.decompress(from: source, to: destination, limit: 1000, hashing: false, progress: nil)
            }
        }
    }
}
