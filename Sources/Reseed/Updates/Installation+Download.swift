import Foundation

extension Launcher {
    /// Installs a seed that arrived while the app runs (a channel's download) in place of the
    /// store, when no store is open: the launcher's steps (lock, copy beside the store while
    /// verifying the full SHA-256, swap, record), with `"source": "download"` recorded beside
    /// the version. The counterpart of ``prepare()`` for a seed that is not the bundled one.
    ///
    /// `expected` is the version the update found recorded (nil: none) and decided against; when
    /// another process (a launch of an updated app) recorded another one since, the seed is not
    /// installed: it could be older than what that launch installed.
    ///
    /// - Throws: ``ReseedError`` as ``prepare()`` does: ``ReseedError/Code/storeBusy`` while
    ///   another connection has the store open (use ``LiveStore/replace(with:)`` then);
    ///   ``ReseedError/Code/channelRefused`` when the recorded version is no longer `expected`.
    func installDownloaded(_ seed: Seed, expecting expected: String?) throws(ReseedError) -> LaunchOutcome {
        let locked = try lockStore(seed.manifest)
        defer { locked.lock.release() }
        return try Installation(launcher: self, seed: seed, directory: locked.directory, preferences: preferences, source: .download)
            .installDownloaded(expecting: expected)
    }
}

extension Installation {
    /// Under the store's lock: installs ``seed`` unless the store already holds its version.
    ///
    /// The launch's steps 2 to 5 without its preparations: no legacy store is adopted and
    /// corrupt preferences are not moved aside here (recording the version does that).
    func installDownloaded(expecting expected: String?) throws(ReseedError) -> LaunchOutcome {
        let (contents, entries) = try preferences.readEntries()
        let recorded = recorded(contents, entries)
        if let now = recorded?.version, now != expected, now != manifest.version {
            throw ReseedError(.channelRefused, step: .checkManifest, path: preferences.url.path, message:
                "\(manifest.name) \(now) was installed while this update fetched \(manifest.version) over \(expected ?? "nothing"); not installed (the next update starts from \(now))")
        }
        let state = try storeState()
        let user = try prepareUserStore(recorded: recorded, storeState: state)
        let decision = Decision.decide(.init(
            name: manifest.name, version: manifest.version, source: source, recorded: recorded, store: state,
            forcing: user.forcing, storeHoldsUserTables: user.storeHoldsUserTables))
        var outcome = try act(on: decision, recorded: recorded, storeState: state, preferencesMovedAside: nil)
        if needsRecording(decision, recorded: recorded), let aside = try recordVersion() { outcome.preferencesMovedAside = aside }
        user.report(in: &outcome)
        return outcome
    }
}
