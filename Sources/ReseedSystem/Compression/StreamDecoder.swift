import Crypto
import SystemPackage

/// A streaming decoder with a bound on what it produces (``GzipDecoder``, ``XzDecoder``): fed the
/// compressed bytes in pieces of any size, it hands the decompressed bytes to a closure as they
/// come, and ``finish(_:)`` hands out what the decoder still holds and says whether the stream was whole.
package protocol StreamDecoder: ~Copyable {
    /// Decodes `input`, the next piece of the stream, handing each piece of output to `body`.
    ///
    /// - Throws: ``CodecFailure`` for a stream it refuses, or what `body` threw. After a failure
    ///   the decoder is not to be used again.
    mutating func feed(_ input: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws(CodecFailure) -> Void) throws(CodecFailure)

    /// Hands `body` any output the decoder still holds once the input has ended (a decoder that
    /// writes all it can as it is fed hands none), then checks that the stream was whole.
    ///
    /// - Throws: ``CodecFailure/invalid(_:)`` naming where a truncated stream ends, or what `body` threw.
    mutating func finish(_ body: (UnsafeRawBufferPointer) throws(CodecFailure) -> Void) throws(CodecFailure)
}

extension StreamDecoder where Self: ~Copyable {
    /// Decodes `source` (from its current offset to its end) into `destination`, hashing the
    /// decompressed bytes in the same pass when asked: every codec's `decompress`.
    ///
    /// The mirror of ``FileCopier/copy(from:to:)`` for a compressed file: the result counts and
    /// hashes the bytes written, not the bytes read. Each chunk written has its writeback started
    /// at once, as the copier does. The decoder's own bound keeps a bomb from writing past its limit.
    ///
    /// - Throws: ``CodecFailure/io(_:)`` for a failed read or write; the decoder's verdict on the stream.
    package consuming func decode(
        from source: borrowing OwnedDescriptor, to destination: borrowing OwnedDescriptor, hashing: Bool,
        progress: (@Sendable (Int64) -> Void)?
    ) throws(CodecFailure) -> FileCopier.Result {
        source.adviseSequential()
        var hasher = hashing ? SHA256() : nil
        let input = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.readSize, alignment: 4096)
        defer { input.deallocate() }
        var total: Int64 = 0
        func write(_ piece: UnsafeRawBufferPointer) throws(CodecFailure) {
            hasher?.update(bufferPointer: piece)
            do throws(Errno) { try destination.writeAll(piece) } catch { throw .io(error) }
            destination.startWriteback(from: total, count: Int64(piece.count))
            total += Int64(piece.count)
            progress?(total)
        }
        while true {
            let count: Int
            do { count = try source.read(into: input) } catch { throw .io(error) }
            if count == 0 { break }
            try feed(UnsafeRawBufferPointer(rebasing: input[0..<count]), write)
        }
        try finish(write)
        return FileCopier.Result(bytes: total, sha256: hasher.map { $0.finalize().hexString }, method: .decode)
    }

    /// The size of the read buffer (1 MiB).
    static var readSize: Int { 1 << 20 }
}
