import Foundation
import GRDB
import ReseedSystem

extension LiveStore {
    /// Makes the store at another location the live one: another account's store, a test-data store, and back.
    ///
    /// The other location gets the launcher's rules first (its bundled seed is
    /// installed when its store is missing or its recorded version differs);
    /// each location keeps its own preferences and recorded version. The
    /// current store is checkpointed and closed, the other opened; nothing is
    /// deleted. Operations wait during the switch, then run on the new store.
    ///
    /// ```swift
    /// let account = Launcher(seed: bundledSeed, dataDirectory: appSupport.appending(path: "accounts/\(id)"))
    /// try await store.switchTo(account)
    /// ```
    ///
    /// - Returns: what the launch at the other location did.
    /// - Throws: ``ReseedError``; the current store then stays open.
    @discardableResult
    public func switchTo(_ other: Launcher) async throws(ReseedError) -> LaunchOutcome {
        try await changes.run { () async throws(ReseedError) -> LaunchOutcome in
            var outcome = try await offload { () throws(ReseedError) in try other.prepare() }
            let current = self.state.withLock { $0.storeURL.path }
            if current == outcome.storeURL.path, self.userStoreURL == other.userStoreURL {
                self.state.withLock { $0.launcher = other }
                return outcome
            }
            await self.gate.enterExclusive()
            let prepared = outcome
            let switched = await offload { () -> Result<(DatabasePool, LaunchOutcome), ReseedError> in
                Result { () throws(ReseedError) in try self.closeAndOpen(prepared, with: other) }
            }
            if case .success(let (pool, opened)) = switched {
                self.state.withLock { state in
                    state = State(launcher: other, pool: pool, name: opened.name, version: opened.version, storeURL: opened.storeURL)
                }
            }
            await self.gate.exitExclusive()
            outcome = try switched.get().1
            self.emit(.switched(store: outcome.storeURL, version: outcome.version))
            return outcome
        }
    }

    /// Opens the other store first, as a launch does (with a user store: migrated and checked; a
    /// store that is not a database installed again), so a failure leaves the current one open;
    /// then closes the current one.
    private func closeAndOpen(_ prepared: LaunchOutcome, with launcher: Launcher) throws(ReseedError) -> (DatabasePool, LaunchOutcome) {
        let (pool, outcome) = try launcher.open(prepared)
        let old = state.withLock { $0.pool }
        try during(.open, path: old.path) {
            try old.writeWithoutTransaction { _ = try $0.checkpoint(.truncate) }
            try old.close()
        }
        return (pool, outcome)
    }
}
