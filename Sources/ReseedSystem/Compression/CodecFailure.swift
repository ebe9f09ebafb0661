import SystemPackage

/// Why a compressed stream could not be read or written, whatever its codec.
package enum CodecFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// A read or write of a file failed.
    case io(Errno)
    /// The bytes are not a stream this decoder accepts; the text says what is wrong.
    case invalid(String)
    /// The stream decompresses to more than `limit` bytes; decompression stopped there.
    case tooLong(limit: Int64)
    /// The codec's library itself failed (out of memory, a bad argument): its return code and message.
    case library(code: Int32, message: String)

    package var description: String {
        switch self {
        case .io(let errno): "read or write failed: \(errno.phrase)"
        case .invalid(let reason): "not a valid compressed stream: \(reason)"
        case .tooLong(let limit): "the stream decompresses to more than \(limit) bytes; decompression stopped there"
        case .library(let code, let message): "the compression library failed (\(code)): \(message)"
        }
    }
}
