#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Reads `handle` to its end with `read(2)`, retrying on `EINTR`: Foundation's
/// `readDataToEndOfFile()` and `availableData` trap (`try!`) on an interrupted read, which a
/// signal to the test process (a child's SIGCHLD under load) causes now and then.
public func readToEnd(_ handle: FileHandle, stopAfterNewline: Bool = false) -> Data {
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = buffer.withUnsafeMutableBytes { Glibc.read(handle.fileDescriptor, $0.baseAddress, $0.count) }
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { return data }
        data.append(contentsOf: buffer[0..<count])
        if stopAfterNewline, buffer[0..<count].contains(UInt8(ascii: "\n")) { return data }
    }
}
