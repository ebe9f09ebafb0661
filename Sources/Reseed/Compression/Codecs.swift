import ReseedSystem

/// The codecs this Reseed reads and writes: one per case of ``SeedManifest/Compression``.
package enum Codecs {
    /// Every codec.
    package static let all: [any Codec] = SeedManifest.Compression.allCases.map(\.codec)

    /// The codec `reseed package --compress` writes, and `reseed publish` writes first (every channel offers it).
    package static var written: any Codec { SeedManifest.Compression.written.codec }

    /// The codecs `reseed publish` writes each channel file with: ``written`` first (the one older apps
    /// read), then the others this platform has (xz on Linux), which apps that decode them prefer when smaller.
    package static var published: [any Codec] {
        [written] + all.filter { $0.name != written.name }
    }

    /// The codec called `name`; nil for one this Reseed does not know.
    static func named(_ name: String) -> (any Codec)? {
        all.first { $0.name == name }
    }
}

/// Each compression is its codec: gzip over the system zlib (see `Gzip`), xz over the system liblzma (see `Xz`).
extension SeedManifest.Compression: Codec {
    package var name: String { rawValue }

    package var fileSuffix: String {
        switch self {
        case .gzip: Gzip.fileSuffix
        #if canImport(CLzma)
        case .xz: Xz.fileSuffix
        #endif
        }
    }

    package func compress(from source: borrowing OwnedDescriptor, to destination: borrowing OwnedDescriptor) throws(CodecFailure) -> (read: Int64, written: Int64) {
        switch self {
        case .gzip: try Gzip.compress(from: source, to: destination)
        #if canImport(CLzma)
        case .xz: try Xz.compress(from: source, to: destination)
        #endif
        }
    }

    package func decompress(
        from source: borrowing OwnedDescriptor, to destination: borrowing OwnedDescriptor, limit: Int64, hashing: Bool,
        progress: (@Sendable (Int64) -> Void)?
    ) throws(CodecFailure) -> FileCopier.Result {
        switch self {
        case .gzip: try Gzip.decompress(from: source, to: destination, limit: limit, hashing: hashing, progress: progress)
        #if canImport(CLzma)
        case .xz: try Xz.decompress(from: source, to: destination, limit: limit, hashing: hashing, progress: progress)
        #endif
        }
    }
}
