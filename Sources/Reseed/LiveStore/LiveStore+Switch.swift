import Foundation
import GRDB

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
            let outcome = try await offload { () throws(ReseedError) in try other.prepare() }
            let current = self.state.withLock { $0.pool.path }
            if current == outcome.storeURL.path {
                self.state.withLock { $0.launcher = other }
                return outcome
            }
            await self.gate.enterExclusive()
            let switched = await offload { () -> Result<DatabasePool, ReseedError> in
                Result { () throws(ReseedError) in try self.closeAndOpen(outcome.storeURL.path, with: other) }
            }
            if case .success(let pool) = switched {
                self.state.withLock { state in
                    state = State(launcher: other, pool: pool, name: outcome.name, version: outcome.version)
                }
            }
            await self.gate.exitExclusive()
            _ = try switched.get()
            self.emit(.switched(store: outcome.storeURL, version: outcome.version))
            return outcome
        }
    }

    /// Opens the other store first, so a failure leaves the current one open; then closes the current one.
    private func closeAndOpen(_ path: String, with launcher: Launcher) throws(ReseedError) -> DatabasePool {
        let pool = try during(.open, path: path) {
            try launcher.openWaiting(URL(fileURLWithPath: path, isDirectory: false)) { try DatabasePool(path: $0.path, configuration: launcher.configuration.database) }
        }
        OpenStores.register(pool, path: path)
        let old = state.withLock { $0.pool }
        try during(.open, path: old.path) {
            try old.writeWithoutTransaction { _ = try $0.checkpoint(.truncate) }
            try old.close()
        }
        return pool
    }
}
