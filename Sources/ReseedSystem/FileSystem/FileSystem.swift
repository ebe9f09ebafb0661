import Foundation
import SystemPackage

/// One action Reseed takes on the user's files, as the file-system seam reports it.
package struct FileAction: Sendable, Hashable, CustomStringConvertible {
    /// What kind of action it is.
    package enum Kind: String, Sendable, Hashable {
        case createDirectory, createFile, copy, write, sync, syncDirectory, rename, link, remove, lock
    }

    package var kind: Kind
    /// The file or directory acted on (the destination, for rename and link).
    package var path: String

    package init(kind: Kind, path: String) {
        self.kind = kind
        self.path = path
    }

    package var description: String { "\(kind.rawValue) \(path)" }
}

/// Observes, and may fail, each action before and after it happens: the seam crash and fault tests use.
package protocol FileSystemObserver: Sendable {
    /// Called before the action; throwing makes the action fail as if the OS had refused it.
    func willPerform(_ action: FileAction) throws
    /// Called after the action succeeded; throwing stops the caller there, as a crash would.
    func didPerform(_ action: FileAction) throws
    /// The free space to report for the directory at `path` when `measured` is what `fstatvfs`
    /// found (see ``Directory/availableBytes()``); by default `measured`.
    func availableBytes(measured: Int64, at path: String) -> Int64
}

/// A failed system call with the path it was made on.
///
/// It reads as a sentence (``description``): "/data/App.sqlite: cannot open: no such file or
/// directory; check the path".
package struct FileSystemFailure: Error, Sendable, CustomStringConvertible {
    package var operation: String
    package var path: String
    /// The system's error; nil when Reseed refused the file itself (see ``reason``).
    package var errno: Errno?
    /// Why Reseed refused a file the system opened fine, such as "not a regular file (a FIFO)".
    package var reason: String?

    package init(operation: String, path: String, errno: Errno?, reason: String? = nil) {
        self.operation = operation
        self.path = path
        self.errno = errno
        self.reason = reason
    }

    /// "cannot open" or "cannot open: not a regular file (a FIFO)": what failed, in a user's words.
    package var summary: String {
        let verb = Self.verbs[operation] ?? operation
        return reason.map { "cannot \(verb): \($0)" } ?? "cannot \(verb)"
    }

    /// The user's words for each ``FileAction/Kind`` and the read-only calls' operations.
    private static let verbs: [String: String] = [
        FileAction.Kind.createDirectory.rawValue: "create the folder", FileAction.Kind.createFile.rawValue: "create the file",
        FileAction.Kind.sync.rawValue: "flush to disk", FileAction.Kind.syncDirectory.rawValue: "flush the folder to disk",
        FileAction.Kind.rename.rawValue: "move into place", "stat": "examine", "fstat": "examine",
        "fstatvfs": "measure the free space",
    ]

    /// "path: cannot open: no such file or directory; check the path".
    package var description: String {
        ErrorSentence(location: path, what: summary, why: errno?.phrase, advice: errno?.advice).description
    }
}

