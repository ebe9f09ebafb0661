#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Crypto
import Foundation
import SystemPackage

/// Copies one open file into another as fast as the OS allows, optionally hashing it in the same pass.
///
/// Without hashing it tries, in order: a clone (`FICLONE` on Linux, `fcopyfile` on
/// Apple platforms), `copy_file_range(2)` in large chunks, then a read/write loop
/// with a 1 MiB buffer. With hashing it reads each block once, hashes it and
/// writes it, so the SHA-256 costs no second read of the source.
package struct FileCopier: Sendable {
    /// The buffer of the read/write loop; large enough that syscalls are not the cost.
    package static let bufferSize = 1 << 20
    /// The most one `copy_file_range` call is asked for, so progress is reported while it runs.
    package static let rangeChunk = 64 << 20

    /// How the bytes were moved.
    package enum Method: String, Sendable { case clone, copyFileRange, readWrite, readHashWrite }

    /// What a copy did.
    package struct Result: Sendable {
        package var bytes: Int64
        package var method: Method
        /// Lowercase hex SHA-256 of the bytes read, when hashing was asked for.
        package var sha256: String?
    }

    package var hashing: Bool
    package var progress: (@Sendable (Int64) -> Void)?

    package init(hashing: Bool, progress: (@Sendable (Int64) -> Void)? = nil) {
        self.hashing = hashing
        self.progress = progress
    }

    /// Copies all of `source` (from its start) into `destination` (at its current offset, expected empty).
    package func copy(from source: Int32, to destination: Int32) throws(Errno) -> Result {
        Syscalls.adviseSequential(source)
        if hashing { return try readHashWrite(source, destination) }
        let size = Int64(try Syscalls.fstat(source).st_size)
        if (try? Syscalls.cloneFile(from: source, to: destination)) != nil {
            progress?(size)
            return Result(bytes: size, method: .clone, sha256: nil)
        }
        #if canImport(Darwin)
        if fcopyfile(source, destination, nil, copyfile_flags_t(COPYFILE_DATA)) == 0 {
            progress?(size)
            return Result(bytes: size, method: .clone, sha256: nil)
        }
        #endif
        if let copied = try copyFileRange(source, destination) {
            return Result(bytes: copied, method: .copyFileRange, sha256: nil)
        }
        return try readHashWrite(source, destination)
    }

    /// nil when the kernel cannot `copy_file_range` between these files (nothing was written then).
    private func copyFileRange(_ source: Int32, _ destination: Int32) throws(Errno) -> Int64? {
        var total: Int64 = 0
        while true {
            let count: Int
            do {
                count = try Syscalls.copyFileRange(from: source, to: destination, length: Self.rangeChunk)
            } catch where total == 0 && Self.unsupported.contains(error) {
                return nil
            }
            if count == 0 { return total }
            total += Int64(count)
            progress?(total)
        }
    }

    private static let unsupported: Set<Errno> = [.noFunction, .notSupported, .improperLink, .invalidArgument, .badFileDescriptor, .notPermitted]

    private func readHashWrite(_ source: Int32, _ destination: Int32) throws(Errno) -> Result {
        var hasher = hashing ? SHA256() : nil
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.bufferSize, alignment: 4096)
        defer { buffer.deallocate() }
        var total: Int64 = 0
        while true {
            let count = try Syscalls.read(source, into: buffer)
            if count == 0 { break }
            let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
            hasher?.update(bufferPointer: chunk)
            try Syscalls.writeAll(destination, chunk)
            total += Int64(count)
            progress?(total)
        }
        let digest = hasher.map { $0.finalize().hexString }
        return Result(bytes: total, method: hashing ? .readHashWrite : .readWrite, sha256: digest)
    }
}

extension Sequence where Element == UInt8 {
    /// Lowercase hexadecimal, two digits a byte.
    package var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(64)
        for byte in self {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
