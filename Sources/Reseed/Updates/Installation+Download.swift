import Foundation

extension Launcher {
    /// Installs a seed that arrived while the app runs (a channel's download, or a delta applied to
    /// the installed seed) in place of the store, when no store is open: the launch's pipeline
    /// (lock, copy beside the store while verifying the full SHA-256, user-store check, swap,
    /// record), with `"source": "download"` recorded beside the version. The counterpart of
    /// ``prepare()`` for a seed that is not the bundled one; no legacy store is adopted.
    ///
    /// `expected` is the version the update found recorded (nil: none) and decided against; when
    /// another process (a launch of an updated app) recorded another one since, the seed is not
    /// installed: it could be older than what that launch installed.
    ///
    /// - Throws: the failed stage and its ``ReseedError``: ``ReseedError/Code/storeBusy`` while
    ///   another connection has the store open (use ``LiveStore/replace(with:)`` then);
    ///   ``ReseedError/Code/channelRefused`` when the recorded version is no longer `expected`.
    func installDownloaded(_ seed: Seed, expecting expected: String?, from source: InstallPipeline.Source = .seed)
        throws(InstallPipeline.Failure) -> LaunchOutcome
    {
        let locked = try InstallPipeline.during(.prepare) { () throws(ReseedError) in try lockedInstallation(of: seed, source: .download) }
        defer { locked.lock.release() }
        return try locked.installation.run(forcing: nil, expecting: .some(expected), from: source)
    }
}
