import Foundation
import Logging
import ReseedSystem
import SystemPackage

/// One launch, under the store's lock: decide, and install when needed.
struct Installation {
    let launcher: Launcher
    let seed: Seed
    let directory: Directory
    let preferences: PreferencesFile
    /// Where `seed` comes from, recorded beside its version. Default the bundle.
    var source: SeedSource = .bundle

    var manifest: SeedManifest { seed.manifest }
    var configuration: Launcher.Configuration { launcher.configuration }
    var logger: Logger { configuration.logger }
    var storeName: String { manifest.storeFileName }
    var storePath: String { directory.path(storeName) }
    /// How the copy is checked: as configured for the bundled seed, the full SHA-256 always for a download.
    var verification: Verification { source == .download ? .checksum : configuration.verification }

    /// What the store file is, judged from its first 16 bytes.
    typealias StoreState = Decision.StoreState

    /// Steps 2 to 5 of the install (ARCHITECTURE.md) for a launch or a seed that arrived at runtime;
    /// the caller holds the lock of step 1 and opens the store, step 6.
    ///
    /// - Parameters:
    ///   - forcedReason: install even when the store looks up to date (it failed to open).
    ///   - expected: for an update, the version it found recorded and decided against (`.some(nil)`:
    ///     none). When another process recorded another one since (a launch of an updated app), the
    ///     seed is refused: it could be older than what that launch installed.
    ///   - pipelineSource: the seed file itself, or a delta applied to the installed seed.
    /// - Throws: the stage that failed and its ``ReseedError``.
    func run(
        forcing forcedReason: LaunchOutcome.Reason?, expecting expected: String?? = nil, from pipelineSource: InstallPipeline.Source = .seed
    ) throws(InstallPipeline.Failure) -> LaunchOutcome {
        let pipeline = InstallPipeline(installation: self, source: pipelineSource)
        // Step 2, read: a legacy store moved into place (a launch only), the preferences, the store's
        // first 16 bytes (and its embedded version, only when nothing is recorded for a database in place).
        let (adoption, recorded, movedAside, state, user, entry, unrecorded) = try InstallPipeline.during(.prepare) { () throws(ReseedError) in
            let adoption = source == .bundle ? try adoptLegacyStore() : Adoption()
            var (recorded, movedAside, entry) = try readPreferences()
            // A swap whose record a crash cut short: decide from, and record, what the store holds.
            let unrecorded = UnrecordedInstall.find(name: manifest.name, entry: entry, in: directory)
            if let unrecorded, !unrecorded.isRecordedVersion {
                recorded = try unrecorded.record(in: preferences, name: manifest.name, bundled: source == .bundle ? manifest.version : nil,
                                                 userStore: recorded?.userStore, timeout: configuration.lockTimeout, logger: logger)
            }
            if let expected, let now = recorded?.version, now != expected, now != manifest.version {
                throw ReseedError(.channelRefused, step: .checkManifest, path: preferences.url.path, message:
                    "\(manifest.name) \(now) was installed while this update fetched \(manifest.version) over \(expected ?? "nothing"); not installed (the next update starts from \(now))")
            }
            let state = try storeState()
            // With a user store: an unusable one kept aside, the user's tables copied out of the store.
            let user = try prepareUserStore(recorded: recorded, entry: entry, storeState: state, from: pipelineSource)
            return (adoption, recorded, movedAside, state, user, entry, unrecorded)
        }
        // Step 2, decide.
        let decision = Self.decide(Decision.Found(
            name: manifest.name, version: manifest.version, source: source, recorded: recorded, store: state,
            preferencesMovedAside: movedAside != nil, forcing: forcedReason ?? user.forcing, storeHoldsUserTables: user.storeHoldsUserTables),
            storePath: storePath)
        // Steps 3 and 4, act: copy, verify and swap in the seed when the decision is to install.
        // Tables of the user's left undeclared in the store file kept aside: a later release that declares
        // them carries them. (A declared one left there because its user-store table holds other rows is not
        // tried again: that would fail the same way.)
        let undeclared = user.stranded.filter { table in !(configuration.userStore?.userTables ?? []).contains { $0.isSameSQLName(as: table) } }
        var (outcome, swapped) = try act(on: decision, through: pipeline, recorded: recorded, storeState: state, preferencesMovedAside: movedAside,
                                         keepingAside: user.keepsStoreAside, recordingStranded: undeclared)
        // Step 5, record the version when the store changed or the preferences did not say what it holds.
        if let unrecorded, unrecorded.isRecordedVersion, decision.writesNothing {
            // A restored or copied file holding the recorded version: read once, not at every launch. Best effort.
            _ = try? unrecorded.recordFingerprint(in: preferences, name: manifest.name, timeout: configuration.lockTimeout, logger: logger)
        }
        if needsRecording(decision, recorded: recorded), let aside = try pipeline.record(installed: swapped) {
            outcome.preferencesMovedAside = aside
        }
        user.report(in: &outcome)
        outcome.adoptedFrom = adoption.adoptedFrom
        outcome.legacyStoresLeftInPlace = adoption.leftInPlace
        outcome.userStoreChecked = entry?.userStoreChecked
        return outcome
    }

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

    /// Acts on `decision`: installs the seed (steps 3 and 4) when it says so, and says what the launch
    /// did and what it swapped in. Recording the version (step 5) is the caller's.
    func act(
        on decision: Decision, through pipeline: InstallPipeline, recorded: Decision.Recorded?, storeState: StoreState,
        preferencesMovedAside movedAside: URL?, keepingAside: Bool = false, recordingStranded stranded: [String] = []
    ) throws(InstallPipeline.Failure) -> (LaunchOutcome, InstallPipeline.Swapped?) {
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
            logger.info("installing seed", metadata: [
                "store": "\(storePath)", "version": "\(manifest.version)", "reason": "\(reason.rawValue)",
                "previous": "\(previousVersion ?? "none")",
            ])
            // A store that failed to open is kept aside, and one that holds tables of the user's left in it.
            // The stranded tables are recorded as soon as the store has its second name, before the rename: a
            // kill after the swap must not leave the kept file unnamed.
            let recordStranded: ((URL) throws(ReseedError) -> Void)? = stranded.isEmpty ? nil : { kept throws(ReseedError) in
                _ = try preferences.record([.strandedIn(PreferencesFile.StrandedTables(file: kept.lastPathComponent, tables: stranded))],
                                           for: manifest.name, timeout: configuration.lockTimeout, logger: logger)
            }
            let installed = try pipeline.install(storeState: storeState, keepAside: reason == .storeInvalid || keepingAside,
                                                 onKeptAside: recordStranded, progress: configuration.progress)
            logger.info("installed seed", metadata: ["store": "\(storePath)", "version": "\(manifest.version)"])
            outcome.action = .installed
            outcome.reason = reason
            outcome.source = source
            outcome.verification = verification
            outcome.previousVersion = previousVersion
            outcome.change = change(from: previousVersion)
            outcome.removedLeftovers = installed.staged.removedLeftovers
            outcome.storeKeptAside = installed.swapped.keptAside
            return (outcome, installed.swapped)
        }
        return (outcome, nil)
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
    /// When a store was `installed` just now, its incremental content hash and the store file's
    /// fingerprint as the swap left it are recorded too (or cleared, for a manifest without one): a
    /// later delta checks its result from the changed rows only while the file still has that fingerprint.
    func recordVersion(installed: InstallPipeline.Swapped?) throws(ReseedError) -> URL? {
        var changes: [PreferencesFile.Change] = [.version(manifest.version), .source(source)]
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
