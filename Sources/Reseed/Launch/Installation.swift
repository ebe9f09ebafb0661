import Foundation
import Logging
import ReseedSystem
import SystemPackage

/// What the install pipeline's steps do, for one request under the store's lock: the seed's
/// manifest, where it comes from, the locked data directory. ``InstallPipeline`` runs them in order.
struct Installation: Sendable {
    let configuration: Launcher.Configuration
    let data: DataDirectory
    /// The data directory, open and locked.
    let directory: Directory
    /// The seed the store is to hold.
    let manifest: SeedManifest
    /// Where it comes from.
    let source: InstallPipeline.Source
    /// Hears of the install's progress.
    var progress: ProgressReport?
    /// For a delta the device made from a channel's metadata-only entry, that entry (see ``applyMetadataOnly(to:incremental:)``).
    var metadataOnly: MetadataOnlyDelta? = nil

    var preferences: PreferencesFile { data.preferences }
    var logger: Logger { configuration.logger }
    var storeName: String { manifest.storeFileName }
    var storePath: String { directory.path(storeName) }
    /// How the copy is checked: as configured for the bundled seed, the full SHA-256 always for a download.
    var verification: Verification { source.recorded == .download ? .checksum : configuration.verification }

    /// What the store file is, judged from its first 16 bytes.
    typealias StoreState = Decision.StoreState

    /// What the preferences record for this store, and its whole entry; a corrupt file is moved aside first (and where returned).
    func readPreferences() throws(ReseedError) -> (recorded: Decision.Recorded?, movedAside: URL?, entry: PreferencesFile.Entry?) {
        var (contents, entries) = try preferences.readEntries()
        var movedAside: URL?
        if case .corrupt(let why) = contents {
            logger.warning("preferences file is corrupt", metadata: ["path": "\(preferences.url.path)", "reason": "\(why)"])
            movedAside = try preferences.moveAsideIfCorrupt(timeout: configuration.lockTimeout, logger: logger)
            (contents, entries) = try preferences.readEntries()
        }
        if case .tooLarge(let size) = contents {
            logger.warning("preferences file is over the size limit; deciding from the store, recording nothing", metadata: [
                "path": "\(preferences.url.path)", "bytes": "\(size)", "limit": "\(PreferencesFile.maximumFileSize)",
            ])
        }
        let recorded = recorded(contents, entries)
        return (recorded, movedAside, recorded == nil ? nil : entries[manifest.name])
    }

    /// The decision from `found`, with the store's embedded metadata read from `storePath` only
    /// where the decision looks at it: the one place a launch and `reseed status` decide.
    static func decide(_ found: Decision.Found, storePath: String) -> Decision {
        var found = found
        if found.looksAtEmbeddedMetadata { found.embedded = try? SeedMetadata.read(path: storePath) }
        return Decision.decide(found)
    }

    /// The version and source recorded for this store, when the preferences are valid and have them.
    func recorded(_ contents: PreferencesFile.Contents, _ entries: [String: PreferencesFile.Entry]) -> Decision.Recorded? {
        Self.recorded(contents, entries, name: manifest.name)
    }

    /// What the preferences read as `contents` and `entries` record for store `name`.
    static func recorded(_ contents: PreferencesFile.Contents, _ entries: [String: PreferencesFile.Entry], name: String) -> Decision.Recorded? {
        guard case .valid = contents, let entry = entries[name], let version = entry.version else { return nil }
        return Decision.Recorded(version: version, source: entry.source ?? .bundle, userStore: entry.userStore)
    }

    /// What acting on `decision` reports before any install: the store up to date, a download kept,
    /// a version to record, or (for ``Decision/install(reason:previousVersion:)``) the install
    /// planned, which the pipeline then carries out and completes.
    func outcome(of decision: Decision, recorded: Decision.Recorded?, preferencesMovedAside movedAside: URL?) -> LaunchOutcome {
        var outcome = LaunchOutcome(
            action: .upToDate, reason: nil, name: manifest.name, version: manifest.version, previousVersion: recorded?.version,
            change: change(from: recorded?.version), storeURL: URL(fileURLWithPath: storePath, isDirectory: false),
            preferencesMovedAside: movedAside)
        switch decision {
        case .upToDate:
            logger.debug("store is up to date", metadata: ["store": "\(storePath)", "version": "\(manifest.version)"])
            outcome.source = recorded?.source ?? .bundle
        case .keepDownloaded(let version):
            logger.debug("store holds a downloaded seed the bundled one is not newer than; keeping it", metadata: [
                "store": "\(storePath)", "version": "\(version)", "bundled": "\(manifest.version)",
            ])
            outcome.version = version
            outcome.change = nil
            outcome.source = .download
        case .recordVersion(let reason):
            logger.notice("store holds the shipped seed but the preferences did not say so; recording its version",
                          metadata: ["store": "\(storePath)", "version": "\(manifest.version)"])
            outcome.action = .repaired
            outcome.reason = reason
        case .install(let reason, let previousVersion):
            outcome.reason = reason
            outcome.source = source.recorded
            outcome.verification = verification
            outcome.previousVersion = previousVersion
            outcome.change = change(from: previousVersion)
        }
        return outcome
    }

