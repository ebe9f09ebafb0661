#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CReseedSystem
import SystemPackage

/// Every system call Reseed makes, in one place.
///
/// Each wrapper names the C call it wraps, retries `EINTR` (the only place
/// that does), and throws the failure as an `Errno` value. Nothing here knows
/// about seeds or stores: callers attach the path and the step. This is the one
/// file of the library that imports the C library: callers use swift-system's
/// types (`FileDescriptor.AccessMode`, `FileDescriptor.OpenOptions`, `FilePermissions`)
/// and ``FileStatus`` instead of `O_*`, `mode_t` and `struct stat`.
enum Syscalls {
    /// `AT_FDCWD`: a directory argument that resolves a relative name from the working directory.
    static let currentDirectory: Int32 = AT_FDCWD

    /// Runs `body` until it does not fail with `EINTR`.
    @inline(__always)
    static func retrying<T: FixedWidthInteger>(_ body: () -> T) throws(Errno) -> T {
        while true {
            let result = body()
            if result != -1 { return result }
            let code = Errno(rawValue: errno)
            if code != .interrupted { throw code }
        }
    }

    /// `openat(2)`, with `O_CLOEXEC` always added; `permissions` (less the umask) apply to a file `.create` makes.
    static func openat(
        _ directory: Int32, _ path: String, _ access: FileDescriptor.AccessMode, _ options: FileDescriptor.OpenOptions = [],
        permissions: FilePermissions = []
    ) throws(Errno) -> Int32 {
        let flags = access.rawValue | options.rawValue | O_CLOEXEC
        return try retrying { path.withCString { system_openat(directory, $0, flags, mode_t(permissions.rawValue)) } }
    }

    /// `close(2)`. `EINTR` is not retried: on Linux the descriptor is gone either way.
    /// Only ``OwnedDescriptor`` calls this: a descriptor is closed by the one value that owns it.
    static func close(_ fd: Int32) throws(Errno) {
        if system_close(fd) == -1 {
            let code = Errno(rawValue: errno)
            if code != .interrupted { throw code }
        }
    }

    /// `fsync(2)`; `fcntl(F_FULLFSYNC)` on Apple platforms, where fsync does not reach the medium.
    static func fsync(_ fd: Int32) throws(Errno) {
        #if canImport(Darwin)
        if (try? retrying { fcntl(fd, F_FULLFSYNC) }) != nil { return }
        #endif
        _ = try retrying { system_fsync(fd) }
    }

