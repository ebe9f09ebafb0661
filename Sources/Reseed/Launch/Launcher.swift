import Foundation
import GRDB
import Logging
import ReseedSystem

/// Keeps the store in the app's data directory at the version of the seed shipped in the bundle.
///
/// Call it once at startup. When the version recorded in the preferences
/// equals the shipped one and the store is there, it only reads two small
/// JSON files and the store's first 16 bytes, then opens the store. So it does
/// when the store holds a seed downloaded from a channel that the shipped one is
/// not newer than (see ``SeedSource``). Otherwise
/// it installs the bundled seed safely, and a crash at any instant leaves
/// either the old store with its recorded version or the new store:
///
/// 1. lock the store (a lock file with `flock`, plus an in-process lock);
/// 2. read the preferences and the manifest; decide;
/// 3. copy the seed to a temp file beside the store (`O_EXCL`, no link
///    followed) with the fastest copy the OS has, fsync, verify; a single-file
///    store's copy switched to WAL, with the `-wal` the app's launches keep;
/// 4. make sure no other connection has the old store open; remove its
///    `-wal`, `-shm`, `-journal`; rename the copy over it; fsync the directory;
///    the copy's `-wal` beside it;
/// 5. record the new version in the preferences (atomically);
/// 6. unlock; open the store.
///
/// ```swift
/// let launcher = Launcher(
///     seed: Bundle.main.url(forResource: "SeedData", withExtension: nil)!,
///     dataDirectory: URL.applicationSupportDirectory)
/// let (database, outcome) = try launcher.launch()   // a GRDB DatabasePool
/// logger.info("store \(outcome.action) at \(outcome.version)")
/// ```
public struct Launcher: Sendable {
    /// Where the seed is: its manifest, or a folder holding exactly one `*.manifest.json`.
    public var seedURL: URL
    /// The folder of the live store, created when missing.
    public var dataDirectory: URL
    public var configuration: Configuration
    /// The seam every file action goes through (tests observe and fail actions with it).
    var fileSystem = FileSystem()

    public init(seed: URL, dataDirectory: URL, configuration: Configuration = Configuration()) {
        self.seedURL = seed
        self.dataDirectory = dataDirectory
        self.configuration = configuration
    }

    /// The preferences file in use: ``Configuration/preferencesURL`` or `<data-dir>/preferences.json`.
    public var preferencesURL: URL {
        configuration.preferencesURL ?? dataDirectory.appendingPathComponent(PreferencesFile.defaultFileName, isDirectory: false)
    }

    /// Brings the store up to date and opens it as a GRDB `DatabasePool`.
    ///
    /// - Returns: the open pool and what the launch did.
    /// - Throws: ``ReseedError``, naming the step and the path; the old store and
    ///   its recorded version are then left as they were, but for a failure to open
    ///   (step `open`) a store just installed: that verified store stays, and the next
    ///   launch opens it.
    ///
    /// With a ``Configuration/userStore``, the pool's `main` database is the user store, migrated
    /// by the app's migrator, with the seed attached read-only as ``seedSchema``; the outcome
    /// then says what happened to the user store too (``LaunchOutcome/userStoreURL``,
    /// ``LaunchOutcome/importedTables``, ``LaunchOutcome/orphans``).
    public func launch() throws(ReseedError) -> (database: DatabasePool, outcome: LaunchOutcome) {
        try open(prepare())
    }

    /// Brings the store up to date and opens it with `open` (a `DatabaseQueue`,
    /// another SQLite library), given the store's URL.
    ///
    /// With a ``Configuration/userStore`` the user's tables are imported as by ``launch()``, but
    /// `open` gets the seed's URL: attaching it to the user store (``LaunchOutcome/userStoreURL``)
    /// and migrating that are then the app's.
    ///
    /// When the store fails to open as a database (`SQLITE_NOTADB`,
    /// `SQLITE_CORRUPT`) though it looked up to date, the seed is installed
    /// once more (reason ``LaunchOutcome/Reason/storeInvalid``) and opened again.
    public func launch<Store>(opening open: (URL) throws -> Store) throws(ReseedError) -> (Store, LaunchOutcome) {
        try self.open(prepare(), with: open)
    }

    /// Opens the store a launch prepared as the app's pool, the one way every journey opens one
    /// (a launch, ``LiveStore/switchTo(_:)``): the app's configuration, the seed attached to a user
    /// store, the user store migrated and checked (``finishOpening(_:outcome:)``), and the repair of
    /// a store that does not open (``open(_:with:)``).
    func open(_ prepared: LaunchOutcome, repairing: Bool = true) throws(ReseedError) -> (database: DatabasePool, outcome: LaunchOutcome) {
        var (opened, outcome) = try open(prepared, repairing: repairing) { url in try openPoolReadingSchemaVersion(seed: url) }
        try finishOpening(opened.pool, outcome: &outcome, schemaVersion: opened.userSchemaVersion)
        return (opened.pool, outcome)
    }

