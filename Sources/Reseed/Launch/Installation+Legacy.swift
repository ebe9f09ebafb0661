import Foundation
import Logging
import ReseedSystem
import SystemPackage

extension Installation {
    /// What legacy adoption did.
    struct Adoption {
        var adoptedFrom: URL?
        var leftInPlace: [URL] = []
    }

    /// Moves a legacy store to the current location when the store is missing here; see ``Launcher/LegacyStore``.
    ///
    /// Order, for crashes: the legacy store is first checkpointed and switched out of
    /// WAL in place (a single, complete file that nobody has open); its version is
    /// recorded here; then it is renamed (or, across filesystems, copied, fsynced,
    /// checked and renamed) into place, and only then are the legacy files removed.
    /// A crash leaves it usable at one location or both; with both, the current wins.
    func adoptLegacyStore() throws(ReseedError) -> Adoption {
        let candidates = configuration.legacyStores.filter { legacy in
            legacy.storeURL.standardizedFileURL.path != storePath
                && FileManager.default.fileExists(atPath: legacy.storeURL.path)
        }
        guard !candidates.isEmpty else { return Adoption() }
        if try during(.inspectStore, path: storePath, { try directory.status(storeName) }) != nil {
            logger.notice("a legacy store exists but the current one wins", metadata: ["legacy": "\(candidates.map(\.storeURL.path))"])
            return Adoption(leftInPlace: candidates.map(\.storeURL))
        }
        let legacy = candidates[0]
        let legacyPath = legacy.storeURL.path
        let legacyName = legacy.storeURL.lastPathComponent
        let (legacyDirectory, sameDevice) = try during(.adoptLegacyStore, path: legacyPath) {
            let legacyDirectory = try directory.fileSystem.openDirectory(legacy.storeURL.deletingLastPathComponent(), create: false)
            return (legacyDirectory, try legacyDirectory.device() == directory.device())
        }
        // Across filesystems the store is read through a descriptor of ours. Closing any descriptor
        // of a file drops this process's POSIX locks on it, the guard's among them: so it is opened
        // before the guard and closed after it (a descriptor ends with its scope, after the defers).
        let source: OwnedDescriptor? = sameDevice ? nil : try during(.adoptLegacyStore, path: legacyPath) {
            try FileSystem.openRegularFile(legacyPath)
        }
        let deadline = ContinuousClock.now.advanced(by: configuration.busyTimeout)
        let held: StoreGuard
        switch try StoreGuard.acquire(path: legacyPath, for: .move, deadline: deadline) {
        case .guarded(let storeGuard):
            held = storeGuard
        case .notADatabase(let why):
            logger.warning("legacy store is not a usable database; left in place", metadata: ["legacy": "\(legacyPath)", "reason": "\(why)"])
            return Adoption(leftInPlace: candidates.map(\.storeURL))
        case .busy(let why):
            throw ReseedError(.storeBusy, step: .adoptLegacyStore, path: legacyPath,
                              message: "the legacy store is open elsewhere (\(why)); waited \(configuration.busyTimeout)")
        }
        defer { held.release() }

        let legacyPreferences = PreferencesFile(
            url: legacy.preferencesURL ?? legacy.storeURL.deletingLastPathComponent().appendingPathComponent(PreferencesFile.defaultFileName, isDirectory: false),
            fileSystem: directory.fileSystem)
        if let entry = try? legacyPreferences.readEntries().entries[legacy.recordedName ?? manifest.name], let version = entry.version {
            _ = try preferences.record(version: version, source: entry.source ?? .bundle, for: manifest.name,
                                       timeout: configuration.lockTimeout, logger: logger)
        }
        try during(.adoptLegacyStore, path: legacyPath) {
            // Sidecars whose store is gone belong to no database (the -wal an install puts beside a
            // single-file store, the store since removed): the adopted store must never meet them.
            for sidecar in StoreLayout.sidecars(of: storeName) { try directory.remove(sidecar) }
            switch source {
            case .some(let file):
                try copyAcross(from: file, path: legacyPath)
            case .none:
                try legacyDirectory.move(legacyName, to: directory, as: storeName)
                try directory.sync()
            }
            for file in [legacyName] + StoreLayout.sidecars(of: legacyName) { try legacyDirectory.remove(file) }
            try legacyDirectory.sync()
        }
        logger.notice("adopted the legacy store", metadata: ["from": "\(legacyPath)", "to": "\(storePath)"])
        return Adoption(adoptedFrom: legacy.storeURL, leftInPlace: candidates.dropFirst().map(\.storeURL))
    }

    /// Copies a store from another filesystem beside the store, fsyncs it, checks SQLite reads it whole, renames it in.
    private func copyAcross(from source: borrowing OwnedDescriptor, path sourcePath: String) throws {
        try directory.writeDurably(storeName, through: StoreLayout.temporaryName(of: storeName), write: { destination, temporary in
            _ = try directory.fileSystem.perform(.copy, directory.path(temporary)) { () throws(Errno) in
                try FileCopier(hashing: false).copy(from: source, to: destination)
            }
        }, check: { _, temporary in
            let check = try SeedMetadata.quickCheck(path: directory.path(temporary))
            guard check == "ok" else {
                throw ReseedError(.verificationFailed, step: .adoptLegacyStore, path: sourcePath, message: "the copy of the legacy store fails quick_check: \(check)")
            }
        })
    }
}
