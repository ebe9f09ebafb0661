import Foundation
import Synchronization
import SystemPackage

/// An exclusive lock on one store, held across processes (`flock` on a lock file)
/// and across threads of this process (a process-wide table of held locks).
///
/// `flock` alone would serialise threads too on Linux (each open file
/// description is a separate holder), but not on every system; the in-process
/// table makes that explicit and lets a waiting thread poll without a descriptor.
package final class StoreLock: Sendable {
    private static let heldInProcess = Mutex<Set<String>>([])
    /// How long a waiter sleeps between two attempts.
    private static let pollInterval: Duration = .milliseconds(5)

    package let path: String
    /// The lock file's descriptor until ``release()`` takes it.
    private let descriptor: Mutex<OwnedDescriptor?>

    private init(path: String, fd: consuming OwnedDescriptor) {
        self.path = path
        self.descriptor = Mutex(Optional(fd))
    }

    /// Takes the lock named `name` in `directory`, waiting up to `timeout`.
    ///
    /// Returns nil when the timeout ran out while another holder kept the lock.
    package static func acquire(_ name: String, in directory: Directory, timeout: Duration) throws -> StoreLock? {
        try acquire(directory.path(name), in: directory, timeout: timeout) { try directory.openLockFile(name) }
    }

    /// Takes a lock on `directory` itself (`flock` on the folder, no lock file), waiting up to `timeout`:
    /// for a folder that must hold nothing but its own files, such as a build's output.
    ///
    /// Returns nil when the timeout ran out while another holder kept the lock.
    package static func acquireFolder(_ directory: Directory, timeout: Duration) throws -> StoreLock? {
        try acquire(directory.path(""), in: directory, timeout: timeout) {
            try directory.fileSystem.perform(.lock, directory.path("")) { () throws(Errno) in
                OwnedDescriptor(adopting: try Syscalls.openat(directory.fd, ".", .readOnly, .directory))
            }
        }
    }

    private static func acquire(_ path: String, in directory: Directory, timeout: Duration, open: () throws -> OwnedDescriptor) throws -> StoreLock? {
        try Polling.until(ContinuousClock.now.advanced(by: timeout), every: pollInterval) { () throws -> StoreLock? in
            guard claimInProcess(path) else { return nil }
            do {
                let fd = try open()
                let locked = try directory.fileSystem.reading("flock", path) { () throws(Errno) in try Syscalls.tryLock(fd.raw, exclusive: true) }
                if locked { return StoreLock(path: path, fd: fd) }
                releaseInProcess(path)
                return nil
            } catch {
                releaseInProcess(path)
                throw error
            }
        }
    }

    /// Releases the lock; later calls do nothing.
    package func release() {
        guard let fd = descriptor.withLock({ $0.take() }) else { return }
        try? Syscalls.unlock(fd.raw)
        _ = consume fd
        Self.releaseInProcess(path)
    }

    deinit { release() }

    private static func claimInProcess(_ path: String) -> Bool {
        heldInProcess.withLock { $0.insert(path).inserted }
    }

    private static func releaseInProcess(_ path: String) {
        _ = heldInProcess.withLock { $0.remove(path) }
    }
}
