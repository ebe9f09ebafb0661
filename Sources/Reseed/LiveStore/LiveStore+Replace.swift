import Foundation
import GRDB
import ReseedSystem
import Synchronization

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
    ///    ``Event/progress(_:)`` reports the copy.
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
    /// It is the install every launch runs (``Launcher/launch()``'s steps, under the store's lock),
    /// so the decision is the same too: a seed of the version the store holds, as recorded, is not
    /// installed again (nothing is held back, ``ReplaceOutcome/blockedFor`` is zero, and no event is
    /// sent); a store found unusable, or holding the user's tables, is kept aside first.
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
            return try await replace(InstallPipeline.Request(seed, from: .download)).replaced
        } catch {
            throw error.error
        }
    }

    /// Replaces the open store as `request` says (a downloaded seed, or a delta applied to the
    /// installed seed): the install pipeline's run, this store holding the store (``Holder``).
    ///
    /// - Returns: what the replace did, and the install's outcome (the user tables it carried, the
    ///   store kept aside, the orphans).
    func replace(_ request: InstallPipeline.Request) async throws(InstallPipeline.Failure) -> (replaced: ReplaceOutcome, installed: LaunchOutcome) {
        try await changes.run { () async throws(InstallPipeline.Failure) -> (replaced: ReplaceOutcome, installed: LaunchOutcome) in
            do throws(InstallPipeline.Failure) {
                return try await self.performReplace(request)
            } catch {
                self.emit(.replaceFailed(error.error))
                throw error
            }
        }
    }

    private func performReplace(_ request: InstallPipeline.Request) async throws(InstallPipeline.Failure) -> (replaced: ReplaceOutcome, installed: LaunchOutcome) {
        let (launcher, name, previous) = state.withLock { ($0.launcher, $0.name, $0.version) }
        guard request.manifest.name == name else {
            throw InstallPipeline.Failure(ReseedError(.invalidArgument, step: .readManifest, path: request.source.seed?.manifestURL.path ?? request.source.path,
                                                      message: "the seed is for store '\(request.manifest.name)', this store is '\(name)'"), origin: .source)
        }
        var request = request
        let given = request.progress
        request.progress = { [weak self] progress in
            self?.emit(.progress(progress))
            given?(progress)
        }
        let holder = Holder(store: self, launcher: launcher)
        // At a lower priority: the app goes on using the store meanwhile, and its reads come first.
        // The swap itself runs on a thread of normal priority (``Holder/hold(_:installed:)``).
        let pipeline = launcher.pipeline
        let installed = try await offload("reseed-replace", background: true) { [request] () throws(InstallPipeline.Failure) in
            try pipeline.run(request, holder: holder)
        }
        let outcome = ReplaceOutcome(version: installed.version, previousVersion: previous, storeURL: storeURL, blockedFor: holder.blockedFor,
                                     orphans: installed.orphans)
        if installed.action == .installed {
            emit(.replaced(version: installed.version, previousVersion: previous))
            logger.info("replaced the live store", metadata: ["version": "\(installed.version)", "blocked": "\(outcome.blockedFor)"])
        }
        return (outcome, installed)
    }

    /// A live store as the install pipeline's ``StoreHolder``: once the pipeline readied the verified
    /// copy (in WAL mode, as its pool opens it), observers are told, every
    /// operation is held back, the pool is closed, the swap runs, and the store is opened again
    /// through ``Launcher/open(_:repairing:)`` (the user store migrated and checked), after which the
    /// held operations run on it.
    final class Holder: StoreHolder {
        let store: LiveStore
        let launcher: Launcher
        private let blocked = Mutex<Duration>(.zero)

        init(store: LiveStore, launcher: Launcher) {
            self.store = store
            self.launcher = launcher
        }

        /// How long operations were held back: waiting for running ones, closing, swapping, reopening.
        var blockedFor: Duration { blocked.withLock { $0 } }

        /// The old file's blocks are freed after operations resume: that takes time in proportion to its size.
        var retiresOldStore: Bool { true }

        func hold(_ swap: @escaping @Sendable () throws(InstallPipeline.Failure) -> InstallPipeline.Swapped, installed: LaunchOutcome)
            throws(InstallPipeline.Failure) -> (swapped: InstallPipeline.Swapped, opened: LaunchOutcome?)
        {
            let (store, launcher) = (store, launcher)
            // As a task: the gate is entered and left from async code with no hop in between, so the
            // operations held back wait for the swap and the reopening only; those run on a thread of
            // their own at the normal priority.
            let result = Self.wait { () async -> Result<(InstallPipeline.Swapped, LaunchOutcome), InstallPipeline.Failure> in
                await store.noticeObservers(of: installed.version)
                let clock = ContinuousClock()
                let since = clock.now
                await store.gate.enterExclusive()
                let swapped = await offload("reseed-swap") { () -> Result<(InstallPipeline.Swapped, LaunchOutcome), InstallPipeline.Failure> in
                    Result { () throws(InstallPipeline.Failure) in try store.swapClosed(swap, installed: installed, launcher: launcher) }
                }
                await store.gate.exitExclusive()
                self.blocked.withLock { $0 = clock.now - since }
                return swapped
            }
            let (swapped, opened) = try result.get()
            return (swapped, opened)
        }

        /// Runs `body` as a task and blocks the pipeline's thread (one of its own, never a task's) until it returns.
        private static func wait<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
            let done = DispatchSemaphore(value: 0)
            let value = Mutex<T?>(nil)
            Task {
                let result = await body()
                value.withLock { $0 = result }
                done.signal()
            }
            done.wait()
            guard let result = value.withLock({ $0.take() }) else { preconditionFailure("the task signalled without a value") }
            return result
        }
    }

    /// With every operation held back: close the pool, `swap` (up to the directory fsync), reopen.
    /// Before the rename, a failure reopens the old store; after it, the new one.
    private func swapClosed(
        _ swap: () throws(InstallPipeline.Failure) -> InstallPipeline.Swapped, installed: LaunchOutcome, launcher: Launcher
    ) throws(InstallPipeline.Failure) -> (InstallPipeline.Swapped, LaunchOutcome) {
        let (pool, name, version, storeURL) = state.withLock { ($0.pool, $0.name, $0.version, $0.storeURL) }
        try InstallPipeline.during(.store) { () throws(ReseedError) in
            try during(.checkStoreNotInUse, path: pool.path) {
                try pool.writeWithoutTransaction { _ = try $0.checkpoint(.truncate) }
                try pool.close()
            }
        }
        let swapped: InstallPipeline.Swapped
        do throws(InstallPipeline.Failure) {
            swapped = try swap()
        } catch {
            // The store it had open, as it was: reopened as is, never installed again under the install's lock.
            let old = LaunchOutcome(action: .upToDate, reason: nil, name: name, version: version, previousVersion: version, change: nil,
                                    storeURL: storeURL, preferencesMovedAside: nil)
            let (reopened, _) = try InstallPipeline.during(.store) { () throws(ReseedError) in try launcher.open(old, repairing: false) }
            state.withLock { $0.pool = reopened }
            throw error
        }
        do throws(ReseedError) {
            let (reopened, opened) = try launcher.open(installed, repairing: false)
            state.withLock { state in
                state.pool = reopened
                state.version = installed.version
            }
            return (swapped, opened)
        } catch {
            throw InstallPipeline.Failure(error, origin: .store, changedNothing: false)
        }
    }
}
