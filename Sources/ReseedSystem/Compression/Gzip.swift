import CZlib
import SystemPackage

/// The gzip codec of compressed seeds (RFC 1952: one member around raw deflate), over the system zlib.
///
/// zlib is in every OS Reseed runs on (libz in Apple's SDKs, `zlib1g` on Debian), so no C code is
/// vendored. Both directions stream through bounded buffers: a seed of any size is never held
/// in memory.
///
/// ```swift
/// let sizes = try Gzip.compress(from: database, to: compressed)
/// let copied = try Gzip.decompress(from: compressed, to: copy, limit: manifest.size, hashing: true)
/// ```
package enum Gzip {
    /// The name manifests give this codec.
    package static let name = "gzip"
    /// The suffix of a file it compressed.
    package static let fileSuffix = ".gz"
    /// The size of the read buffer and of the compressed output buffer.
    static let bufferSize = 1 << 20
    /// The two bytes every gzip member starts with.
    package static let magic: [UInt8] = [0x1f, 0x8b]
    /// The OS byte of the headers this codec writes: 255, "unknown", on every platform, so the
    /// same input gives the same bytes everywhere (zlib's own header writes 3 on Linux, 19 on macOS).
    static let osUnknown: UInt8 = 255

    /// The gzip header this codec writes: no name, no time (MTIME 0), no flags, XFL from `level`,
    /// OS 255. Fixed bytes, so the same input gives the same file on every platform and run.
    package static func header(level: Int32) -> [UInt8] {
        // XFL: 2 = maximum compression, 4 = fastest, as gzip(1) writes them.
        let extraFlags: UInt8 = level >= 9 ? 2 : level == 1 ? 4 : 0
        return magic + [8, 0, 0, 0, 0, 0, extraFlags, osUnknown]
    }

    /// Compresses all of `source` (from its current offset) into `destination` as one gzip member.
    ///
    /// Raw deflate (`deflateInit2`, window bits -15, memory level 8, default strategy) between a
    /// header written here (``header(level:)``) and the CRC-32 and length trailer. One thread,
    /// fixed parameters: the output depends only on the input and zlib's deflate, whose output
    /// has not changed across zlib 1.2.x releases; a system whose libz is zlib-ng writes other,
    /// equally valid bytes.
    ///
    /// - Parameter level: zlib's 1 (fastest) to 9 (smallest). Default 9.
    /// - Returns: the bytes read and written.
    /// - Throws: ``CodecFailure/io(_:)`` for a failed read or write, ``CodecFailure/zlib(code:message:)``
    ///   when zlib cannot start (out of memory, a level outside 0...9).
    package static func compress(
        from source: borrowing OwnedDescriptor, to destination: borrowing OwnedDescriptor, level: Int32 = 9
    ) throws(CodecFailure) -> (read: Int64, written: Int64) {
        let stream = try ZStream.deflating(level: level)
        let input = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 4096)
        defer { input.deallocate() }
        let output = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 4096)
        defer { output.deallocate() }

        let header = header(level: level)
        try write(destination, header)
        var written = Int64(header.count)
        var read: Int64 = 0
        var crc = crc32(0, nil, 0)
        var finished = false
        while !finished {
            let count: Int
            do { count = try source.read(into: input) } catch { throw .io(error) }
            let flush = count == 0 ? Z_FINISH : Z_NO_FLUSH
            if count > 0 {
                crc = crc32(crc, input.baseAddress?.assumingMemoryBound(to: Bytef.self), uInt(count))
                read += Int64(count)
            }
            stream.pointer.pointee.next_in = input.baseAddress?.assumingMemoryBound(to: Bytef.self)
            stream.pointer.pointee.avail_in = uInt(count)
            // Until deflate has taken all the input (and, on Z_FINISH, written its end).
            repeat {
                stream.pointer.pointee.next_out = output.baseAddress?.assumingMemoryBound(to: Bytef.self)
                stream.pointer.pointee.avail_out = uInt(output.count)
                let code = deflate(stream.pointer, flush)
                // Z_BUF_ERROR only says no progress was possible this call; anything else below zero is a failure.
                guard code >= 0 || code == Z_BUF_ERROR else { throw stream.failure(code) }
                let produced = output.count - Int(stream.pointer.pointee.avail_out)
                if produced > 0 {
                    try write(destination, UnsafeRawBufferPointer(rebasing: output[0..<produced]))
                    written += Int64(produced)
                }
                if code == Z_STREAM_END { finished = true }
            } while stream.pointer.pointee.avail_out == 0 && !finished
        }
        let trailer = littleEndian(UInt32(truncatingIfNeeded: crc)) + littleEndian(UInt32(truncatingIfNeeded: read))
        try write(destination, trailer)
        return (read, written + Int64(trailer.count))
    }

    /// Decompresses the gzip member in `source` (from its current offset to its end) into
    /// `destination`, hashing the decompressed bytes in the same pass when asked.
    ///
    /// The mirror of ``FileCopier/copy(from:to:)`` for a compressed seed: the result counts and
    /// hashes the bytes written, not the bytes read. Each chunk written has its writeback started
    /// at once, as the copier does. Nothing is written past `limit`: a stream that would inflate
    /// further (a gzip bomb) stops after `limit + 1` bytes have been inflated, in memory.
    ///
    /// - Parameters:
    ///   - limit: the most bytes the stream may decompress to (a seed's manifest size).
    ///   - hashing: whether to compute the SHA-256 of the decompressed bytes.
    ///   - progress: called with the decompressed bytes written so far.
    /// - Throws: ``CodecFailure/io(_:)`` for a failed read or write; ``CodecFailure/invalid(_:)`` naming
    ///   what is wrong with the stream (see ``GzipDecoder``); ``CodecFailure/tooLong(limit:)``.
    package static func decompress(
        from source: borrowing OwnedDescriptor, to destination: borrowing OwnedDescriptor, limit: Int64, hashing: Bool,
        progress: (@Sendable (Int64) -> Void)? = nil
    ) throws(CodecFailure) -> FileCopier.Result {
        try GzipDecoder(limit: limit).decode(from: source, to: destination, hashing: hashing, progress: progress)
    }

    private static func write(_ file: borrowing OwnedDescriptor, _ bytes: [UInt8]) throws(CodecFailure) {
        do { try file.writeAll(bytes) } catch { throw .io(error) }
    }

    private static func write(_ file: borrowing OwnedDescriptor, _ buffer: UnsafeRawBufferPointer) throws(CodecFailure) {
        do { try file.writeAll(buffer) } catch { throw .io(error) }
    }

    /// The four bytes of `value`, least significant first, as gzip's trailer stores them.
    static func littleEndian(_ value: UInt32) -> [UInt8] {
        (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }
}

