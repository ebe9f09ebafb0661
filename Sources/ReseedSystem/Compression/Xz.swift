#if canImport(CLzma) || canImport(Compression)
#if canImport(CLzma)
import CLzma
#endif
import SystemPackage

/// The xz codec of channel files (the .xz format: LZMA2 in one stream, CRC-64 check): written and
/// read over the system liblzma on Linux; read by the Compression framework (`COMPRESSION_LZMA`)
/// on Apple platforms, which write none (see ``compress(from:to:preset:)``).
///
/// For a database it writes about 0.6× what gzip -9 does (PROJ's registry: see figure 13 in
/// `Benchmarks/README.md`), at the cost of a slower compression and a decoder that holds the
/// dictionary (at most the seed's size, 64 MiB) in memory. Both directions stream through
/// bounded buffers, as ``Gzip`` does.
///
/// ```swift
/// let sizes = try Xz.compress(from: database, to: compressed)
/// let copied = try Xz.decompress(from: compressed, to: copy, limit: manifest.size, hashing: true)
/// ```
package enum Xz {
    /// The name manifests give this codec.
    package static let name = "xz"
    /// The suffix of a file it compressed.
    package static let fileSuffix = ".xz"
    /// The six bytes every xz stream starts with.
    package static let magic: [UInt8] = [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]
    /// The size of the read buffer and of the compressed output buffer.
    static let bufferSize = 1 << 20

    /// Decompresses the xz stream in `source` (from its current offset to its end) into
    /// `destination`, hashing the decompressed bytes in the same pass when asked.
    ///
    /// Nothing is written past `limit`: a stream that would decompress further stops after
    /// `limit + 1` bytes, in memory; one whose dictionary needs more than
    /// ``XzDecoder/memoryLimit`` is refused before any is allocated.
    ///
    /// - Throws: ``CodecFailure/io(_:)`` for a failed read or write; ``CodecFailure/invalid(_:)`` naming
    ///   what is wrong with the stream (see ``XzDecoder``); ``CodecFailure/tooLong(limit:)``.
    package static func decompress(
        from source: borrowing OwnedDescriptor, to destination: borrowing OwnedDescriptor, limit: Int64, hashing: Bool,
        progress: (@Sendable (Int64) -> Void)? = nil
    ) throws(CodecFailure) -> FileCopier.Result {
        try XzDecoder(limit: limit).decode(from: source, to: destination, hashing: hashing, progress: progress)
    }
}

#if canImport(CLzma)
extension Xz {
    /// Compresses all of `source` (from its current offset) into `destination` as one xz stream.
    ///
    /// LZMA2 with `xz -9`'s options (`lzma_lzma_preset(9)`), but a dictionary no larger than the
    /// source (at least 4 KiB) when its size is known: the same output for a smaller seed, and a
    /// decoder that allocates no more than the seed's size. CRC-64 check, one thread, one block:
    /// the same input gives the same bytes on every run.
    ///
    /// - Parameter preset: liblzma's 0 (fastest) to 9 (smallest). Default 9.
    /// - Returns: the bytes read and written.
    /// - Throws: ``CodecFailure/io(_:)`` for a failed read or write, ``CodecFailure/library(code:message:)``
    ///   when liblzma cannot start (out of memory, a preset outside 0...9).
    package static func compress(
        from source: borrowing OwnedDescriptor, to destination: borrowing OwnedDescriptor, preset: UInt32 = 9
    ) throws(CodecFailure) -> (read: Int64, written: Int64) {
        let size = (try? source.status().size) ?? 0
        let stream = try XzStream.encoding(preset: preset, sourceSize: size)
        let input = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 4096)
        defer { input.deallocate() }
        let output = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 4096)
        defer { output.deallocate() }
        let z = stream.pointer
        var read: Int64 = 0, written: Int64 = 0
        var finished = false
        while !finished {
            let count: Int
            do { count = try source.read(into: input) } catch { throw .io(error) }
            read += Int64(count)
            z.pointee.next_in = UnsafePointer(input.baseAddress?.assumingMemoryBound(to: UInt8.self))
            z.pointee.avail_in = count
            let action = count == 0 ? LZMA_FINISH : LZMA_RUN
            // Until liblzma has taken all the input (and, on LZMA_FINISH, written the stream's end).
            repeat {
                z.pointee.next_out = output.baseAddress?.assumingMemoryBound(to: UInt8.self)
                z.pointee.avail_out = output.count
                let code = lzma_code(z, action)
                guard code == LZMA_OK || code == LZMA_STREAM_END else { throw XzStream.failure(code) }
                let produced = output.count - z.pointee.avail_out
                if produced > 0 {
                    do { try destination.writeAll(UnsafeRawBufferPointer(rebasing: output[0..<produced])) } catch { throw .io(error) }
                    written += Int64(produced)
                }
                if code == LZMA_STREAM_END { finished = true }
            } while (z.pointee.avail_in > 0 || z.pointee.avail_out == 0) && !finished
        }
        return (read, written)
    }
}

