import Crypto
import Foundation
import Synchronization
import SystemPackage

/// Copies one open file into another as fast as the OS allows, optionally hashing it in the same pass.
///
/// Without hashing it tries, in order: a clone (`FICLONE` on Linux, `fcopyfile` on
/// Apple platforms), `copy_file_range(2)` in large chunks, then a read/write loop
/// with a 1 MiB buffer. With hashing it reads each block once, hashes it and
/// writes it, so the SHA-256 costs no second read of the source.
///
/// Each chunk written has its writeback started at once
/// (`sync_file_range(SYNC_FILE_RANGE_WRITE)`): with gigabytes of RAM the kernel would
/// otherwise keep a whole seed dirty until the caller's fsync and write it only then, after
/// the copy and the hashing instead of beside them (measured in `Benchmarks/README.md`, figure 4).
package struct FileCopier: Sendable {
    /// The buffer of the read/write loop; large enough that syscalls are not the cost.
    static let bufferSize = 1 << 20
    /// The most one `copy_file_range` call is asked for, so progress is reported while it runs.
    static let rangeChunk = 64 << 20

    /// How the bytes got into the destination.
    package enum Method: String, Sendable {
        /// The destination shares the source's blocks (`FICLONE`, or `fcopyfile` on Apple platforms):
        /// nothing was written but metadata.
        case clone
        /// The kernel copied, in `copy_file_range(2)` chunks.
        case copyFileRange
        /// A read/write loop through a 1 MiB buffer.
        case readWrite
        /// A codec wrote what it decoded (a compressed seed).
        case decode
    }

    /// What a copy did.
    package struct Result: Sendable {
        package var bytes: Int64
        /// Lowercase hex SHA-256 of the bytes read, when hashing was asked for.
        package var sha256: String?
        package var method: Method

        package init(bytes: Int64, sha256: String?, method: Method) {
            self.bytes = bytes
            self.sha256 = sha256
            self.method = method
        }
    }

    package var hashing: Bool
    /// The most bytes copied: a source that goes on (a file that grows, a huge sparse file) stops
    /// there. Give the expected size plus one, and a longer source shows as `bytes > size`.
    package var limit: Int64
    package var progress: (@Sendable (Int64) -> Void)?

    package init(hashing: Bool, limit: Int64 = .max, progress: (@Sendable (Int64) -> Void)? = nil) {
        self.hashing = hashing
        self.limit = limit
        self.progress = progress
    }

    /// How much to ask for next: `chunk`, or what is left under ``limit``.
    private func next(_ chunk: Int, after total: Int64) -> Int {
        Int(min(Int64(chunk), max(0, limit - total)))
    }

    /// Copies `source` (from its start, at most ``limit`` bytes) into `destination` (at its current offset, expected empty).
    package func copy(from source: borrowing OwnedDescriptor, to destination: borrowing OwnedDescriptor) throws(Errno) -> Result {
        try copy(from: source.raw, to: destination.raw)
    }

    private func copy(from source: Int32, to destination: Int32) throws(Errno) -> Result {
        Syscalls.adviseSequential(source)
        if hashing {
            if let result = try copyHashingBehind(source, destination) { return result }
            return try readHashWrite(source, destination)
        }
        let size = try Syscalls.fstat(source).size
        if size <= limit, (try? Syscalls.cloneFile(from: source, to: destination)) != nil {
            progress?(size)
            return Result(bytes: size, sha256: nil, method: .clone)
        }
        if size <= limit, (try? Syscalls.copyFileData(from: source, to: destination)) != nil {
            progress?(size)
            return Result(bytes: size, sha256: nil, method: .clone)
        }
        if let copied = try copyFileRange(source, destination) {
            return Result(bytes: copied, sha256: nil, method: .copyFileRange)
        }
        return try readHashWrite(source, destination)
    }

    /// nil when the kernel cannot `copy_file_range` between these files (nothing was written then).
    private func copyFileRange(_ source: Int32, _ destination: Int32) throws(Errno) -> Int64? {
        var total: Int64 = 0
        while true {
            let want = next(Self.rangeChunk, after: total)
            if want == 0 { return total }
            let count: Int
            do {
                count = try Syscalls.copyFileRange(from: source, to: destination, length: want)
            } catch where total == 0 && Self.unsupported.contains(error) {
                return nil
            }
            if count == 0 { return total }
            Syscalls.startWriteback(destination, from: total, count: Int64(count))
            total += Int64(count)
            progress?(total)
        }
    }

    /// The kernel copies (`copy_file_range`, chunk by chunk) while another thread hashes what has
    /// landed in the destination, reading it back from the page cache: on 2 cores the hash costs
    /// no time beside the copy, and it covers the bytes written, not just the bytes read.
    /// Faster than read-hash-write in 1 MiB blocks (measured in `Benchmarks/README.md`, figure 4).
    /// Nil when the kernel cannot `copy_file_range` between these files (nothing was written then).
    private func copyHashingBehind(_ source: Int32, _ destination: Int32) throws(Errno) -> Result? {
        let chunk = 8 << 20
        let first: Int
        do {
            first = try Syscalls.copyFileRange(from: source, to: destination, length: next(chunk, after: 0))
        } catch where Self.unsupported.contains(error) {
            return nil
        }
        Syscalls.startWriteback(destination, from: 0, count: Int64(first))
        let copied = CopyProgress(first)
        progress?(Int64(first))
        // The hasher's own thread: never one of the few the app's async tasks run on.
        let hasher = BlockingThread.start("reseed-hash") { Self.hashWhileCopied(destination, copied) }
        var total = Int64(first)
        var failure: Errno?
        if first > 0 {
            while true {
                do {
                    let want = next(chunk, after: total)
                    if want == 0 { break }
                    let count = try Syscalls.copyFileRange(from: source, to: destination, length: want)
                    if count == 0 { break }
                    Syscalls.startWriteback(destination, from: total, count: Int64(count))
                    total += Int64(count)
                    copied.advance(to: total)
                    progress?(total)
                } catch {
                    failure = error
                    break
                }
            }
        }
        copied.finish()
        let digest = hasher.join()
        if let failure { throw failure }
        return Result(bytes: total, sha256: try digest.get(), method: .copyFileRange)
    }

    /// Hashes `file` from its start as far as `copied` says the copy has gone, until it is finished.
    private static func hashWhileCopied(_ file: Int32, _ copied: CopyProgress) -> Swift.Result<String, Errno> {
        var hasher = SHA256()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 4096)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while let available = copied.wait(beyond: offset) {
            while offset < available {
                let want = Int(min(Int64(bufferSize), available - offset))
                let count: Int
                do {
                    count = try Syscalls.pread(file, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), at: offset)
                } catch {
                    return .failure(error)
                }
                if count == 0 { return .failure(.ioError) }
                hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                offset += Int64(count)
            }
        }
        return .success(hasher.finalize().hexString)
    }

    private static let unsupported: Set<Errno> = [.noFunction, .notSupported, .improperLink, .invalidArgument, .badFileDescriptor, .notPermitted]

    private func readHashWrite(_ source: Int32, _ destination: Int32) throws(Errno) -> Result {
        var hasher = hashing ? SHA256() : nil
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.bufferSize, alignment: 4096)
        defer { buffer.deallocate() }
        var total: Int64 = 0
        while true {
            let want = next(Self.bufferSize, after: total)
            if want == 0 { break }
            let count = try Syscalls.read(source, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]))
            if count == 0 { break }
            let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
            hasher?.update(bufferPointer: chunk)
            try Syscalls.writeAll(destination, chunk)
            Syscalls.startWriteback(destination, from: total, count: Int64(count))
            total += Int64(count)
            progress?(total)
        }
        let digest = hasher.map { $0.finalize().hexString }
        return Result(bytes: total, sha256: digest, method: .readWrite)
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

/// How far a copy has gone, for a hasher that follows it.
private final class CopyProgress: Sendable {
    private struct State {
        var copied: Int64
        var finished = false
    }

    private let state: Mutex<State>
    private let moved = DispatchSemaphore(value: 0)

    init(_ copied: Int) {
        state = Mutex(State(copied: Int64(copied)))
    }

    func advance(to copied: Int64) {
        state.withLock { $0.copied = copied }
        moved.signal()
    }

    func finish() {
        state.withLock { $0.finished = true }
        moved.signal()
    }

    /// Waits until more than `offset` bytes are copied; returns how many, or nil once the copy
    /// is finished and everything up to its end has been handed out.
    func wait(beyond offset: Int64) -> Int64? {
        while true {
            let (copied, finished) = state.withLock { ($0.copied, $0.finished) }
            if copied > offset { return copied }
            if finished { return nil }
            moved.wait()
        }
    }
}