    /// Records that the user's `tables` stay in the old store file, kept aside at `kept`: a later
    /// release that declares one of them carries it from there.
    func recordStranded(_ tables: [String], keptAt kept: URL) throws(ReseedError) {
        _ = try preferences.record([.strandedIn(PreferencesFile.StrandedTables(file: kept.lastPathComponent, tables: tables))],
                                   for: manifest.name, timeout: configuration.lockTimeout, logger: logger)
    }

    /// Upgrade or downgrade from `previous` to the offered seed, when both can be ordered.
    private func change(from previous: String?) -> SeedVersion.Change? {
        previous.flatMap { SeedVersion(manifest.version).change(from: SeedVersion($0)) }
    }

    /// Judges the store from its first 16 bytes, without opening it as a database.
    func storeState() throws(ReseedError) -> StoreState {
        try .judging(storeName, in: directory)
    }

    /// Step 5: records the seed's version and source; returns where corrupt preferences were moved, if they were.
    ///
    /// With a user store, the entry also says the store file holds no user tables (`"userStore"`);
    /// without one, a `"userStore"` an earlier launch recorded is cleared. The seed's content hash
    /// is recorded when its manifest has one, and an earlier one cleared when it has none.
    ///
    /// When a store was `installed` just now, the store file's fingerprint as the swap left it is
    /// recorded too, with the content hash it vouches for and the incremental content hash (each
    /// cleared for a manifest without one): a later delta checks its result from the changed rows
    /// only while the file still has that fingerprint.
    ///
    /// `also` is recorded in the same write (an update's channel state).
    func recordVersion(installed: InstallPipeline.Swapped?, also: [PreferencesFile.Change] = []) throws(ReseedError) -> URL? {
        var changes: [PreferencesFile.Change] = [.version(manifest.version), .source(source.recorded)] + also
        if let userStore = configuration.userStore { changes.append(.userStore(userStore.name)) }
        // The installed seed's content hash: where a channel's row-level delta may start from (never its version).
        if let contentHash = manifest.contentHash { changes.append(.contentHash(contentHash)) }
        var clearing: [PreferencesFile.Entry.Field] = configuration.userStore == nil ? [.userStore] : []
        if manifest.contentHash == nil { clearing.append(.contentHash) }
        if let installed {
            if let incremental = manifest.incrementalContentHash, installed.storeFingerprint != nil {
                changes.append(.incrementalContentHash(incremental))
            } else {
                clearing.append(.incrementalContentHash)
            }
            // The fingerprint always: a later launch tells by it that a swap's record was cut short (``UnrecordedInstall``).
            if let fingerprint = installed.storeFingerprint { changes.append(.storeFingerprint(fingerprint)) } else { clearing.append(.storeFingerprint) }
            // What the fingerprint vouches for: the seed just swapped in, whole.
            if let contentHash = manifest.contentHash, installed.storeFingerprint != nil {
                changes.append(.fingerprintedContentHash(contentHash))
            } else {
                clearing.append(.fingerprintedContentHash)
            }
        }
        return try preferences.record(changes, for: manifest.name, clearing: clearing, timeout: configuration.lockTimeout, logger: logger)
    }

    /// Step 5 is due when the store changed, the preferences did not say what it holds, or they
    /// do not say whether it holds user tables as the configuration needs.
    func needsRecording(_ decision: Decision, recorded: Decision.Recorded?) -> Bool {
        !decision.writesNothing || recorded?.userStore != configuration.userStore?.name
    }
}

extension Decision.StoreState {
    /// Judges the store file `name` in `directory` from its first 16 bytes, without opening it as a database.
    package static func judging(_ name: String, in directory: Directory) throws(ReseedError) -> Self {
        let storePath = directory.path(name)
        // This process has it open through Reseed: it is a database, and opening and
        // closing a descriptor of it here would drop SQLite's locks on it.
        if OpenStores.isOpen(storePath) { return .sqlite }
        return try during(.inspectStore, path: storePath) {
            let opened: OwnedDescriptor?
            do {
                opened = try directory.openForReading(name)
            } catch let failure as FileSystemFailure where failure.reason != nil {
                // A FIFO, a device or a socket in the store's place: no database; replaced and kept aside.
                return .notSQLite
            }
            guard let file = opened else { return .missing }
            let bytes = try directory.fileSystem.reading("read", storePath) { () throws(Errno) in
                try file.read(count: StoreHeader.magic.count, at: 0)
            }
            return StoreHeader.hasMagic(bytes) ? .sqlite : .notSQLite
        }
    }
}
