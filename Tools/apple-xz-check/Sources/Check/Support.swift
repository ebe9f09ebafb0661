package enum CodecFailure: Error, Sendable, Equatable {
    case invalid(String)
    case tooLong(limit: Int64)
    case library(code: Int32, message: String)
}
package protocol StreamDecoder: ~Copyable {
    mutating func feed(_ input: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws(CodecFailure) -> Void) throws(CodecFailure)
    mutating func finish(_ body: (UnsafeRawBufferPointer) throws(CodecFailure) -> Void) throws(CodecFailure)
}
enum Xz { static let magic: [UInt8] = [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00] }