    /// Opens the store `prepared` names with `open`, waiting out a moment's lock. A store that looked
    /// up to date but is not a database (`SQLITE_NOTADB`, `SQLITE_CORRUPT`) gets the seed installed
    /// once more (reason ``LaunchOutcome/Reason/storeInvalid``; the file is kept aside) and is opened again.
    ///
    /// Without `repairing` (a live store reopening the store it had open, under the install's lock) a
    /// store that does not open fails as it is.
    func open<Store>(_ prepared: LaunchOutcome, repairing: Bool = true, with open: (URL) throws -> Store) throws(ReseedError) -> (Store, LaunchOutcome) {
        do {
            return (try openWaiting(prepared.storeURL, open), prepared)
        } catch let error as DatabaseError where repairing && prepared.action != .installed && Self.isUnusable(error) {
            configuration.logger.warning("store did not open; installing the seed again", metadata: ["error": "\(error)"])
            let repaired = try prepare(forcing: .storeInvalid)
            return (try during(.open, path: repaired.storeURL.path) { try openWaiting(repaired.storeURL, open) }, repaired)
        } catch {
            throw ReseedError.wrapping(error, step: .open, path: prepared.storeURL.path)
        }
    }

    /// Brings the store up to date without opening it, for apps that use another SQLite library.
    ///
    /// Without a ``Configuration/userStore``, a store it installs is in WAL mode, with a `-wal` holding
    /// one commit that changes nothing: a GRDB pool opening it writes nothing. Any library reads it
    /// as it is; one that switches it to a rollback journal writes the file (a later delta then
    /// hashes its whole result once).
    ///
    /// - Returns: what the launch did; ``LaunchOutcome/storeURL`` is the store to open.
    /// - Throws: ``ReseedError``.
    public func prepare() throws(ReseedError) -> LaunchOutcome {
        try prepare(forcing: nil)
    }

    /// Opens the store, retrying while another process holds it locked for a moment (the first
    /// opening of a store switches it to WAL, which takes an exclusive lock), up to the busy timeout.
    func openWaiting<Store>(_ url: URL, _ open: (URL) throws -> Store) throws -> Store {
        var busy: DatabaseError?
        let store = try Polling.until(ContinuousClock.now.advanced(by: configuration.busyTimeout), every: .milliseconds(5)) { () throws -> Store? in
            do {
                return try open(url)
            } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED {
                busy = error
                return nil
            }
        }
        if let store { return store }
        throw busy ?? DatabaseError(resultCode: .SQLITE_BUSY)
    }

    private static func isUnusable(_ error: DatabaseError) -> Bool {
        error.resultCode == .SQLITE_NOTADB || error.resultCode == .SQLITE_CORRUPT
    }

    private func prepare(forcing forcedReason: LaunchOutcome.Reason?) throws(ReseedError) -> LaunchOutcome {
        let seed = try Seed(at: seedURL)
        do {
            return try pipeline.run(InstallPipeline.Request(seed, from: .bundle, forcing: forcedReason), holder: ClosedStore())
        } catch {
            throw error.error
        }
    }

    /// What a launch would decide now, from what it would find, writing nothing: the decision
    /// `reseed status` shows.
    ///
    /// Read as a launch reads them: the preferences (corrupt ones count as moved aside, as a launch
    /// would move them), the store's first 16 bytes, and its embedded metadata only where a launch
    /// would read it. Taken without the store's lock; a user store's import and legacy stores are
    /// not looked at.
    ///
    /// - Throws: ``ReseedError`` when the seed's manifest or the preferences cannot be read.
    package func plannedDecision() throws(ReseedError) -> Decision {
        let manifest = try Seed(at: seedURL).manifest
        let (contents, entries) = try preferences.readEntries()
        let store: Decision.StoreState
        var recorded = Installation.recorded(contents, entries, name: manifest.name)
        if let directory = try? FileSystem().openDirectory(dataDirectory, create: false) {
            store = try .judging(manifest.storeFileName, in: directory)
            // A swap whose record a crash cut short: what the store holds, as a launch would record it.
            if recorded != nil, let unrecorded = UnrecordedInstall.find(name: manifest.name, entry: entries[manifest.name], in: directory),
               !unrecorded.isRecordedVersion {
                recorded = unrecorded.recorded(bundled: manifest.version, userStore: recorded?.userStore)
            }
        } else {
            store = .missing
        }
        let corrupt = if case .corrupt = contents { true } else { false }
        return Installation.decide(Decision.Found(
            name: manifest.name, version: manifest.version, source: .bundle,
            recorded: recorded, store: store, preferencesMovedAside: corrupt),
            storePath: dataDirectory.appendingPathComponent(manifest.storeFileName).path)
    }

    /// Removes, under the store's lock, temporary files an interrupted install or live replacement left.
    ///
    /// A launch that installs does this itself; the up-to-date path does not look, so a
    /// ``LiveStore`` (whose replacements can be interrupted while the version stays) calls it on opening.
    func removeLeftovers(ofStore name: String) throws(ReseedError) -> [String] {
        let locked = try data.lockStore(named: name)
        defer { locked.lock.release() }
        return try during(.cleanUp, path: locked.directory.url.path) {
            try locked.directory.removeTemporaryFiles { StoreLayout.isTemporary($0, of: StoreLayout.fileName(ofStore: name)) }
        }
    }

    /// The preferences file, through this launcher's file-system seam.
    var preferences: PreferencesFile { PreferencesFile(url: preferencesURL, fileSystem: fileSystem) }

    /// The data directory as the install, a live store and an update work with it.
    var data: DataDirectory {
        DataDirectory(url: dataDirectory, preferences: preferences, fileSystem: fileSystem, lockTimeout: configuration.lockTimeout)
    }

    /// The install pipeline of this launcher's data directory and configuration.
    var pipeline: InstallPipeline { InstallPipeline(data: data, configuration: configuration) }
}
