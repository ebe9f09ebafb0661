#if canImport(CLzma) || canImport(Compression)
/// The start of an .xz stream, read as it arrives and before a decoder allocates anything: the
/// stream header's magic bytes, and the first block's header, whose LZMA2 filter says how large a
/// dictionary the decoder will allocate.
///
/// Both xz decoders run it: liblzma's (Linux), which also enforces its own memory limit, and the
/// Compression framework's (Apple platforms), which has none, so that a stream asking for more
/// memory than ``XzDecoder/memoryLimit`` is refused with the same sentence on every platform.
/// It checks the first block only: the publisher writes one block (see `Xz.compress`); a later
/// block of a stream from elsewhere is bounded by liblzma's limit on Linux, and not at all on Apple
/// platforms. The block header's CRC-32 and everything after it are the decoder's to check.
struct XzHeaderCheck {
    /// The most bytes the check ever holds: the 12-byte stream header and a block header (1,024 at most).
    static let capacity = 12 + 1_024

    let memoryLimit: UInt64
    /// Whether the check has seen all it reads (or the stream has no block).
    private(set) var done = false
    private var bytes: [UInt8] = []

    init(memoryLimit: UInt64) {
        self.memoryLimit = memoryLimit
    }

    /// Takes the next piece of the stream; throws as soon as what has arrived is refused.
    mutating func take(_ input: UnsafeRawBufferPointer) throws(CodecFailure) {
        guard !done else { return }
        bytes += input.prefix(Self.capacity - bytes.count)
        let magic = Xz.magic
        if !zip(bytes, magic).allSatisfy({ $0 == $1 }) {
            throw .invalid("does not start with the xz magic bytes fd 37 7a 58 5a 00")
        }
        // The stream header (magic, flags, CRC-32), then the first block header's size byte: 0 is
        // the index of a stream without blocks.
        guard bytes.count > 12 else { return }
        guard bytes[12] != 0 else { done = true; return }
        let end = 12 + (Int(bytes[12]) + 1) * 4
        guard bytes.count >= end else { return }
        done = true
        try checkBlockHeader(bytes[13..<(end - 4)])
    }

    /// The block flags, the optional sizes and the filters (a block header without its size byte and CRC-32).
    private func checkBlockHeader(_ header: ArraySlice<UInt8>) throws(CodecFailure) {
        var reader = Reader(bytes: header)
        let flags = try reader.byte()
        if flags & 0x3C != 0 { throw .invalid("the first block's header sets reserved flags") }
        if flags & 0x40 != 0 { _ = try reader.integer() }  // the compressed size
        if flags & 0x80 != 0 { _ = try reader.integer() }  // the uncompressed size
        for _ in 0...(flags & 0x03) {
            let id = try reader.integer()
            let size = try reader.integer()
            guard size <= UInt64(header.count) else { throw Self.malformed }
            let properties = try reader.bytes(Int(size))
            guard id == 0x21 else { continue }
            // LZMA2's one property byte: the dictionary size, 2 or 3 times a power of two (40: 4 GiB − 1).
            guard properties.count == 1, let code = properties.first, code <= 40 else {
                throw .invalid("the first block's LZMA2 dictionary size is not one the format allows")
            }
            let dictionary: UInt64 = code == 40 ? UInt64(UInt32.max) : (2 | UInt64(code & 1)) << (UInt64(code) / 2 + 11)
            guard dictionary <= memoryLimit else {
                throw .invalid("the stream needs \(dictionary >> 20) MiB of memory to decode, more than the \(memoryLimit >> 20) MiB allowed")
            }
        }
    }

    private static let malformed = CodecFailure.invalid("the first block's header is malformed")

    /// Reads a block header's bytes and its variable-length integers (7 bits a byte, at most 9 bytes).
    private struct Reader {
        var bytes: ArraySlice<UInt8>

        mutating func byte() throws(CodecFailure) -> UInt8 {
            guard let first = bytes.popFirst() else { throw XzHeaderCheck.malformed }
            return first
        }

        mutating func integer() throws(CodecFailure) -> UInt64 {
            var value: UInt64 = 0
            for index in 0..<9 {
                let next = try byte()
                value |= UInt64(next & 0x7F) << (7 * UInt64(index))
                if next & 0x80 == 0 { return value }
            }
            throw XzHeaderCheck.malformed
        }

        mutating func bytes(_ count: Int) throws(CodecFailure) -> ArraySlice<UInt8> {
            guard bytes.count >= count else { throw XzHeaderCheck.malformed }
            defer { bytes = bytes.dropFirst(count) }
            return bytes.prefix(count)
        }
    }
}

/// What both xz decoders share (liblzma's on Linux, the Compression framework's on Apple
/// platforms): their bounds, and the refusals they word alike.
enum XzDecoding {
    /// The most memory a decoder may take (96 MiB): `xz -9`'s 64 MiB dictionary fits, a stream
    /// that asks for more (up to 4 GiB, which the format allows) is refused.
    static let memoryLimit: UInt64 = 96 << 20
    /// The size of the pieces a decoder hands out.
    static let pieceSize = 256 << 10

    static let empty = CodecFailure.invalid("truncated: the stream is empty")
    static let truncated = CodecFailure.invalid("truncated: the stream ends before the end of the xz stream")

    /// `count` or more bytes after the stream's end.
    static func trailing(_ count: Int) -> CodecFailure {
        .invalid("\(count)+ bytes follow the end of the xz stream (concatenated streams and padding are not supported)")
    }
}
#endif
