import Dispatch
import Synchronization

/// A file whose last name is about to be replaced (an old store a rename puts the new seed over),
/// held open so that its blocks are freed when ``release()`` closes it on a thread of its own, not
/// by the rename nor by whoever closes the file's last other descriptor.
///
/// Freeing a large file is slow: dropping its cached pages and returning its extents took 57–73 ms
/// for a 310 MB store on ext4 mounted with `discard`, as long as the rest of a delta update's fixed
/// path. The name goes at once (a launch that follows finds only the new store, and nothing is left
/// to clean up); the blocks follow a moment later. A crash or an exit closes the descriptor too, and
/// the file system frees them then: nothing stays behind in any case.
///
/// ```swift
/// let old = directory.holdForRelease(storeName)
/// try directory.rename(temporary, to: storeName)
/// old?.release()
/// ```
package final class ReplacedFile: Sendable {
    private let descriptor: Mutex<OwnedDescriptor?>

    /// Releases started and not yet finished, in this process.
    private static let releasing = DispatchGroup()

    fileprivate init(_ descriptor: consuming OwnedDescriptor) {
        self.descriptor = Mutex(descriptor)
    }

    /// Closes the file on a background thread (``spawnThread(_:background:_:)``), which frees its
    /// blocks when no other descriptor or name keeps it; on this thread when the system refuses a
    /// new one. A second call finds it closed.
    package func release() {
        Self.releasing.enter()
        let close: @Sendable () -> Void = { [self] in
            // A read-only descriptor: close(2) reports nothing a caller could act on.
            if let held = descriptor.withLock({ $0.take() }) { try? held.close() }
            Self.releasing.leave()
        }
        if !spawnThread("reseed-free-replaced", background: true, close) { close() }
    }

    /// Closes the file now, on this thread: when the rename over its name failed, it is still the
    /// store, and a close later, on another thread, could come after this process opened it again and
    /// drop that connection's locks (a close of any descriptor of a file drops the process's POSIX locks
    /// on it). A second call, or one after ``release()``, finds it closed.
    package func closeNow() {
        if let held = descriptor.withLock({ $0.take() }) { try? held.close() }
    }

    /// Waits until every file released in this process is closed: before measuring free space, which
    /// counts their blocks once they are freed.
    package static func waitForReleases() {
        releasing.wait()
    }
}

extension Directory {
    /// Opens the regular file `name` read-only to hold it past its last name (see ``ReplacedFile``);
    /// nil when it is not there or cannot be opened (then the rename frees it, as without this).
    package func holdForRelease(_ name: String) -> ReplacedFile? {
        guard let file = try? openForReading(name) else { return nil }
        return ReplacedFile(file)
    }
}
