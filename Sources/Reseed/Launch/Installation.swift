import Foundation
import Logging
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

    /// What the store file is, judged from its first 16 bytes.
    enum StoreState { case missing, notSQLite, sqlite }

    func run(forcing forcedReason: LaunchOutcome.Reason?) throws(ReseedError) -> LaunchOutcome {
        let adoption = try adoptLegacyStore()
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
        let recorded: String? = if case .valid(let versions) = contents { versions[manifest.name] } else { nil }
        let recordedSource = entries[manifest.name]?.source ?? .bundle
        let state = try storeState()
        var outcome = LaunchOutcome(
            action: .upToDate, reason: nil, name: manifest.name, version: manifest.version, previousVersion: recorded,
            change: recorded.flatMap { SeedVersion(manifest.version).change(from: SeedVersion($0)) },
            storeURL: URL(fileURLWithPath: storePath, isDirectory: false), preferencesMovedAside: movedAside)
        outcome.adoptedFrom = adoption.adoptedFrom
        outcome.legacyStoresLeftInPlace = adoption.leftInPlace

        if let forcedReason {
            return try install(&outcome, reason: forcedReason, storeState: state)
        }
        if let recorded {
            if recorded == manifest.version, state == .sqlite {
                logger.debug("store is up to date", metadata: ["store": "\(storePath)", "version": "\(recorded)"])
                outcome.source = recordedSource
                return outcome
            }
            // A seed downloaded while the app ran stays until the bundle brings a newer one
            // (or it turns out unusable: missing, not SQLite here; failing to open, in launch()).
            if recordedSource == .download, state == .sqlite, !SeedVersion(manifest.version).isNewer(than: SeedVersion(recorded)) {
                logger.debug("store holds a downloaded seed the bundled one is not newer than; keeping it", metadata: [
                    "store": "\(storePath)", "version": "\(recorded)", "bundled": "\(manifest.version)",
                ])
                outcome.version = recorded
                outcome.change = nil
                outcome.source = .download
                return outcome
            }
            let reason: LaunchOutcome.Reason = switch state {
            case .missing: .storeMissing
            case .notSQLite: .storeInvalid
            case .sqlite: .versionChanged
            }
            return try install(&outcome, reason: reason, storeState: state)
        }
        let unrecorded: LaunchOutcome.Reason = movedAside != nil ? .preferencesCorrupt : .preferencesMissing
        switch state {
        case .missing:
            return try install(&outcome, reason: movedAside != nil ? .preferencesCorrupt : .fresh, storeState: state)
        case .notSQLite:
            return try install(&outcome, reason: movedAside != nil ? .preferencesCorrupt : .storeInvalid, storeState: state)
        case .sqlite:
            let embedded = try? SeedMetadata.read(path: storePath)
            if let embedded, embedded.name == manifest.name, embedded.version == manifest.version {
                logger.notice("store holds the shipped seed but the preferences did not say so; recording its version",
                              metadata: ["store": "\(storePath)", "version": "\(manifest.version)"])
                outcome.preferencesMovedAside = try recordVersion() ?? movedAside
                outcome.action = .repaired
                outcome.reason = unrecorded
                return outcome
            }
            outcome.previousVersion = embedded?.version
            outcome.change = embedded.flatMap { SeedVersion(manifest.version).change(from: SeedVersion($0.version)) }
            return try install(&outcome, reason: unrecorded, storeState: state)
        }
    }

    /// Judges the store from its first 16 bytes, without opening it as a database.
    func storeState() throws(ReseedError) -> StoreState {
        // This process has it open through Reseed: it is a database, and opening and
        // closing a descriptor of it here would drop SQLite's locks on it.
        if OpenStores.isOpen(storePath) { return .sqlite }
        return try during(.inspectStore, path: storePath) {
            let opened: OwnedDescriptor?
            do {
                opened = try directory.openForReading(storeName)
            } catch let failure as FileSystemFailure where failure.reason != nil {
                // A FIFO, a device or a socket in the store's place: no database; replaced and kept aside.
                return .notSQLite
            }
            guard let file = opened else { return .missing }
            let bytes = try directory.fileSystem.reading("read", storePath) { () throws(Errno) in
                try Syscalls.pread(file.raw, count: StoreHeader.magic.count, at: 0)
            }
            return StoreHeader.hasMagic(bytes) ? .sqlite : .notSQLite
        }
    }

    func recordVersion() throws(ReseedError) -> URL? {
        try preferences.record(version: manifest.version, source: source, for: manifest.name, timeout: configuration.lockTimeout, logger: logger)
    }
}
