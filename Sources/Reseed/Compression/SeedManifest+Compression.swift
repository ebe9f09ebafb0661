import ReseedSystem

extension SeedManifest {
    /// How a seed file is compressed in the app bundle (the manifest's `"compression"`), or a
    /// channel file is encoded (its `"encoding"`).
    public enum Compression: String, Sendable, Hashable, CaseIterable {
        /// One gzip member (RFC 1952) around raw deflate: see <doc:CompressingTheSeed>.
        case gzip
        #if canImport(CLzma) || canImport(Compression)
        /// One .xz stream (LZMA2): read and written over the system liblzma on Linux, read by the
        /// Compression framework (`COMPRESSION_LZMA`) on Apple platforms, which do not write it.
        case xz
        #endif

        /// The compression `reseed package --compress` writes, and every channel offers.
        public static let written = Compression.gzip

        /// The compressions `reseed publish` writes each channel file in: ``written`` first (what
        /// every app reads), then the others this platform writes (xz on Linux), listed as its alternatives.
        public static var published: [Compression] {
            #if canImport(CLzma)
            [written] + allCases.filter { $0 != written }
            #else
            [written]
            #endif
        }

        /// The codec that reads and writes it.
        package var codec: any Codec { CompressionCodec(compression: self) }

        /// The compression of a channel file encoded as `encoding`; nil for one this Reseed does not know.
        init?(encoding: String) {
            self.init(rawValue: encoding)
        }
    }
}
