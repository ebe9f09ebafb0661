#if !canImport(CLzma) && canImport(Compression)
import Compression

/// A streaming decoder of exactly one .xz stream on Apple platforms, over the Compression
/// framework's `COMPRESSION_LZMA` (LZMA2 in the .xz container), with the same bounds and the same
/// API as liblzma's decoder on Linux (see the other `XzDecoder`).
///
/// The framework checks the stream's structure and its check; it has no memory limit, so the
/// first block's dictionary is checked against ``memoryLimit`` before the framework sees a byte
/// (``XzHeaderCheck``: the publisher writes one block). It refuses, naming what is wrong: a stream
/// that does not start with the xz magic, a dictionary over the limit, data the framework cannot
/// decode (corrupt, or options it lacks), any byte after the stream, and (in ``finish(_:)``) a
/// stream that ends early. Output past ``limit`` stops it at once with
/// ``CodecFailure/tooLong(limit:)``: a bomb never decompresses more than `limit + 1` bytes.
///
/// Not compiled on the Linux machines this package is tested on: the Linux decoder's tests
/// (`XzTests`) are the behaviour it must have.
package struct XzDecoder: StreamDecoder, ~Copyable {
    /// The most bytes the stream may decompress to.
    package let limit: Int64
    /// The decompressed bytes handed out so far.
    package private(set) var produced: Int64 = 0
    /// The largest first-block dictionary accepted (``XzDecoding/memoryLimit``, 96 MiB).
    package static let memoryLimit = XzDecoding.memoryLimit

    /// Whether any input arrived, and whether the stream's end did.
    private var started = false, ended = false
    private var header = XzHeaderCheck(memoryLimit: memoryLimit)
    /// The framework's stream: it keeps its state behind it, so it lives at a fixed address.
    private let stream: UnsafeMutablePointer<compression_stream>
    private let output: UnsafeMutablePointer<UInt8>

    /// A decoder that refuses to decompress more than `limit` bytes.
    ///
    /// - Throws: ``CodecFailure/library(code:message:)`` when the framework cannot start a decoder.
    package init(limit: Int64) throws(CodecFailure) {
        self.limit = max(0, limit)
        let stream = UnsafeMutablePointer<compression_stream>.allocate(capacity: 1)
        // compression_stream_init sets every field of the structure.
        guard compression_stream_init(stream, COMPRESSION_STREAM_DECODE, COMPRESSION_LZMA) == COMPRESSION_STATUS_OK else {
            stream.deallocate()
            throw .library(code: -1, message: "the Compression framework cannot start an LZMA decoder")
        }
        self.stream = stream
        output = .allocate(capacity: XzDecoding.pieceSize)
    }

    deinit {
        compression_stream_destroy(stream)
        stream.deallocate()
        output.deallocate()
    }

    /// Decodes `input`, the next piece of the stream, handing each piece of output to `body`.
    ///
    /// - Throws: ``CodecFailure`` for a stream it refuses (see ``XzDecoder``), or what `body` threw.
    ///   After a failure the decoder is not to be used again.
    package mutating func feed(_ input: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws(CodecFailure) -> Void) throws(CodecFailure) {
        guard let base = input.baseAddress, !input.isEmpty else { return }
        guard !ended else { throw XzDecoding.trailing(input.count) }
        try header.take(input)
        started = true
        stream.pointee.src_ptr = base.assumingMemoryBound(to: UInt8.self)
        stream.pointee.src_size = input.count
        try run(finalize: false, body)
    }

    /// Hands out what the framework still holds, then checks that the stream was whole.
    ///
    /// - Throws: ``CodecFailure/invalid(_:)`` for a truncated stream, or what `body` threw.
    package mutating func finish(_ body: (UnsafeRawBufferPointer) throws(CodecFailure) -> Void) throws(CodecFailure) {
        if !started { throw XzDecoding.empty }
        if !ended {
            // No input left: a valid pointer to no bytes.
            stream.pointee.src_ptr = UnsafePointer(output)
            stream.pointee.src_size = 0
            try run(finalize: true, body)
        }
        if !ended { throw XzDecoding.truncated }
    }

    /// Runs the framework over the input it holds until it needs more, or the stream ends.
    private mutating func run(finalize: Bool, _ body: (UnsafeRawBufferPointer) throws(CodecFailure) -> Void) throws(CodecFailure) {
        let flags = finalize ? Int32(COMPRESSION_STREAM_FINALIZE.rawValue) : 0
        while true {
            // Room for at most one byte past the limit, to see that the stream goes on.
            let left = limit - produced
            let room = left >= Int64(XzDecoding.pieceSize) ? XzDecoding.pieceSize : Int(left) + 1
            stream.pointee.dst_ptr = output
            stream.pointee.dst_size = room
            let availableBefore = stream.pointee.src_size
            let status = compression_stream_process(stream, flags)
            guard status != COMPRESSION_STATUS_ERROR else {
                throw .invalid("the Compression framework cannot decode it (corrupt data, or options it does not support)")
            }
            let count = room - stream.pointee.dst_size
            if count > 0 {
                guard Int64(count) <= left else { throw .tooLong(limit: limit) }
                produced += Int64(count)
                try body(UnsafeRawBufferPointer(start: output, count: count))
            }
            if status == COMPRESSION_STATUS_END {
                ended = true
                if stream.pointee.src_size > 0 { throw XzDecoding.trailing(stream.pointee.src_size) }
                return
            }
            // All input taken and the output not full: the rest of the stream is in the next piece
            // (or, when finalizing, the stream ended early: `finish` says so).
            if stream.pointee.src_size == 0, stream.pointee.dst_size > 0 { return }
            // Input left, room for output, and no progress: the same call would make none again (a
            // framework that reports the end only when finalizing stops taking input there).
            if count == 0, stream.pointee.src_size == availableBefore {
                throw .invalid("the Compression framework takes no more of it: bytes follow the end of the xz stream, or data it cannot decode")
            }
        }
    }
}
#endif
