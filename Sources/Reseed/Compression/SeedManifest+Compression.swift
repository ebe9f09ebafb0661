import ReseedSystem

extension SeedManifest {
    /// How a seed file is compressed in the app bundle (the manifest's `"compression"`).
    public enum Compression: String, Sendable, Hashable, CaseIterable {
        /// One gzip member (RFC 1952) around raw deflate: see <doc:CompressingTheSeed>.
        case gzip

        /// The compression `reseed package --compress` writes.
        public static let written = Compression.gzip

        /// The codec that reads and writes it.
        package var codec: any Codec {
            switch self {
            case .gzip: GzipCodec()
            }
        }

        /// The compression of a channel file encoded as `encoding`; nil for one this Reseed does not know.
        init?(encoding: String) {
            self.init(rawValue: encoding)
        }
    }
}
