import Foundation
import GRDB
import ReseedSystem

extension LiveStore {
    /// What a replacement did.
    public struct ReplaceOutcome: Sendable {
        /// The version the store holds now.
        public var version: String
        /// The version it held before.
        public var previousVersion: String
        /// The store file (unchanged path, new content).
        public var storeURL: URL
        /// How long new operations were held back: waiting for running ones, closing, swapping, reopening.
        /// It does not grow with the seed's size: copying and verifying happen before.
        public var blockedFor: Duration
        /// With a user store, per ``SeedReference`` (its description), the user rows pointing at a
        /// key the new seed no longer has. Nothing is deleted.
        public var orphans: [String: Int] = [:]
    }

    /// Replaces the open store with a seed that arrived at runtime (a download), without restarting.
    ///
    /// 1. Copies the seed beside the store and verifies it fully (size, header,
    ///    embedded name and version, SHA-256) while the app keeps using the old store;
    ///    ``Event/progress(completed:total:)`` reports the copy.
    /// 2. Sends ``Event/willReplace(_:)`` and waits, up to the observer timeout,
    ///    for every observer to release its notice.
    /// 3. Lets running operations finish and holds new ones, checkpoints and closes
    ///    the pool, swaps the files with the launcher's invariant (no other connection,
    ///    sidecars removed, rename, directory fsync, then the recorded version), reopens,
    ///    lets the held operations run on the new store, and sends
    ///    ``Event/replaced(version:previousVersion:)``. The version is recorded with
    ///    `"source": "download"`, so a later launch keeps it unless the bundled seed is newer
    ///    (see ``SeedSource``).
    ///
    /// On any failure before the swap the old store stays open and usable, the
    /// error is thrown and sent as ``Event/replaceFailed(_:)``. A crash at any
    /// point leaves a store the next launch opens.
    ///
    /// ```swift
    /// let outcome = try await store.replace(with: Seed(at: downloadedManifest))
    /// print("now \(outcome.version), access blocked for \(outcome.blockedFor)")
    /// ```
    ///
    /// - Throws: ``ReseedError``: ``ReseedError/Code/verificationFailed`` for a bad download,
    ///   ``ReseedError/Code/storeBusy`` when another process has the store open, and so on.
    @discardableResult
    public func replace(with seed: Seed) async throws(ReseedError) -> ReplaceOutcome {
        do {
            return try await replace(with: seed, from: .seed)
        } catch {
            throw error.error
        }
    }

    /// Replaces the open store with `seed`, made from `source` (the seed file, or a delta applied
    /// to the installed seed): the install pipeline's stages before and after the swap, the swap
    /// itself with this store's pool closed and every operation held back.
    func replace(with seed: Seed, from source: InstallPipeline.Source) async throws(InstallPipeline.Failure) -> ReplaceOutcome {
        try await changes.run { () async throws(InstallPipeline.Failure) -> ReplaceOutcome in
            do throws(InstallPipeline.Failure) {
                return try await self.performReplace(seed, from: source)
            } catch {
                self.emit(.replaceFailed(error.error))
                throw error
            }
        }
    }

    private func performReplace(_ seed: Seed, from source: InstallPipeline.Source) async throws(InstallPipeline.Failure) -> ReplaceOutcome {
        let (launcher, name, previous) = state.withLock { ($0.launcher, $0.name, $0.version) }
        guard seed.manifest.name == name else {
            throw InstallPipeline.Failure(stage: .prepare, error: ReseedError(.invalidArgument, step: .readManifest, path: seed.manifestURL.path,
                                          message: "the seed is for store '\(seed.manifest.name)', this store is '\(name)'"))
        }
        let progress: @Sendable (Int64, Int64) -> Void = { [weak self] done, total in self?.emit(.progress(completed: done, total: total)) }
        // At a lower priority: the app goes on using the store meanwhile, and its reads come first.
        let prepared = try await offload("reseed-replace", background: true) { () throws(InstallPipeline.Failure) in
            try Self.stage(seed, from: source, launcher: launcher, progress: progress)
        }
        defer { prepared.lock.release() }

        await noticeObservers(of: seed.manifest.version)

        let clock = ContinuousClock()
        let blockedSince = clock.now
        await gate.enterExclusive()
        let swapped = await offload("reseed-swap") { () -> Result<(String?, InstallPipeline.Swapped), InstallPipeline.Failure> in
            Result { () throws(InstallPipeline.Failure) in try self.swapClosed(prepared) }
        }
        await gate.exitExclusive()
        let blockedFor = clock.now - blockedSince
        let (retired, installed) = try swapped.get()
        // After access resumed: recording the version (a new store with the old version recorded is
        // a state the invariant allows), and freeing the old file's blocks, which takes time in
        // proportion to its size.
        let recorded = await offload { () -> Result<Void, InstallPipeline.Failure> in
            defer { if let retired { _ = try? prepared.pipeline.installation.directory.remove(retired) } }
            return Result { () throws(InstallPipeline.Failure) in _ = try prepared.pipeline.record(installed: installed) }
        }
        try recorded.get()
        var outcome = ReplaceOutcome(version: seed.manifest.version, previousVersion: previous, storeURL: storeURL, blockedFor: blockedFor)
        if let userStore = launcher.configuration.userStore, let userStoreURL = launcher.userStoreURL, !userStore.references.isEmpty {
            let pool = state.withLock { $0.pool }
            outcome.orphans = try await offload { () throws(InstallPipeline.Failure) in
                try InstallPipeline.during(.record) { () throws(ReseedError) in
                    try UserStoreSchema.countOrphans(pool, references: userStore.references, path: userStoreURL.path)
                }
            }
            UserStoreSchema.log(outcome.orphans, logger: logger)
        }
        emit(.replaced(version: seed.manifest.version, previousVersion: previous))
        logger.info("replaced the live store", metadata: ["version": "\(seed.manifest.version)", "blocked": "\(blockedFor)"])
        return outcome
    }