    /// `flock(2)` with `LOCK_NB`: returns false when another holder has the lock.
    static func tryLock(_ fd: Int32, exclusive: Bool) throws(Errno) -> Bool {
        do {
            _ = try retrying { flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) }
            return true
        } catch where error == .wouldBlock {
            return false
        }
    }

    /// `flock(fd, LOCK_UN)`.
    static func unlock(_ fd: Int32) throws(Errno) {
        _ = try retrying { flock(fd, LOCK_UN) }
    }

    /// `renameat(2)`: atomically replaces `to` when it exists.
    static func renameat(_ fromDirectory: Int32, _ from: String, _ toDirectory: Int32, _ to: String) throws(Errno) {
        _ = try retrying { system_renameat(fromDirectory, from, toDirectory, to) }
    }

    /// `renameat2(..., RENAME_NOREPLACE)`; on systems without it, `linkat(2)` then `unlinkat(2)`.
    static func renameNoReplace(_ fromDirectory: Int32, _ from: String, _ toDirectory: Int32, _ to: String) throws(Errno) {
        do {
            _ = try retrying { reseed_rename_noreplace(fromDirectory, from, toDirectory, to) }
        } catch where error == .noFunction || error == .invalidArgument {
            try linkat(fromDirectory, from, toDirectory, to)
            try unlinkat(fromDirectory, from)
        }
    }

    /// `linkat(2)` without following a symbolic link at `from`.
    static func linkat(_ fromDirectory: Int32, _ from: String, _ toDirectory: Int32, _ to: String) throws(Errno) {
        _ = try retrying { system_linkat(fromDirectory, from, toDirectory, to, 0) }
    }

    /// `unlinkat(2)` of a file.
    static func unlinkat(_ directory: Int32, _ path: String) throws(Errno) {
        _ = try retrying { system_unlinkat(directory, path, 0) }
    }

    /// `mkdirat(2)`.
    static func mkdirat(_ directory: Int32, _ path: String, _ permissions: FilePermissions) throws(Errno) {
        _ = try retrying { system_mkdirat(directory, path, mode_t(permissions.rawValue)) }
    }

    /// `fstat(2)`.
    static func fstat(_ fd: Int32) throws(Errno) -> FileStatus {
        var info = stat()
        _ = try retrying { system_fstat(fd, &info) }
        return FileStatus(info)
    }

    /// `fstatvfs(3)`: the bytes an unprivileged user may still write on the filesystem holding
    /// `fd` (`f_bavail * f_frsize`; the blocks kept for root are not counted).
    static func availableBytes(_ fd: Int32) throws(Errno) -> Int64 {
        var info = statvfs()
        _ = try retrying { system_fstatvfs(fd, &info) }
        let (bytes, overflow) = Int64(clamping: info.f_bavail).multipliedReportingOverflow(by: Int64(clamping: info.f_frsize))
        return overflow ? .max : bytes
    }

    /// `fstatat(2)` without following a final symbolic link; nil when the name does not exist.
    static func lstatat(_ directory: Int32, _ path: String) throws(Errno) -> FileStatus? {
        var info = stat()
        do {
            _ = try retrying { system_fstatat(directory, path, &info, AT_SYMLINK_NOFOLLOW) }
            return FileStatus(info)
        } catch where error == .noSuchFileOrDirectory {
            return nil
        }
    }

    /// `read(2)` into `buffer`; returns the count read, 0 at end of file.
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try retrying { system_read(fd, buffer.baseAddress, buffer.count) }
    }

    /// `pread(2)` until `buffer` is full or end of file; returns the count read.
    static func pread(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(Errno) -> Int {
        var done = 0
        while done < buffer.count {
            let count = try retrying {
                system_pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
            }
            if count == 0 { break }
            done += count
        }
        return done
    }

    /// `pread(2)` of up to `count` bytes at `offset`; fewer at end of file.
    static func pread(_ fd: Int32, count: Int, at offset: Int64) throws(Errno) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var failure: Errno?
        let done = bytes.withUnsafeMutableBytes { buffer -> Int in
            do throws(Errno) { return try pread(fd, into: buffer, at: offset) } catch { failure = error; return 0 }
        }
        if let failure { throw failure }
        bytes.removeSubrange(done...)
        return bytes
    }

    /// `write(2)` of all of `bytes`.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws(Errno) {
        var failure: Errno?
        bytes.withUnsafeBytes { buffer in
            do throws(Errno) { try writeAll(fd, buffer) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// `write(2)` until all of `buffer` is written.
    static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws(Errno) {
        var done = 0
        while done < buffer.count {
            done += try retrying { system_write(fd, buffer.baseAddress! + done, buffer.count - done) }
        }
    }

    /// `write(2)` until every byte of `bytes` is written to a descriptor that may be non-blocking
    /// (a standard stream another process set so): a short write goes on, `EINTR` is retried, a
    /// full descriptor (`EAGAIN`) is waited for with `poll(2)`, and a write of nothing is `EIO`.
    static func writeAllWaiting(_ fd: Int32, _ bytes: [UInt8]) throws(Errno) {
        var failure: Int32?
        bytes.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count, let base = buffer.baseAddress {
                let count = system_write(fd, base + done, buffer.count - done)
                if count > 0 {
                    done += count
                    continue
                }
                let code = count == 0 ? EIO : errno
                switch code {
                case EINTR:
                    continue
                case EAGAIN, EWOULDBLOCK:
                    var request = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                    if poll(&request, 1, -1) < 0, errno != EINTR {
                        failure = errno
                        return
                    }
                default:
                    failure = code
                    return
                }
            }
        }
        if let failure { throw Errno(rawValue: failure) }
    }

    /// `isatty(3)`: whether `fd` is a terminal.
    static func isTerminal(_ fd: Int32) -> Bool {
        isatty(fd) == 1
    }

    /// `pwrite(2)` until all of `buffer` is written at `offset`.
    static func pwriteAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, at offset: Int64) throws(Errno) {
        var done = 0
        while done < buffer.count {
            done += try retrying { system_pwrite(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done)) }
        }
    }

    /// `copy_file_range(2)`: returns the count copied, 0 at end of file.
    static func copyFileRange(from source: Int32, to destination: Int32, length: Int) throws(Errno) -> Int {
        try retrying { reseed_copy_file_range(source, destination, length) }
    }

    /// `ioctl(FICLONE)`: makes `destination` share `source`'s blocks (Btrfs, XFS).
    static func cloneFile(from source: Int32, to destination: Int32) throws(Errno) {
        _ = try retrying { reseed_ficlone(destination, source) }
    }

    /// `fcopyfile(3)` with `COPYFILE_DATA` on Apple platforms (a clone on APFS); elsewhere
    /// it throws `ENOTSUP` at once, without a system call.
    static func copyFileData(from source: Int32, to destination: Int32) throws(Errno) {
        #if canImport(Darwin)
        if fcopyfile(source, destination, nil, copyfile_flags_t(COPYFILE_DATA)) != 0 { throw Errno(rawValue: errno) }
        #else
        throw .notSupported
        #endif
    }

    /// `posix_fadvise(POSIX_FADV_SEQUENTIAL)`: a hint only, so failures are ignored.
    static func adviseSequential(_ fd: Int32) {
        _ = reseed_advise_sequential(fd)
    }

    /// `sync_file_range(SYNC_FILE_RANGE_WRITE)`: starts writing the range to disk now, without
    /// waiting, so a later fsync finds less to do. A hint only: failures are ignored (the fsync
    /// that makes the file durable reports any error).
    static func startWriteback(_ fd: Int32, from offset: Int64, count: Int64) {
        _ = reseed_start_writeback(fd, off_t(offset), off_t(count))
    }

    /// `ftruncate(2)`.
    static func ftruncate(_ fd: Int32, _ length: Int64) throws(Errno) {
        _ = try retrying { system_ftruncate(fd, off_t(length)) }
    }

    /// `fchmod(2)`: sets exactly `permissions`, whatever the umask.
    static func fchmod(_ fd: Int32, _ permissions: FilePermissions) throws(Errno) {
        _ = try retrying { system_fchmod(fd, mode_t(permissions.rawValue)) }
    }

    /// `realpath(3)`: the absolute path with every symbolic link resolved.
    ///
    /// - Throws: `Errno` when a component is missing (such as the target of a dangling link) or cannot be read.
    static func realpath(_ path: String) throws(Errno) -> String {
        guard let resolved = system_realpath(path) else { throw Errno(rawValue: errno) }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// `clock_gettime(2)` of the clock file systems stamp `st_mtim` with, in nanoseconds since 1970:
    /// `CLOCK_REALTIME_COARSE` on Linux (the kernel's tick, up to 10 ms behind the time), else `CLOCK_REALTIME`.
    static func fileClockNow() -> Int64 {
        var now = timespec()
        #if os(Linux)
        _ = clock_gettime(CLOCK_REALTIME_COARSE, &now)
        #else
        _ = clock_gettime(CLOCK_REALTIME, &now)
        #endif
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    /// `geteuid(2)`: the user this process acts as.
    static func effectiveUserID() -> UInt32 {
        UInt32(geteuid())
    }

    /// `pthread_create(3)` of a detached thread that runs ``runThreadJob(_:)`` with `context`;
    /// false when the system refuses a new thread (nothing ran then).
    static func spawnDetachedThread(_ context: UnsafeMutableRawPointer) -> Bool {
        var attributes = pthread_attr_t()
        guard pthread_attr_init(&attributes) == 0 else { return false }
        defer { pthread_attr_destroy(&attributes) }
        guard pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED)) == 0 else { return false }
        #if canImport(Darwin)
        var thread: pthread_t?
        #else
        var thread = pthread_t()
        #endif
        return pthread_create(&thread, &attributes, { runThreadJob($0) }, context) == 0
    }

    /// The names in the directory at `path`, but `.` and `..` (`opendir(3)`, `readdir(3)`, `closedir(3)`).
    ///
    /// Foundation's `contentsOfDirectory(atPath:)` costs several times more, on a launch's path.
    static func directoryNames(_ path: String) throws(Errno) -> [String] {
        guard let directory = opendir(path) else { throw Errno(rawValue: errno) }
        defer { closedir(directory) }
        var names: [String] = []
        errno = 0
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self))
            }
            if name != ".", name != ".." { names.append(name) }
        }
        if errno != 0 { throw Errno(rawValue: errno) }
        return names
    }

    /// Lowers the calling thread's priority (`reseed_lower_thread_priority`: `setpriority(2)` of its
    /// thread id to nice 10 on Linux, the utility QoS class on Apple platforms).
    static func lowerThreadPriority() -> Result<Void, Errno> {
        reseed_lower_thread_priority() == 0 ? .success(()) : .failure(Errno(rawValue: errno))
    }
}

