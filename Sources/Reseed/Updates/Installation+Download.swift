import Foundation

extension Launcher {
    /// Installs a seed that arrived while the app runs (a channel's download) in place of the
    /// store, when no store is open: the launcher's steps (lock, copy beside the store while
    /// verifying the full SHA-256, swap, record), with `"source": "download"` recorded beside
    /// the version. The counterpart of ``prepare()`` for a seed that is not the bundled one.
    ///
    /// - Throws: ``ReseedError`` as ``prepare()`` does: ``ReseedError/Code/storeBusy`` while
    ///   another connection has the store open (use ``LiveStore/replace(with:)`` then).
    func installDownloaded(_ seed: Seed) throws(ReseedError) -> LaunchOutcome {
        var verifying = self
        verifying.configuration.verification = .checksum
        let locked = try verifying.lockStore(seed.manifest)
        defer { locked.lock.release() }
        return try Installation(
            launcher: verifying, seed: seed, directory: locked.directory, preferences: verifying.preferences, source: .download
        ).installDownloaded()
    }
}

extension Installation {
    /// Under the store's lock: installs ``seed`` unless the store already holds its version.
    func installDownloaded() throws(ReseedError) -> LaunchOutcome {
        let (contents, entries) = try preferences.readEntries()
        let recorded: String? = if case .valid = contents { entries[manifest.name]?.version } else { nil }
        let state = try storeState()
        var outcome = LaunchOutcome(
            action: .upToDate, reason: nil, name: manifest.name, version: manifest.version, previousVersion: recorded,
            change: recorded.flatMap { SeedVersion(manifest.version).change(from: SeedVersion($0)) },
            storeURL: URL(fileURLWithPath: storePath, isDirectory: false))
        outcome.source = entries[manifest.name]?.source ?? .bundle
        if recorded == manifest.version, state == .sqlite {
            logger.debug("store already holds the downloaded version", metadata: ["store": "\(storePath)", "version": "\(manifest.version)"])
            return outcome
        }
        let reason: LaunchOutcome.Reason = switch state {
        case .missing: recorded == nil ? .fresh : .storeMissing
        case .notSQLite: .storeInvalid
        case .sqlite: .versionChanged
        }
        return try install(&outcome, reason: reason, storeState: state)
    }
}