    /// A verified copy of the seed beside the store, under the store's lock.
    struct PreparedCopy: Sendable {
        var lock: StoreLock
        var pipeline: InstallPipeline
        var staged: InstallPipeline.Staged
    }

    /// The pipeline's stages up to the swap, under the store's lock: the copy is verified as every
    /// download is, with the full SHA-256, and checked against the user store; `progress` hears of it.
    private static func stage(
        _ seed: Seed, from source: InstallPipeline.Source, launcher: Launcher, progress: @escaping @Sendable (Int64, Int64) -> Void
    ) throws(InstallPipeline.Failure) -> PreparedCopy {
        let locked = try InstallPipeline.during(.prepare) { () throws(ReseedError) in try launcher.lockedInstallation(of: seed, source: .download) }
        let directory = locked.installation.directory
        do throws(InstallPipeline.Failure) {
            let pipeline = InstallPipeline(installation: locked.installation, source: source)
            let staged = try pipeline.stage(progress: progress)
            do throws(InstallPipeline.Failure) {
                // With a user store the seed is only ever attached read-only: it keeps its rollback journal.
                if launcher.configuration.userStore == nil {
                    try InstallPipeline.during(.verify) { () throws(ReseedError) in try switchToWAL(staged.temporary, in: directory) }
                }
            } catch {
                _ = try? directory.remove(staged.temporary)
                throw error
            }
            return PreparedCopy(lock: locked.lock, pipeline: pipeline, staged: staged)
        } catch {
            locked.lock.release()
            throw error
        }
    }

    /// Switches the verified copy to WAL mode, as the pool would on opening it, and makes that durable:
    /// the switch writes and syncs the header, which is work to keep out of the blocked window.
    private static func switchToWAL(_ temporary: String, in directory: Directory) throws(ReseedError) {
        let path = directory.path(temporary)
        try during(.verify, path: path) {
            let queue = try DatabaseQueue(path: path)
            try queue.writeWithoutTransaction { db in
                guard try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") == "wal" else {
                    throw ReseedError(.database, step: .verify, path: path, message: "the copy did not switch to WAL mode")
                }
            }
            try queue.close()
            try directory.syncFile(temporary)
        }
    }

    /// With every operation held back: close the pool, swap the files (up to the directory fsync), reopen.
    /// Before the rename, a failure reopens the old store; after it, the new one.
    ///
    /// - Returns: a second name of the old store file (a temp name, so a crash leaves it to the
    ///   next launch's clean-up), for the caller to remove once access has resumed; and the swap,
    ///   with the new file's fingerprint taken before the pool reopens it.
    private func swapClosed(_ prepared: PreparedCopy) throws(InstallPipeline.Failure) -> (retired: String?, swapped: InstallPipeline.Swapped) {
        let (pool, launcher, storeURL) = state.withLock { ($0.pool, $0.launcher, $0.storeURL) }
        try InstallPipeline.during(.swap) { () throws(ReseedError) in
            try during(.checkStoreNotInUse, path: pool.path) {
                try pool.writeWithoutTransaction { _ = try $0.checkpoint(.truncate) }
                try pool.close()
            }
        }
        let directory = prepared.pipeline.installation.directory
        let storeName = prepared.pipeline.installation.storeName
        var retired: String? = StoreLayout.temporaryName(of: storeName)
        if let name = retired, (try? directory.link(storeName, to: name)) == nil { retired = nil }
        let swapped: InstallPipeline.Swapped
        do throws(InstallPipeline.Failure) {
            // The open store is a database: it is kept aside only if the guard finds it is not one.
            swapped = try prepared.pipeline.swap(prepared.staged, storeState: .sqlite, keepAside: false)
        } catch {
            if let retired { _ = try? directory.remove(retired) }
            try InstallPipeline.during(.swap) { () throws(ReseedError) in try reopen(storeURL, launcher: launcher, version: nil) }
            throw error
        }
        try InstallPipeline.during(.swap) { () throws(ReseedError) in
            try reopen(storeURL, launcher: launcher, version: prepared.pipeline.installation.manifest.version)
        }
        return (retired, swapped)
    }

    /// Opens the pool again on `storeURL` (with a user store: the user store, the seed attached).
    private func reopen(_ storeURL: URL, launcher: Launcher, version: String?) throws(ReseedError) {
        let pool = try during(.open, path: storeURL.path) {
            try launcher.openWaiting(storeURL) { try launcher.openPool(seed: $0) }
        }
        state.withLock { state in
            state.pool = pool
            if let version { state.version = version }
        }
    }
}