/// The file-system layer: every durability-critical action on the user's files goes through here.
///
/// It wraps ``Syscalls`` with paths for errors and with an optional observer
/// (tests use it to stop or fail the work after any action).
package struct FileSystem: Sendable {
    package var observer: (any FileSystemObserver)?

    package init(observer: (any FileSystemObserver)? = nil) {
        self.observer = observer
    }

    /// Runs one action through the observer.
    package func perform<T: ~Copyable>(_ kind: FileAction.Kind, _ path: String, _ body: () throws(Errno) -> T) throws -> T {
        try performing(kind, path, body, systemError: { $0 })
    }

    /// Runs one action whose body fails with its own error type through the observer.
    ///
    /// A failure `systemError` maps to an `Errno` fails the action as in ``perform(_:_:_:)``;
    /// any other passes through as it is.
    func performing<T: ~Copyable, Failure: Error>(
        _ kind: FileAction.Kind, _ path: String, _ body: () throws(Failure) -> T, systemError: (Failure) -> Errno?
    ) throws -> T {
        let action = FileAction(kind: kind, path: path)
        try observer?.willPerform(action)
        let result: T
        do {
            result = try body()
        } catch {
            guard let errno = systemError(error) else { throw error }
            throw FileSystemFailure(operation: kind.rawValue, path: path, errno: errno)
        }
        try observer?.didPerform(action)
        return result
    }

    /// `realpath(3)`: the absolute path of `path` with every symbolic link resolved.
    ///
    /// - Throws: `Errno` when a component is missing (such as the target of a dangling link) or cannot be read.
    package static func resolvingSymbolicLinks(_ path: String) throws(Errno) -> String {
        try Syscalls.realpath(path)
    }

    /// The names in the directory at `path`, but `.` and `..` (`readdir(3)`): cheaper than
    /// Foundation's `contentsOfDirectory(atPath:)` on a launch's path.
    package static func directoryNames(_ path: String) throws(Errno) -> [String] {
        try Syscalls.directoryNames(path)
    }

    /// Wraps a read-only call, which the observer does not see.
    package func reading<T: ~Copyable>(_ operation: String, _ path: String, _ body: () throws(Errno) -> T) throws(FileSystemFailure) -> T {
        do {
            return try body()
        } catch {
            throw FileSystemFailure(operation: operation, path: path, errno: error)
        }
    }

    /// Opens an existing file without blocking and refuses anything but a regular file.
    ///
    /// `O_NONBLOCK` makes opening a FIFO return at once instead of waiting for a writer (while
    /// Reseed holds a lock); `fstat` then refuses a FIFO, a device such as `/dev/zero`, a socket or
    /// a directory. Reads of a regular file are not affected by the flag.
    /// - Parameters:
    ///   - path: the file's path, relative to the working directory or absolute; errors name it.
    ///   - access: `.readOnly` by default.
    ///   - options: none by default; `.noFollow` refuses a symbolic link.
    /// - Throws: ``FileSystemFailure``: the `openat` errno, or a reason without one.
    package static func openRegularFile(
        _ path: String, access: FileDescriptor.AccessMode = .readOnly, options: FileDescriptor.OpenOptions = []
    ) throws(FileSystemFailure) -> OwnedDescriptor {
        try openRegularFile(path, in: Syscalls.currentDirectory, path: path, access: access, options: options)
    }

    /// ``openRegularFile(_:access:options:)`` of `name` relative to the open directory `directory`;
    /// errors name `path`.
    static func openRegularFile(
        _ name: String, in directory: Int32, path: String,
        access: FileDescriptor.AccessMode = .readOnly, options: FileDescriptor.OpenOptions = []
    ) throws(FileSystemFailure) -> OwnedDescriptor {
        let fd: OwnedDescriptor
        do {
            fd = OwnedDescriptor(adopting: try Syscalls.openat(directory, name, access, options.union(.nonBlocking)))
        } catch {
            throw FileSystemFailure(operation: "open", path: path, errno: error)
        }
        let kind: String?
        do {
            kind = try Syscalls.fstat(fd.raw).kind.nonRegularName
        } catch {
            throw FileSystemFailure(operation: "fstat", path: path, errno: error)
        }
        if let kind {
            throw FileSystemFailure(operation: "open", path: path, errno: nil, reason: "not a regular file (\(kind))")
        }
        return fd
    }

    /// Opens a directory, creating it (and its parents, mode 0755) when `create` is true.
    package func openDirectory(_ url: URL, create: Bool) throws -> Directory {
        let path = url.path
        let open = { () throws(Errno) in OwnedDescriptor(adopting: try Syscalls.openat(Syscalls.currentDirectory, path, .readOnly, .directory)) }
        do {
            return Directory(fileSystem: self, url: url, fd: try open())
        } catch where create && error == .noSuchFileOrDirectory {
            try createDirectories(path)
            return Directory(fileSystem: self, url: url, fd: try reading("open", path, open))
        } catch {
            throw FileSystemFailure(operation: "open", path: path, errno: error)
        }
    }

    private func createDirectories(_ path: String) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue { return }
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty, parent != path { try createDirectories(parent) }
        do {
            try perform(.createDirectory, path) { () throws(Errno) in
                try Syscalls.mkdirat(Syscalls.currentDirectory, path, FilePermissions(rawValue: 0o755))
            }
        } catch let failure as FileSystemFailure where failure.errno == .fileExists {
            return
        }
    }
}

