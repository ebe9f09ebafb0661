import ReseedSystem

extension SeedManifest {
    /// How a seed file is compressed in the app bundle (the manifest's `"compression"`), or a
    /// channel file is encoded (its `"encoding"`).
    public enum Compression: String, Sendable, Hashable, CaseIterable {
        /// One gzip member (RFC 1952) around raw deflate: see <doc:CompressingTheSeed>.
        case gzip
        #if canImport(CLzma)
        /// One .xz stream (LZMA2), over the system liblzma: on Linux only, for now (an Apple app
        /// does not know the case, and takes a channel's gzip).
        case xz
        #endif

        /// The compression `reseed package --compress` writes, and every channel offers.
        public static let written = Compression.gzip

        /// The codec that reads and writes it: the compression itself (see `Codecs`).
        package var codec: any Codec { self }

        /// The compression of a channel file encoded as `encoding`; nil for one this Reseed does not know.
        init?(encoding: String) {
            self.init(rawValue: encoding)
        }
    }
}
