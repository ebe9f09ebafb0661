#if canImport(CLzma)
import CLzma

/// A streaming decoder of exactly one .xz stream, with a bound on what it produces and on the
/// memory it takes.
///
/// Feed it the compressed bytes in pieces of any size; it hands the decompressed bytes to a
/// closure, in pieces of at most 256 KiB, as they come. ``finish(_:)`` then says whether the
/// stream was whole. liblzma checks the stream's structure: its header and footer, each block's
/// header, sizes and check (CRC-64 as `xz` writes it, or CRC-32, SHA-256, none), and the index
/// against the blocks.
///
/// It refuses, naming what is wrong (``CodecFailure/invalid(_:)``): a stream that does not start
/// with the xz magic, options liblzma does not support, corrupt data (a check, a size or the index
/// that does not match), a dictionary needing more memory than ``memoryLimit`` (refused before it
/// is allocated), any byte after the stream (a second stream or padding included), and (in
/// ``finish(_:)``) a stream that ends early. Output past ``limit`` stops it at once with
/// ``CodecFailure/tooLong(limit:)``: a bomb never decompresses more than `limit + 1` bytes.
///
/// ```swift
/// var decoder = try XzDecoder(limit: 1 << 30)
/// try decoder.feed(piece) { output in hasher.update(bufferPointer: output) }
/// try decoder.finish { output in hasher.update(bufferPointer: output) }
/// ```
package struct XzDecoder: StreamDecoder, ~Copyable {
    /// The most bytes the stream may decompress to.
    package let limit: Int64
    /// The decompressed bytes handed out so far.
    package private(set) var produced: Int64 = 0
    /// The most memory the decoder may take (``XzDecoding/memoryLimit``, 96 MiB).
    package static let memoryLimit = XzDecoding.memoryLimit

    /// Whether any input arrived, and whether the stream's end did.
    private var started = false, ended = false
    /// The stream's start, checked before liblzma sees it (the same sentences as on Apple platforms).
    private var header = XzHeaderCheck(memoryLimit: memoryLimit)
    private let stream: XzStream
    private let output: UnsafeMutableRawBufferPointer

    /// A decoder that refuses to decompress more than `limit` bytes.
    ///
    /// - Throws: ``CodecFailure/library(code:message:)`` when liblzma cannot start (out of memory).
    package init(limit: Int64) throws(CodecFailure) {
        self.limit = max(0, limit)
        stream = try XzStream.decoding(memoryLimit: Self.memoryLimit)
        output = .allocate(byteCount: XzDecoding.pieceSize, alignment: 4096)
    }

    deinit {
        output.deallocate()
    }

    /// Decodes `input`, the next piece of the stream, handing each piece of output to `body`.
    ///
    /// - Throws: ``CodecFailure`` for a stream it refuses (see ``XzDecoder``), or what `body` threw.
    ///   After a failure the decoder is not to be used again.
    package mutating func feed(_ input: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws(CodecFailure) -> Void) throws(CodecFailure) {
        guard !input.isEmpty else { return }
        guard !ended else { throw XzDecoding.trailing(input.count) }
        try header.take(input)
        started = true
        let z = stream.pointer
        z.pointee.next_in = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
        z.pointee.avail_in = input.count
        while true {
            // Room for at most one byte past the limit, to see that the stream goes on.
            let left = limit - produced
            let room = left >= Int64(output.count) ? output.count : Int(left) + 1
            z.pointee.next_out = output.baseAddress?.assumingMemoryBound(to: UInt8.self)
            z.pointee.avail_out = room
            let availableBefore = z.pointee.avail_in
            let code = lzma_code(z, LZMA_RUN)
            let count = room - z.pointee.avail_out
            switch code {
            case LZMA_OK, LZMA_STREAM_END, LZMA_BUF_ERROR:
                break
            case LZMA_FORMAT_ERROR:
                throw .invalid("does not start with the xz magic bytes fd 37 7a 58 5a 00")
            case LZMA_OPTIONS_ERROR:
                throw .invalid("the stream uses options this decoder does not support")
            case LZMA_DATA_ERROR:
                throw .invalid("the compressed data is corrupt (a check, a size or the index does not match)")
            case LZMA_MEMLIMIT_ERROR:
                throw .invalid("the stream needs \(lzma_memusage(z) >> 20) MiB of memory to decode, more than the \(Self.memoryLimit >> 20) MiB allowed")
            default:
                throw XzStream.failure(code)
            }
            if count > 0 {
                guard Int64(count) <= left else { throw .tooLong(limit: limit) }
                produced += Int64(count)
                try body(UnsafeRawBufferPointer(rebasing: output[0..<count]))
            }
            if code == LZMA_STREAM_END {
                ended = true
                if z.pointee.avail_in > 0 { throw XzDecoding.trailing(z.pointee.avail_in) }
                return
            }
            // All input taken and the output not full: the rest of the stream is in the next piece.
            if z.pointee.avail_in == 0, z.pointee.avail_out > 0 { return }
            // Input left, room for output, and no progress: the same call would make none again.
            if count == 0, z.pointee.avail_in == availableBefore { throw XzStream.failure(code) }
        }
    }

    /// Checks that the stream was whole: header, blocks, index and footer.
    ///
    /// - Throws: ``CodecFailure/invalid(_:)`` for a truncated stream.
    package mutating func finish(_ body: (UnsafeRawBufferPointer) throws(CodecFailure) -> Void) throws(CodecFailure) {
        if !started { throw XzDecoding.empty }
        if !ended { throw XzDecoding.truncated }
    }
}
#endif
