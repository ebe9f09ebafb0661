/// A way a seed file or a channel file is compressed: gzip, and xz where liblzma is (Linux). A new
/// codec (zstd, LZFSE) is its implementation in this folder, and a case of Reseed's
/// `SeedManifest.Compression` (which conforms to this protocol, and `Codecs.all` lists).
///
/// Both directions stream between two descriptors through bounded buffers: a seed of any size is
/// never held in memory, and the same input gives the same bytes on every platform and run.
package protocol Codec: Sendable {
    /// The name manifests and channel files give the codec (`"gzip"`).
    var name: String { get }
    /// The suffix of a file it compressed (`".gz"`).
    var fileSuffix: String { get }

    /// Compresses everything `source` reads into `destination`.
    ///
    /// - Returns: the bytes read and written.
    /// - Throws: ``CodecFailure``.
    func compress(from source: borrowing OwnedDescriptor, to destination: borrowing OwnedDescriptor) throws(CodecFailure) -> (read: Int64, written: Int64)

    /// Decompresses `source` into `destination`, refusing past `limit` bytes out
    /// (``CodecFailure/tooLong(limit:)``: a bomb never inflates more than `limit + 1` bytes).
    ///
    /// - Parameters:
    ///   - hashing: whether to compute the SHA-256 of the decompressed bytes.
    ///   - progress: called with the decompressed bytes written so far.
    /// - Throws: ``CodecFailure``: ``CodecFailure/io(_:)`` for a failed read or write, the others
    ///   for a stream that does not decode (a verdict on the input).
    func decompress(
        from source: borrowing OwnedDescriptor, to destination: borrowing OwnedDescriptor, limit: Int64, hashing: Bool,
        progress: (@Sendable (Int64) -> Void)?
    ) throws(CodecFailure) -> FileCopier.Result
}
