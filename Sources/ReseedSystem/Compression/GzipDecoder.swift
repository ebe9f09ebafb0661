import CZlib

/// A streaming decoder of exactly one gzip member, with a bound on what it produces.
///
/// Feed it the compressed bytes in pieces of any size; it hands the decompressed bytes to a
/// closure, in pieces of at most 256 KiB, as they come. ``finish(_:)`` then says whether the
/// stream was whole. Memory stays bounded whatever the input: zlib's 32 KiB window, one
/// output buffer, a header of at most a few hundred KiB parsed byte by byte (never kept).
///
/// It refuses, naming what is wrong (``CodecFailure/invalid(_:)``): a stream that does not
/// start with the gzip magic, a method other than deflate, reserved flag bits, a header CRC
/// (FHCRC) that does not match, an extra field, name or comment over 64 KiB, corrupt deflate
/// data, a CRC-32 or length (ISIZE, modulo 2^32) in the trailer that does not match the output,
/// any byte after the member (a second, concatenated member included), and (in ``finish(_:)``)
/// a stream that ends early. Output past ``limit`` stops it at once with
/// ``CodecFailure/tooLong(limit:)``: a gzip bomb never inflates more than `limit + 1` bytes.
/// FEXTRA, FNAME and FCOMMENT are read and skipped.
///
/// ```swift
/// var decoder = try GzipDecoder(limit: 1 << 30)
/// try decoder.feed(piece) { output in hasher.update(bufferPointer: output) }
/// try decoder.finish { output in hasher.update(bufferPointer: output) }
/// ```
package struct GzipDecoder: StreamDecoder, ~Copyable {
    /// The most bytes the stream may decompress to.
    package let limit: Int64
    /// The decompressed bytes handed out so far.
    package private(set) var produced: Int64 = 0
    /// The size of the pieces handed out.
    static let outputSize = 256 << 10
    /// The longest extra field, name or comment accepted in the header (64 KiB).
    package static let maximumHeaderField = 1 << 16

    private enum Phase: Equatable {
        /// The fixed ten bytes, collected.
        case fixed
        /// The two bytes of XLEN, then `remaining` bytes of FEXTRA.
        case extraLength, extra(remaining: Int)
        /// A zero-terminated name or comment, `length` bytes so far.
        case name(length: Int), comment(length: Int)
        /// The two bytes of the header's CRC-16.
        case headerCRC
        case deflate
        /// The eight bytes of CRC-32 and ISIZE, collected.
        case trailer
        case done
    }

    private var phase = Phase.fixed
    /// Header or trailer bytes collected across pieces.
    private var collected: [UInt8] = []
    private var flags: UInt8 = 0
    /// CRC-32 of the header bytes (for FHCRC), then of the output.
    private var headerCRC = crc32(0, nil, 0)
    private var outputCRC = crc32(0, nil, 0)
    private let stream: ZStream
    private let output: UnsafeMutableRawBufferPointer

    private static let flagHeaderCRC: UInt8 = 2, flagExtra: UInt8 = 4, flagName: UInt8 = 8, flagComment: UInt8 = 16

    /// A decoder that refuses to decompress more than `limit` bytes.
    ///
    /// - Throws: ``CodecFailure/library(code:message:)`` when zlib cannot start (out of memory).
    package init(limit: Int64) throws(CodecFailure) {
        self.limit = max(0, limit)
        stream = try ZStream.inflating()
        output = .allocate(byteCount: Self.outputSize, alignment: 4096)
    }

    deinit {
        output.deallocate()
    }

    /// Decodes `input`, the next piece of the stream, handing each piece of output to `body`.
    ///
    /// - Throws: ``CodecFailure`` for a stream it refuses (see ``GzipDecoder``), or what `body` threw.
    ///   After a failure the decoder is not to be used again.
    package mutating func feed(_ input: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws(CodecFailure) -> Void) throws(CodecFailure) {
        var rest = input[...]
        while let first = rest.first {
            switch phase {
            case .deflate:
                let consumed = try inflate(UnsafeRawBufferPointer(rebasing: rest), body)
                rest = rest.dropFirst(consumed)
            case .trailer:
                let taken = min(8 - collected.count, rest.count)
                collected += rest.prefix(taken)
                rest = rest.dropFirst(taken)
                if collected.count == 8 { try checkTrailer() }
            case .done:
                let member = first == Gzip.magic[0] && rest.dropFirst().first.map { $0 == Gzip.magic[1] } ?? true
                throw .invalid(member
                    ? "a second gzip member follows the first (concatenated members are not supported)"
                    : "\(rest.count)+ bytes follow the end of the gzip member")
            default:
                try header(first)
                rest = rest.dropFirst()
            }
        }
    }

    /// Checks that the stream was one whole member: header, deflate data and trailer.
    ///
    /// - Throws: ``CodecFailure/invalid(_:)`` naming where a truncated stream ends.
    package mutating func finish(_ body: (UnsafeRawBufferPointer) throws(CodecFailure) -> Void) throws(CodecFailure) {
        let part: String? = switch phase {
        case .done: nil
        case .fixed where collected.isEmpty: "the stream is empty"
        case .deflate: "the stream ends inside the compressed data"
        case .trailer: "the stream ends inside the 8-byte trailer"
        default: "the stream ends inside the header"
        }
        if let part { throw .invalid("truncated: " + part) }
    }

    /// Takes one header byte.
    private mutating func header(_ byte: UInt8) throws(CodecFailure) {
        if phase != .headerCRC {
            var byte = byte
            headerCRC = crc32(headerCRC, &byte, 1)
        }
        switch phase {
        case .fixed:
            collected.append(byte)
            guard collected.count == 10 else {
                if collected.count <= 2, byte != Gzip.magic[collected.count - 1] { throw .invalid("does not start with the gzip magic bytes 1f 8b") }
                if collected.count == 3, byte != 8 { throw .invalid("compression method \(byte), not 8 (deflate)") }
                if collected.count == 4, byte & 0xe0 != 0 {
                    throw .invalid("reserved header flag bits are set (flags 0x\(String(byte, radix: 16)))")
                }
                return
            }
            flags = collected[3]
            collected.removeAll()
            phase = .extraLength
            advanceHeader()
        case .extraLength:
            collected.append(byte)
            guard collected.count == 2 else { return }
            let length = Int(collected[0]) | Int(collected[1]) << 8
            collected.removeAll()
            phase = .extra(remaining: length)
            advanceHeader()
        case .extra(let remaining):
            phase = .extra(remaining: remaining - 1)
            advanceHeader()
        case .name(let length), .comment(let length):
            let isName = phase == .name(length: length)
            if byte == 0 {
                phase = isName ? .comment(length: 0) : .headerCRC
                advanceHeader()
                return
            }
            guard length < Self.maximumHeaderField else {
                throw .invalid("the header's \(isName ? "file name" : "comment") is longer than \(Self.maximumHeaderField) bytes")
            }
            phase = isName ? .name(length: length + 1) : .comment(length: length + 1)
        case .headerCRC:
            collected.append(byte)
            guard collected.count == 2 else { return }
            let stored = UInt16(collected[0]) | UInt16(collected[1]) << 8
            guard stored == UInt16(truncatingIfNeeded: headerCRC) else {
                throw .invalid("the header CRC is \(String(stored, radix: 16)), the header's bytes give \(String(UInt16(truncatingIfNeeded: headerCRC), radix: 16))")
            }
            collected.removeAll()
            phase = .deflate
        case .deflate, .trailer, .done:
            return
        }
    }

    /// Skips the optional header parts the flags do not announce.
    private mutating func advanceHeader() {
        while true {
            switch phase {
            case .extraLength where flags & Self.flagExtra == 0: phase = .name(length: 0)
            case .extra(remaining: 0): phase = .name(length: 0)
            case .name where flags & Self.flagName == 0: phase = .comment(length: 0)
            case .comment where flags & Self.flagComment == 0: phase = .headerCRC
            case .headerCRC where flags & Self.flagHeaderCRC == 0: phase = .deflate
            default: return
            }
        }
    }

    /// Inflates from `input` until it is used up or the deflate data ends; returns the bytes consumed.
    private mutating func inflate(_ input: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws(CodecFailure) -> Void) throws(CodecFailure) -> Int {
        let z = stream.pointer
        // zlib's next_in is not const, but inflate never writes through it.
        z.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
        z.pointee.avail_in = uInt(input.count)
        while true {
            // Room for at most one byte past the limit, to see that the stream goes on.
            let left = limit - produced
            let room = left >= Int64(output.count) ? output.count : Int(left) + 1
            z.pointee.next_out = output.baseAddress?.assumingMemoryBound(to: Bytef.self)
            z.pointee.avail_out = uInt(room)
            let availableBefore = z.pointee.avail_in
            let code = CZlib.inflate(z, Z_NO_FLUSH)
            let count = room - Int(z.pointee.avail_out)
            switch code {
            case Z_OK, Z_STREAM_END, Z_BUF_ERROR:
                break
            case Z_DATA_ERROR, Z_NEED_DICT:
                throw .invalid("the compressed data is corrupt (\(ZStream.message(z, code)))")
            default:
                throw stream.failure(code)
            }
            if count > 0 {
                guard Int64(count) <= left else { throw .tooLong(limit: limit) }
                let piece = UnsafeRawBufferPointer(rebasing: output[0..<count])
                outputCRC = crc32(outputCRC, piece.baseAddress?.assumingMemoryBound(to: Bytef.self), uInt(count))
                produced += Int64(count)
                try body(piece)
            }
            let consumed = input.count - Int(z.pointee.avail_in)
            if code == Z_STREAM_END {
                phase = .trailer
                return consumed
            }
            // All input taken: the rest of the stream is in the next piece.
            if z.pointee.avail_in == 0 { return consumed }
            // Input left, room for output, and no progress: the same call would make none again.
            if count == 0, z.pointee.avail_in == availableBefore { throw stream.failure(code) }
        }
    }

    private mutating func checkTrailer() throws(CodecFailure) {
        let crc = collected[0..<4].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let size = collected[4..<8].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let actualCRC = UInt32(truncatingIfNeeded: outputCRC)
        guard crc == actualCRC else {
            throw .invalid("the trailer's CRC-32 is \(String(crc, radix: 16)), the decompressed bytes give \(String(actualCRC, radix: 16))")
        }
        guard size == UInt32(truncatingIfNeeded: produced) else {
            throw .invalid("the trailer says \(size) bytes (modulo 2^32), the stream decompressed to \(produced)")
        }
        collected.removeAll()
        phase = .done
    }
}