/// An open directory: names inside it are resolved relative to its descriptor, never re-walked.
package final class Directory: Sendable {
    package let fileSystem: FileSystem
    package let url: URL
    private let descriptor: OwnedDescriptor
    /// The directory's descriptor, valid while this value lives (it closes it when it ends).
    var fd: Int32 { descriptor.raw }

    /// The directory's path with a final "/", so a name's path is one concatenation
    /// (`URL.appendingPathComponent` asks the file system whether the name is a folder).
    private let basePath: String

    init(fileSystem: FileSystem, url: URL, fd: consuming OwnedDescriptor) {
        self.fileSystem = fileSystem
        self.url = url
        self.descriptor = fd
        let path = url.path
        self.basePath = path.hasSuffix("/") ? path : path + "/"
    }

    package func path(_ name: String) -> String { basePath + name }

    /// Creates `name` exclusively (`O_EXCL`, never following a link), with `permissions` less the umask.
    package func createExclusive(_ name: String, permissions: FilePermissions = .defaultFile) throws -> OwnedDescriptor {
        try fileSystem.perform(.createFile, path(name)) { () throws(Errno) in
            OwnedDescriptor(adopting: try Syscalls.openat(fd, name, .readWrite, [.create, .exclusiveCreate, .noFollow], permissions: permissions))
        }
    }

    /// Opens the regular file `name` for reading without following a link; nil when it does not exist.
    ///
    /// - Throws: ``FileSystemFailure`` when it cannot be opened or is not a regular file (see
    ///   ``FileSystem/openRegularFile(_:access:options:)``).
    package func openForReading(_ name: String) throws(FileSystemFailure) -> OwnedDescriptor? {
        do {
            return try FileSystem.openRegularFile(name, in: fd, path: path(name), options: .noFollow)
        } catch where error.errno == .noSuchFileOrDirectory {
            return nil
        }
    }

    /// Opens `name` (`openat(2)` relative to this directory, with `O_CLOEXEC`), outside the
    /// observer: for a file the caller examines before trusting it (a partial download to resume).
    ///
    /// - Throws: `Errno` from `openat(2)`.
    package func open(_ name: String, _ access: FileDescriptor.AccessMode, options: FileDescriptor.OpenOptions = []) throws(Errno) -> OwnedDescriptor {
        OwnedDescriptor(adopting: try Syscalls.openat(fd, name, access, options))
    }

    /// Creates the folder `name` in this directory (`mkdirat(2)`, `permissions` less the umask), outside
    /// the observer.
    ///
    /// - Throws: `Errno` from `mkdirat(2)`, such as `EEXIST`.
    package func makeDirectory(_ name: String, permissions: FilePermissions) throws(Errno) {
        try Syscalls.mkdirat(fd, name, permissions)
    }

    /// Opens (creating when needed) a lock file; it is never removed, so every locker meets the same inode.
    func openLockFile(_ name: String) throws -> OwnedDescriptor {
        try fileSystem.perform(.lock, path(name)) { () throws(Errno) in
            OwnedDescriptor(adopting: try Syscalls.openat(fd, name, .readWrite, [.create, .noFollow], permissions: .defaultFile))
        }
    }

    /// Describes `name` without following a link; nil when absent.
    package func status(_ name: String) throws(FileSystemFailure) -> FileStatus? {
        try fileSystem.reading("stat", path(name)) { () throws(Errno) in try Syscalls.lstatat(fd, name) }
    }

    /// Atomically renames `from` over `to` inside this directory.
    package func rename(_ from: String, to: String) throws {
        try fileSystem.perform(.rename, path(to)) { () throws(Errno) in try Syscalls.renameat(fd, from, fd, to) }
    }

    /// Moves `name` into `other` (same filesystem) as `newName`, without replacing an existing file there.
    package func move(_ name: String, to other: Directory, as newName: String) throws {
        try fileSystem.perform(.rename, other.path(newName)) { () throws(Errno) in
            try Syscalls.renameNoReplace(fd, name, other.fd, newName)
        }
    }

    /// The device this directory is on (moves within one device are renames).
    package func device() throws(FileSystemFailure) -> UInt64 {
        try fileSystem.reading("fstat", url.path) { () throws(Errno) in try Syscalls.fstat(fd).device }
    }

    /// Renames `from` to `to`, failing with `EEXIST` rather than replacing an existing `to`.
    package func renameNoReplace(_ from: String, to: String) throws {
        try fileSystem.perform(.rename, path(to)) { () throws(Errno) in try Syscalls.renameNoReplace(fd, from, fd, to) }
    }

    /// Makes `to` a second name of `from`.
    package func link(_ from: String, to: String) throws {
        try fileSystem.perform(.link, path(to)) { () throws(Errno) in try Syscalls.linkat(fd, from, fd, to) }
    }

    /// Removes `name`; returns false when it was already absent.
    @discardableResult
    package func remove(_ name: String) throws -> Bool {
        do {
            try fileSystem.perform(.remove, path(name)) { () throws(Errno) in try Syscalls.unlinkat(fd, name) }
            return true
        } catch let failure as FileSystemFailure where failure.errno == .noSuchFileOrDirectory {
            return false
        }
    }

    /// fsyncs the directory, making renames and creations inside it durable.
    package func sync() throws {
        try fileSystem.perform(.syncDirectory, url.path) { () throws(Errno) in try Syscalls.fsync(fd) }
    }

    /// fsyncs a file open in this directory.
    package func sync(_ file: borrowing OwnedDescriptor, name: String) throws {
        try sync(file.raw, name: name)
    }

    /// fsyncs a file open in this directory by its number, for another thread while its owner is borrowed.
    func sync(_ file: Int32, name: String) throws {
        try fileSystem.perform(.sync, path(name)) { () throws(Errno) in try Syscalls.fsync(file) }
    }

    /// Opens `name` and fsyncs it.
    package func syncFile(_ name: String) throws {
        let file = try FileSystem.openRegularFile(name, in: fd, path: path(name), options: .noFollow)
        try sync(file, name: name)
    }

    /// Makes the files `names` durable together: starts writing back every one of them
    /// (``OwnedDescriptor/startWriteback(from:count:)``), then fsyncs each in turn.
    ///
    /// The first fsync then commits the metadata of all of them in one journal transaction (their
    /// blocks were allocated when their writeback started), and each later one mostly finds its
    /// file's data written and its transaction committed: two small files cost about one fsync.
    /// Every file is still fsynced, whatever the file system does with the hint.
    package func syncFiles(_ names: [String]) throws {
        var files: [SharedDescriptor] = []
        for name in names {
            let file = SharedDescriptor(try FileSystem.openRegularFile(name, in: fd, path: path(name), options: .noFollow))
            file.descriptor.startWriteback(from: 0, count: 0)
            files.append(file)
        }
        for (name, file) in zip(names, files) { try sync(file.descriptor, name: name) }
    }

    /// Writes all of `bytes` to `file` at its current offset.
    package func write(_ bytes: [UInt8], to file: borrowing OwnedDescriptor, name: String) throws {
        try fileSystem.perform(.write, path(name)) { () throws(Errno) in try Syscalls.writeAll(file.raw, bytes) }
    }

    /// Writes all of `buffer` to `file` at `offset` (`pwrite(2)`), leaving the file offset as it is.
    package func write(_ buffer: UnsafeRawBufferPointer, to file: borrowing OwnedDescriptor, at offset: Int64, name: String) throws {
        try fileSystem.perform(.write, path(name)) { () throws(Errno) in try Syscalls.pwriteAll(file.raw, buffer, at: offset) }
    }

    /// Cuts `file` to `length` bytes (`ftruncate(2)`); the fault seam sees it as a write.
    package func truncate(_ file: borrowing OwnedDescriptor, name: String, to length: Int64 = 0) throws {
        try fileSystem.perform(.write, path(name)) { () throws(Errno) in try Syscalls.ftruncate(file.raw, length) }
    }

    /// The names in this directory (not `.` and `..`).
    package func names() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: url.path)
    }
}

extension FilePermissions {
    /// 0644: the owner reads and writes, the others read (less the umask, when a file is created).
    package static let defaultFile: FilePermissions = [.ownerReadWrite, .groupRead, .otherRead]
}