/// What `fstat(2)` says of a file, in Swift types.
package struct FileStatus: Sendable {
    /// What kind of file it is (`st_mode & S_IFMT`).
    package enum Kind: Sendable, Hashable {
        case regular, directory, fifo, characterDevice, blockDevice, socket, symbolicLink
        /// A type this enum does not name; the octal `S_IFMT` bits.
        case other(UInt32)

        /// "a FIFO", "a directory", …, for error messages; nil for a regular file.
        package var nonRegularName: String? {
            switch self {
            case .regular: nil
            case .directory: "a directory"
            case .fifo: "a FIFO"
            case .characterDevice: "a character device"
            case .blockDevice: "a block device"
            case .socket: "a socket"
            case .symbolicLink: "a symbolic link"
            case .other(let bits): "of type \(String(bits, radix: 8))"
            }
        }
    }

    package var kind: Kind
    /// The permission bits, with set-user-ID, set-group-ID and sticky (`st_mode & 07777`).
    package var permissions: FilePermissions
    /// `st_size`.
    package var size: Int64
    /// `st_dev`: the device the file is on.
    package var device: UInt64
    /// `st_nlink`: how many names the file has.
    package var linkCount: UInt64
    /// `st_uid`.
    var ownerID: UInt32
    /// `st_ino`.
    package var inode: UInt64
    /// `st_mtim` and `st_ctim` in nanoseconds since 1970: when the data, and when the data or the inode, last changed.
    package var modified: Int64, changed: Int64

    /// The identity and the last change of the file, as one text: `device:inode:size:modified:changed`.
    /// Equal fingerprints say the file was not written, renamed over or truncated in between (as far
    /// as the clock's resolution tells, and unless someone set the times back on purpose).
    package var fingerprint: String { "\(device):\(inode):\(size):\(modified):\(changed)" }

    /// Whether a write to the file from now on gives it another modification time: the clock file
    /// systems stamp it with (``Syscalls/fileClockNow()``) has passed ``modified``. Until then a
    /// write in the same tick could leave ``fingerprint`` as it was.
    package var isBehindFileClock: Bool { Syscalls.fileClockNow() > modified }

    /// Whether the user this process acts as (`geteuid(2)`) owns the file.
    package var isOwnedByEffectiveUser: Bool { ownerID == Syscalls.effectiveUserID() }

    init(_ info: stat) {
        switch info.st_mode & S_IFMT {
        case S_IFREG: kind = .regular
        case S_IFDIR: kind = .directory
        case S_IFIFO: kind = .fifo
        case S_IFCHR: kind = .characterDevice
        case S_IFBLK: kind = .blockDevice
        case S_IFSOCK: kind = .socket
        case S_IFLNK: kind = .symbolicLink
        default: kind = .other(UInt32(info.st_mode & S_IFMT))
        }
        permissions = FilePermissions(rawValue: CModeT(info.st_mode & 0o7777))
        size = Int64(info.st_size)
        device = UInt64(info.st_dev)
        linkCount = UInt64(info.st_nlink)
        ownerID = UInt32(info.st_uid)
        inode = UInt64(info.st_ino)
        #if canImport(Darwin)
        modified = Int64(info.st_mtimespec.tv_sec) * 1_000_000_000 + Int64(info.st_mtimespec.tv_nsec)
        changed = Int64(info.st_ctimespec.tv_sec) * 1_000_000_000 + Int64(info.st_ctimespec.tv_nsec)
        #else
        modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        changed = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
        #endif
    }
}