/// A zlib stream, owned by one value: zlib keeps a pointer back to it, so it lives at a fixed
/// address on the heap, and `deflateEnd`/`inflateEnd` runs exactly once, when the value ends.
struct ZStream: ~Copyable {
    let pointer: UnsafeMutablePointer<z_stream>
    private let inflating: Bool

    private init(inflating: Bool, _ start: (UnsafeMutablePointer<z_stream>) -> Int32) throws(CodecFailure) {
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: z_stream())
        let code = start(pointer)
        guard code == Z_OK else {
            let failure = CodecFailure.library(code: code, message: Self.message(pointer, code))
            pointer.deallocate()
            throw failure
        }
        self.inflating = inflating
    }

    /// Raw deflate at `level`, window bits -15 (no zlib or gzip wrapper: the codec writes its own).
    static func deflating(level: Int32) throws(CodecFailure) -> ZStream {
        try ZStream(inflating: false) {
            deflateInit2_($0, level, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        }
    }

    /// Raw inflate, window bits -15.
    static func inflating() throws(CodecFailure) -> ZStream {
        try ZStream(inflating: true) { inflateInit2_($0, -MAX_WBITS, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) }
    }

    /// The failure of a call that returned `code`.
    func failure(_ code: Int32) -> CodecFailure {
        .library(code: code, message: Self.message(pointer, code))
    }

    /// zlib's message for the last failure, or the name of `code`.
    static func message(_ stream: UnsafeMutablePointer<z_stream>, _ code: Int32) -> String {
        if let text = stream.pointee.msg { return String(cString: text) }
        return switch code {
        case Z_MEM_ERROR: "out of memory"
        case Z_STREAM_ERROR: "inconsistent stream or bad parameter"
        case Z_VERSION_ERROR: "incompatible zlib version"
        case Z_DATA_ERROR: "invalid data"
        default: "error \(code)"
        }
    }

    deinit {
        _ = inflating ? inflateEnd(pointer) : deflateEnd(pointer)
        pointer.deallocate()
    }
}