/// A liblzma stream, owned by one value: liblzma keeps its state behind it, so it lives at a fixed
/// address on the heap, and `lzma_end` runs exactly once, when the value ends.
struct XzStream: ~Copyable {
    let pointer: UnsafeMutablePointer<lzma_stream>

    private init(_ start: (UnsafeMutablePointer<lzma_stream>) -> lzma_ret) throws(CodecFailure) {
        pointer = .allocate(capacity: 1)
        // All zeros: LZMA_STREAM_INIT.
        pointer.initialize(to: lzma_stream())
        let code = start(pointer)
        guard code == LZMA_OK else {
            lzma_end(pointer)
            pointer.deallocate()
            throw Self.failure(code)
        }
    }

    /// An encoder of one .xz stream: LZMA2 at `preset`, the dictionary cut to `sourceSize` when known.
    static func encoding(preset: UInt32, sourceSize: Int64) throws(CodecFailure) -> XzStream {
        var options = lzma_options_lzma()
        // lzma_lzma_preset returns true on failure.
        if lzma_lzma_preset(&options, preset) != 0 { throw .library(code: Int32(LZMA_OPTIONS_ERROR.rawValue), message: "no preset \(preset)") }
        if sourceSize > 0 {
            options.dict_size = UInt32(clamping: min(Int64(options.dict_size), max(4096, sourceSize)))
        }
        return try withUnsafeMutablePointer(to: &options) { options throws(CodecFailure) in
            var filters = [
                lzma_filter(id: reseed_lzma_filter_lzma2, options: UnsafeMutableRawPointer(options)),
                lzma_filter(id: reseed_lzma_vli_unknown, options: nil),
            ]
            return try XzStream { lzma_stream_encoder($0, &filters, LZMA_CHECK_CRC64) }
        }
    }

    /// A decoder of exactly one .xz stream (no concatenated streams, no padding after it), refusing a
    /// dictionary that needs more than `memoryLimit` bytes.
    static func decoding(memoryLimit: UInt64) throws(CodecFailure) -> XzStream {
        try XzStream { lzma_stream_decoder($0, memoryLimit, 0) }
    }

    /// The failure of a call that returned `code`.
    static func failure(_ code: lzma_ret) -> CodecFailure {
        .library(code: Int32(code.rawValue), message: message(code))
    }

    /// What `code` means, in liblzma's words.
    static func message(_ code: lzma_ret) -> String {
        switch code {
        case LZMA_MEM_ERROR: "out of memory"
        case LZMA_MEMLIMIT_ERROR: "the memory limit was reached"
        case LZMA_FORMAT_ERROR: "not the .xz format"
        case LZMA_OPTIONS_ERROR: "unsupported options"
        case LZMA_DATA_ERROR: "corrupt data"
        case LZMA_BUF_ERROR: "no progress is possible"
        case LZMA_PROG_ERROR: "programming error (a bad argument)"
        case LZMA_UNSUPPORTED_CHECK: "unsupported integrity check"
        default: "error \(code.rawValue)"
        }
    }

    deinit {
        lzma_end(pointer)
        pointer.deallocate()
    }
}
#else
extension Xz {
    /// Refuses: the Compression framework's LZMA encoder has one preset and writes other bytes than
    /// liblzma, and a channel's files must be the same bytes wherever they are published.
    ///
    /// - Throws: ``CodecFailure/library(code:message:)``, always.
    package static func compress(
        from source: borrowing OwnedDescriptor, to destination: borrowing OwnedDescriptor, preset: UInt32 = 9
    ) throws(CodecFailure) -> (read: Int64, written: Int64) {
        throw .library(code: 0, message: "xz files are written only where liblzma is (Linux); publish from there, or write gzip only")
    }
}
#endif
#endif