// The C calls under names that do not collide with the wrappers above.
private func system_openat(_ a0: Int32, _ a1: UnsafePointer<CChar>, _ a2: Int32, _ a3: mode_t) -> Int32 { openat(a0, a1, a2, a3) }
private func system_close(_ a0: Int32) -> Int32 { close(a0) }
private func system_fsync(_ a0: Int32) -> Int32 { fsync(a0) }
private func system_renameat(_ a0: Int32, _ a1: String, _ a2: Int32, _ a3: String) -> Int32 { renameat(a0, a1, a2, a3) }
private func system_linkat(_ a0: Int32, _ a1: String, _ a2: Int32, _ a3: String, _ a4: Int32) -> Int32 { linkat(a0, a1, a2, a3, a4) }
private func system_unlinkat(_ a0: Int32, _ a1: String, _ a2: Int32) -> Int32 { unlinkat(a0, a1, a2) }
private func system_mkdirat(_ a0: Int32, _ a1: String, _ a2: mode_t) -> Int32 { mkdirat(a0, a1, a2) }
private func system_fstat(_ a0: Int32, _ a1: UnsafeMutablePointer<stat>) -> Int32 { fstat(a0, a1) }
private func system_fstatvfs(_ a0: Int32, _ a1: UnsafeMutablePointer<statvfs>) -> Int32 { fstatvfs(a0, a1) }
private func system_fstatat(_ a0: Int32, _ a1: String, _ a2: UnsafeMutablePointer<stat>, _ a3: Int32) -> Int32 { fstatat(a0, a1, a2, a3) }
private func system_read(_ a0: Int32, _ a1: UnsafeMutableRawPointer?, _ a2: Int) -> Int { read(a0, a1, a2) }
private func system_pread(_ a0: Int32, _ a1: UnsafeMutableRawPointer, _ a2: Int, _ a3: off_t) -> Int { pread(a0, a1, a2, a3) }
private func system_write(_ a0: Int32, _ a1: UnsafeRawPointer, _ a2: Int) -> Int { write(a0, a1, a2) }
private func system_pwrite(_ a0: Int32, _ a1: UnsafeRawPointer, _ a2: Int, _ a3: off_t) -> Int { pwrite(a0, a1, a2, a3) }
private func system_ftruncate(_ a0: Int32, _ a1: off_t) -> Int32 { ftruncate(a0, a1) }
private func system_realpath(_ a0: String) -> UnsafeMutablePointer<CChar>? { realpath(a0, nil) }
private func system_fchmod(_ a0: Int32, _ a1: mode_t) -> Int32 { fchmod(a0, a1) }
