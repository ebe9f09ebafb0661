import Crypto
import SystemPackage

extension FileCopier {
    /// SHA-256 of a whole file, read sequentially in large blocks.
    package static func hash(_ fd: Int32) throws(Errno) -> (bytes: Int64, sha256: String) {
        Syscalls.adviseSequential(fd)
        var hasher = SHA256()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 4096)
        defer { buffer.deallocate() }
        var total: Int64 = 0
        var offset: Int64 = 0
        while true {
            let count = try Syscalls.pread(fd, into: buffer, at: offset)
            if count == 0 { break }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            total += Int64(count)
            offset += Int64(count)
        }
        return (total, hasher.finalize().hexString)
    }
}
