import Foundation
import GRDB
import Logging

extension Launcher {
    /// Everything about a launch that has a default.
    ///
    /// ```swift
    /// var configuration = Launcher.Configuration()
    /// configuration.verification = .checksum
    /// configuration.logger = Logger(label: "com.example.app.reseed")
    /// ```
    public struct Configuration: Sendable {
        /// The preferences file. Default nil: `<data-dir>/preferences.json`.
        public var preferencesURL: URL?
        /// How a copied seed is checked before it replaces the store. Default ``Verification/size``.
        public var verification: Verification = .size
        /// How long to wait for another launcher of the same store (in this process or another)
        /// before failing with ``ReseedError/Code/lockTimeout``. Default 60 seconds.
        public var lockTimeout: Duration = .seconds(60)
        /// How long to wait for other connections to close the old store before failing
        /// with ``ReseedError/Code/storeBusy`` and changing nothing; also how long the store's
        /// connections wait for a lock another connection holds, when ``database`` keeps GRDB's
        /// default `busyMode` (which fails at once). Default 5 seconds.
        public var busyTimeout: Duration = .seconds(5)
        /// The GRDB configuration the store is opened with by ``Launcher/launch()``. Default GRDB's,
        /// with `busyMode` `.timeout(busyTimeout)` in place of GRDB's `.immediateError`.
        public var database = GRDB.Configuration()
        /// Where the launcher logs what it decides and does. Default: silent (a no-op handler);
        /// pass the app's logger to see the decisions.
        public var logger = Logger(label: "reseed") { _ in SwiftLogNoOpLogHandler() }
        /// Earlier locations of the store, adopted once when the store is missing at the
        /// current location (see ``LegacyStore``). Default none.
        public var legacyStores: [LegacyStore] = []
        /// Called while a seed is installed (``InstallProgress/Step/install``). Default nil.
        ///
        /// A seed file's copy reports bytes copied of its size. A channel's delta reports its copy
        /// of the installed store, its apply and its content hash on one scale (see ``InstallProgress``):
        /// a bar goes once from 0 to the total, never back, whichever way the seed arrives.
        ///
        /// ```swift
        /// configuration.progress = { progress in logger.debug("installing: \(Int(progress.fraction * 100))%") }
        /// ```
        public var progress: (@Sendable (InstallProgress) -> Void)?
        /// The app's own data in a store of its own that no seed update touches (see ``UserStore``).
        /// Default nil: the single-file store of earlier releases, which the app may write to and
        /// every install replaces.
        public var userStore: UserStore?

        public init() {}
    }

    /// Where an earlier release of the app kept the store: another folder, another file name.
    ///
    /// At launch, under the store's lock: when the store is missing at the current
    /// location and present here, it is moved (with its WAL checkpointed into it, so
    /// uncheckpointed rows survive) to the current location, and its recorded version
    /// is carried over, so the usual version check then decides whether the bundled
    /// seed replaces it. When both exist the current store wins and this one is left in
    /// place and reported in ``LaunchOutcome/legacyStoresLeftInPlace``.
    ///
    /// ```swift
    /// configuration.legacyStores = [LegacyStore(storeURL: documents.appending(path: "Triage.sqlite"))]
    /// ```
    public struct LegacyStore: Sendable, Hashable {
        /// The old store file.
        public var storeURL: URL
        /// The preferences file that recorded its version. Default nil: `preferences.json` beside it.
        public var preferencesURL: URL?
        /// The store name its version was recorded under. Default nil: the seed's name.
        public var recordedName: String?

        public init(storeURL: URL, preferencesURL: URL? = nil, recordedName: String? = nil) {
            self.storeURL = storeURL
            self.preferencesURL = preferencesURL
            self.recordedName = recordedName
        }
    }
}
