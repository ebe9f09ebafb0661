import ReseedSystem
import Synchronization

/// The file-system seam's observer of a disk shorter than the real one: every free-space
/// measurement reports `availableBytes`, and is counted. A fake because a disk exactly short of
/// one install cannot always be made for real (the tmpfs tests make one when they may mount).
package final class ShortDisk: FileSystemObserver {
    package let availableBytes: Int64
    private let measured = Mutex<[String]>([])

    package init(availableBytes: Int64) {
        self.availableBytes = availableBytes
    }

    /// The directories whose free space was measured, in order.
    package var measurements: [String] { measured.withLock { $0 } }

    package func willPerform(_ action: FileAction) throws {}
    package func didPerform(_ action: FileAction) throws {}

    package func availableBytes(measured bytes: Int64, at path: String) -> Int64 {
        measured.withLock { $0.append(path) }
        return availableBytes
    }
}
