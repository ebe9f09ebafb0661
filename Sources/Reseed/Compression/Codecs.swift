import ReseedSystem

/// The codecs this Reseed reads and writes: one per case of ``SeedManifest/Compression``.
package enum Codecs {
    /// Every codec.
    package static let all: [any Codec] = SeedManifest.Compression.allCases.map(\.codec)

    /// The codec `reseed package --compress` writes, and `reseed publish` writes first (every channel offers it).
    package static var written: any Codec { SeedManifest.Compression.written.codec }

    /// The codec called `name`; nil for one this Reseed does not know.
    static func named(_ name: String) -> (any Codec)? {
        all.first { $0.name == name }
    }
}

/// A compression's codec: gzip over the system zlib (see `Gzip`), xz over the system liblzma on Linux
/// and the Compression framework on Apple platforms, which only read it (see `Xz`).
struct CompressionCodec: Codec {
    let compression: SeedManifest.Compression

    var name: String { compression.rawValue }

    var fileSuffix: String {
        switch compression {
        case .gzip: Gzip.fileSuffix
        #if canImport(CLzma) || canImport(Compression)
        case .xz: Xz.fileSuffix
        #endif
        }
    }

    func compress(from source: borrowing OwnedDescriptor, to destination: borrowing OwnedDescriptor) throws(CodecFailure) -> (read: Int64, written: Int64) {
        switch compression {
        case .gzip: try Gzip.compress(from: source, to: destination)
        #if canImport(CLzma) || canImport(Compression)
        case .xz: try Xz.compress(from: source, to: destination)
        #endif
        }
    }

    func decompress(
        from source: borrowing OwnedDescriptor, to destination: borrowing OwnedDescriptor, limit: Int64, hashing: Bool,
        progress: (@Sendable (Int64) -> Void)?
    ) throws(CodecFailure) -> FileCopier.Result {
        switch compression {
        case .gzip: try Gzip.decompress(from: source, to: destination, limit: limit, hashing: hashing, progress: progress)
        #if canImport(CLzma) || canImport(Compression)
        case .xz: try Xz.decompress(from: source, to: destination, limit: limit, hashing: hashing, progress: progress)
        #endif
        }
    }
}
