import Foundation
import ReseedSystem

/// The app's data directory as every part of Reseed uses it: the folder, the file-system seam its
/// actions go through, the preferences file, and the locks that guard its stores.
///
/// A ``Launcher`` makes one from its configuration (``Launcher/data``); the install pipeline, a
/// ``LiveStore`` and a ``ChannelUpdater`` each work through it, so none reaches into another's
/// internals for a lock or the preferences. File names come from ``StoreLayout``.
struct DataDirectory: Sendable {
    /// The folder, created when missing.
    var url: URL
    /// The preferences file (`preferences.json` in the folder, or the one configured).
    var preferences: PreferencesFile
    /// The seam every file action goes through.
    var fileSystem: FileSystem
    /// How long a lock is waited for.
    var lockTimeout: Duration

    /// Opens (creating) the folder.
    func open() throws(ReseedError) -> Directory {
        try during(.prepareDirectory, path: url.path) { try fileSystem.openDirectory(url, create: true) }
    }

    /// Opens (creating) the folder and takes the lock file `lockName` in it, waiting up to
    /// ``lockTimeout``; `holder` says who keeps it when the wait runs out.
    func lock(_ lockName: String, heldBy holder: String) throws(ReseedError) -> (directory: Directory, lock: StoreLock) {
        let directory = try open()
        let lock = try StoreLock.acquire(lockName, in: directory, timeout: lockTimeout, timeoutMessage: "\(holder) (waited \(lockTimeout))")
        return (directory, lock)
    }

    /// Step 1 of an install: the lock of the store called `name`, which launches, installs and live replaces take.
    ///
    /// - Throws: ``ReseedError/Code/lockTimeout`` when another holder keeps it past ``lockTimeout``.
    func lockStore(named name: String) throws(ReseedError) -> (directory: Directory, lock: StoreLock) {
        try lock(StoreLayout(store: name).installLock, heldBy: "another launcher holds the store '\(name)'")
    }
}
