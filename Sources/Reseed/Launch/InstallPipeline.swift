import Foundation
import Logging
import ReseedSystem

/// The one install every journey runs: a launch, a legacy store's adoption, a live replace, a
/// switch (through a launch of the other store), and a channel's full or delta update of a closed
/// or a live store.
///
/// ```
/// lock ─▶ prepare ─▶ decide ─▶ clean ─▶ check space ─▶ copy / apply ─▶ verify ─▶ check the user store
///      ─▶ ready the copy ─▶ hold the store (holder): swap, reopen ─▶ record ─▶ unlock
/// ```
///
/// A caller hands it a ``Request`` (what to install, from which ``Source``) and says how it holds
/// the store (``StoreHolder``): with no connection of this process on it (``ClosedStore``: a
/// launch, an update of a closed store), or open in a ``LiveStore``, which holds operations back,
/// closes its pool for the swap and reopens through ``Launcher/open(_:)``. Nothing else differs.
///
/// A failure says where it came from (``Failure/origin``) and whether anything changed. Before the
/// swap nothing the user had has changed; the temp files a step made are removed.
struct InstallPipeline: Sendable {
    /// Where a failure came from, set by the code that knows.
    enum Origin: String, Sendable {
        /// The source itself: a seed that does not verify, a delta that does not apply or whose
        /// result is not the seed, a delta's download. Another source of the same seed may succeed.
        case source
        /// What is in the data directory: the preferences, the store or the user store (busy,
        /// unreadable, clashing), or another install recorded since the request was decided.
        case store
        /// The machine: a short disk, an I/O error writing the copy, a lock held too long.
        case environment
    }

    /// A failed install: the error (whose ``ReseedError/step`` names the step), where it came from,
    /// and whether the store and the preferences are as they were.
    struct Failure: Error, Sendable, CustomStringConvertible {
        var error: ReseedError
        var origin: Origin
        /// True before the swap: the store and the preferences are as they were.
        var changedNothing: Bool
        /// The error's own sentence: whoever prints a failure prints what a user can read.
        var description: String { error.description }
        /// Another source of the same seed may succeed (a delta's update then downloads the full
        /// seed): the failure was this source's own, and nothing changed.
        var isTheSources: Bool { origin == .source && changedNothing }

        init(_ error: ReseedError, origin: Origin, changedNothing: Bool = true) {
            self.error = error
            self.origin = origin
            self.changedNothing = changedNothing
        }
    }

    /// Where the seed comes from: what the copy stage reads, and what the preferences record.
    enum Source: Sendable {
        /// The seed shipped in the app's bundle, copied as it is (a clone where the filesystem can).
        case bundled(Seed)
        /// A seed file that arrived at runtime (a channel's download, a file the app fetched),
        /// copied with its SHA-256 checked.
        case downloaded(Seed)
        /// A gzip seed file, bundled or downloaded (`recordedAs`), decompressed into the copy with
        /// the database's SHA-256 checked.
        case compressed(Seed, recordedAs: SeedSource)
        /// A row-level delta, decompressed at `file`, applied to a copy of the installed store,
        /// which must hold the seed whose content hash is `from`.
        case delta(file: String, from: String)

        /// `seed` as it arrived from `origin`: compressed when its manifest says so.
        static func seed(_ seed: Seed, from origin: SeedSource) -> Source {
            if seed.isCompressed { return .compressed(seed, recordedAs: origin) }
            return origin == .bundle ? .bundled(seed) : .downloaded(seed)
        }

        /// What the preferences record as the store's source.
        var recorded: SeedSource {
            switch self {
            case .bundled: .bundle
            case .compressed(_, let origin): origin
            case .downloaded, .delta: .download
            }
        }

        /// The seed file, for every source but a delta.
        var seed: Seed? {
            switch self {
            case .bundled(let seed), .downloaded(let seed), .compressed(let seed, _): seed
            case .delta: nil
            }
        }

        /// The file the copy stage reads: the seed file, or the delta.
        var path: String {
            switch self {
            case .bundled(let seed), .downloaded(let seed), .compressed(let seed, _): seed.fileURL.path
            case .delta(let file, _): file
            }
        }
    }

    /// What to install.
    struct Request: Sendable {
        /// The seed the store is to hold (for a delta, the channel's description of its result).
        var manifest: SeedManifest
        var source: Source
        /// Install even when the store looks up to date (it failed to open).
        var forcing: LaunchOutcome.Reason?
        /// For an update, the version it found recorded and decided against (`.some(nil)`: none).
        /// When another process recorded another one since (a launch of an updated app), the seed
        /// is refused: it could be older than what that launch installed.
        var expecting: String??
        /// Recorded in the same preferences write as the new version (a channel's state).
        var recordingAlso: [PreferencesFile.Change] = []
        /// Hears of the install (``InstallProgress/Step/install``). Default the launcher's ``Launcher/Configuration/progress``.
        var progress: ProgressReport?
        /// The metadata-only entry the delta was made from, when the device made it (``Installation/metadataOnly``).
        var metadataOnly: MetadataOnlyDelta?

        /// `seed`, as it arrived from `origin`.
        init(_ seed: Seed, from origin: SeedSource, forcing: LaunchOutcome.Reason? = nil, expecting: String?? = nil) {
            self.manifest = seed.manifest
            self.source = .seed(seed, from: origin)
            self.forcing = forcing
            self.expecting = expecting
        }

        /// The seed `manifest` describes, made by applying the delta at `file` to the installed seed (content hash `from`).
        init(delta file: String, from contentHash: String, making manifest: SeedManifest, expecting: String??) {
            self.manifest = manifest
            self.source = .delta(file: file, from: contentHash)
            self.expecting = expecting
        }
    }

    /// A verified copy beside the store, ready for the swap.
    struct Staged: Sendable {
        /// Its temp name in the data directory (`.<store>.reseed-tmp-…`).
        var temporary: String
        /// Temp files of an earlier, interrupted install removed first.
        var removedLeftovers: [String]
    }

    /// A store just swapped in.
    struct Swapped: Sendable {
        /// Where the old store was kept, when it was kept aside.
        var keptAside: URL?
        /// The old store's temp second name, when the holder retires it after the swap (see
        /// ``StoreHolder/retiresOldStore``): removed once the holder let operations go.
        var retired: String?
        /// The new store file's fingerprint and its `-wal`'s (``StoreWAL/fingerprint(of:in:)``) right
        /// after the swap, before this install lets anything open it (nil when it cannot be read: the
        /// incremental content hash is then not recorded).
        var storeFingerprint: String?
    }

    /// The data directory the store lives in.
    var data: DataDirectory
    var configuration: Launcher.Configuration

    /// Runs the install of `request` under the store's lock, `holder` holding the store for the swap.
    ///
    /// - Returns: what happened (``LaunchOutcome``), with the store reopened by `holder` when it holds one.
    func run(_ request: Request, holder: some StoreHolder) throws(Failure) -> LaunchOutcome {
        let locked = try InstallPipeline.during(.environment) { () throws(ReseedError) in try data.lockStore(named: request.manifest.name) }
        defer { locked.lock.release() }
        let installation = Installation(configuration: configuration, data: data, directory: locked.directory,
                                        manifest: request.manifest, source: request.source, progress: request.progress ?? configuration.progress,
                                        metadataOnly: request.metadataOnly)
        return try Run(installation: installation, request: request).go(holder: holder)
    }

    /// Runs `body`: its error comes out as a failure from `origin`; `changed` once the store was swapped.
    static func during<T>(_ origin: Origin, changed: Bool = false, _ body: () throws(ReseedError) -> T) throws(Failure) -> T {
        do {
            return try body()
        } catch {
            throw Failure(error, origin: origin, changedNothing: !changed)
        }
    }
}

/// How the caller holds the store while ``InstallPipeline`` swaps a new seed in.
protocol StoreHolder: Sendable {
    /// Whether the old store gets a temp second name at the swap, removed only after ``hold(_:installed:)``
    /// returned: freeing a large file's blocks then takes no time from the operations held back.
    var retiresOldStore: Bool { get }
    /// Runs `swap` with no connection of the holder's on the store, then opens the store again: the
    /// new one, which `installed` describes, when `swap` returned; the old one when it threw.
    ///
    /// - Returns: what `swap` returned, and the outcome as the reopening finished it (orphans,
    ///   migrations), when the holder opened the new store.
    func hold(_ swap: @escaping @Sendable () throws(InstallPipeline.Failure) -> InstallPipeline.Swapped, installed: LaunchOutcome)
        throws(InstallPipeline.Failure) -> (swapped: InstallPipeline.Swapped, opened: LaunchOutcome?)
}

/// A store no connection of this process has open (a launch before it opens, an update of a closed
/// store): the swap needs nothing from the holder.
struct ClosedStore: StoreHolder {
    var retiresOldStore: Bool { false }
    func hold(_ swap: @escaping @Sendable () throws(InstallPipeline.Failure) -> InstallPipeline.Swapped, installed: LaunchOutcome)
        throws(InstallPipeline.Failure) -> (swapped: InstallPipeline.Swapped, opened: LaunchOutcome?)
    {
        (try swap(), nil)
    }
}

extension InstallPipeline {
    /// One run's steps, in order, on the locked data directory.
    private struct Run {
        var installation: Installation
        var request: Request

        private var manifest: SeedManifest { installation.manifest }
        private var directory: Directory { installation.directory }
        private var logger: Logger { installation.logger }
        private var configuration: Launcher.Configuration { installation.configuration }

        /// What was found before deciding.
        private struct Prepared {
            var adoption = Installation.Adoption()
            var recorded: Decision.Recorded?
            var movedAside: URL?
            var state: Decision.StoreState = .missing
            var user = Installation.UserStoreStep()
            var entry: PreferencesFile.Entry?
            var unrecorded: UnrecordedInstall?
        }

        func go(holder: some StoreHolder) throws(Failure) -> LaunchOutcome {
            let prepared = try prepare()
            let decision = Installation.decide(Decision.Found(
                name: manifest.name, version: manifest.version, source: request.source.recorded, recorded: prepared.recorded, store: prepared.state,
                preferencesMovedAside: prepared.movedAside != nil, forcing: request.forcing ?? prepared.user.forcing,
                storeHoldsUserTables: prepared.user.storeHoldsUserTables),
                storePath: installation.storePath)
            var outcome = installation.outcome(of: decision, recorded: prepared.recorded, preferencesMovedAside: prepared.movedAside)
            // What the user-store step did, before the install adds what the reopening did.
            prepared.user.report(in: &outcome)
            var swapped: Swapped?
            if case .install(let reason, _) = decision {
                (swapped, outcome) = try install(outcome, reason: reason, prepared: prepared, holder: holder)
            }
            // Record the version when the store changed or the preferences did not say what it holds.
            if let unrecorded = prepared.unrecorded, unrecorded.isRecordedVersion, decision.writesNothing {
                // A restored or copied file holding the recorded version: read once, not at every launch. Best effort.
                _ = try? unrecorded.recordFingerprint(in: installation.preferences, name: manifest.name, timeout: configuration.lockTimeout, logger: logger)
            }
            if installation.needsRecording(decision, recorded: prepared.recorded) {
                let aside = try InstallPipeline.during(.store, changed: swapped != nil) { () throws(ReseedError) in
                    try installation.recordVersion(installed: swapped, also: request.recordingAlso)
                }
                if let aside { outcome.preferencesMovedAside = aside }
            }
            // After the holder let operations go and the version is recorded: freeing the old file's blocks.
            if let retired = swapped?.retired { _ = try? directory.remove(retired) }
            outcome.adoptedFrom = prepared.adoption.adoptedFrom
            outcome.legacyStoresLeftInPlace = prepared.adoption.leftInPlace
            outcome.userStoreChecked = prepared.entry?.userStoreChecked
            return outcome
        }

        /// Step 2, read: a legacy store moved into place (the bundled seed only), the preferences, a swap
        /// whose record a kill cut short, the expected version, the store's first 16 bytes, the user store.
        private func prepare() throws(Failure) -> Prepared {
            var prepared = Prepared()
            try InstallPipeline.during(.store) { () throws(ReseedError) in
                if request.source.recorded == .bundle { prepared.adoption = try installation.adoptLegacyStore() }
                (prepared.recorded, prepared.movedAside, prepared.entry) = try installation.readPreferences()
                // A swap whose record a crash cut short: decide from, and record, what the store holds.
                prepared.unrecorded = UnrecordedInstall.find(name: manifest.name, entry: prepared.entry, in: directory)
                if let unrecorded = prepared.unrecorded, !unrecorded.isRecordedVersion {
                    prepared.recorded = try unrecorded.record(
                        in: installation.preferences, name: manifest.name, bundled: request.source.recorded == .bundle ? manifest.version : nil,
                        userStore: prepared.recorded?.userStore, timeout: configuration.lockTimeout, logger: logger)
                    // What the kill left of the copy beside the store (its -wal, renamed after the copy), which a
                    // launch that then finds the store up to date would never look for. Best effort.
                    let storeName = installation.storeName
                    _ = try? directory.removeTemporaryFiles { StoreLayout.isTemporary($0, of: storeName) }
                }
            }
            if let expected = request.expecting, let now = prepared.recorded?.version, now != expected, now != manifest.version {
                throw Failure(ReseedError(.channelRefused, step: .checkManifest, path: installation.preferences.url.path, message:
                    "\(manifest.name) \(now) was installed while this update fetched \(manifest.version) over \(expected ?? "nothing"); not installed (the next update starts from \(now))"),
                    origin: .store)
            }
            try InstallPipeline.during(.store) { () throws(ReseedError) in
                prepared.state = try installation.storeState()
                // With a user store: an unusable one kept aside, the user's tables copied out of the store.
                prepared.user = try installation.prepareUserStore(recorded: prepared.recorded, entry: prepared.entry, storeState: prepared.state)
            }
            return prepared
        }

        /// Steps 3 and 4: a verified copy made from the source, readied and swapped in by `holder`.
        private func install(_ planned: LaunchOutcome, reason: LaunchOutcome.Reason, prepared: Prepared, holder: some StoreHolder)
            throws(Failure) -> (Swapped, LaunchOutcome)
        {
            logger.info("installing seed", metadata: [
                "store": "\(installation.storePath)", "version": "\(manifest.version)", "reason": "\(reason.rawValue)",
                "previous": "\(planned.previousVersion ?? "none")",
            ])
            let staged = try stage()
            // Tables of the user's left undeclared in the store file kept aside: a later release that declares
            // them carries them (a declared one left there because its user-store table holds other rows is not
            // tried again: that would fail the same way). Recorded as soon as the store has its second name,
            // before the rename: a kill after the swap must not leave the kept file unnamed.
            let undeclared = prepared.user.stranded.filter { table in !(configuration.userStore?.userTables ?? []).contains { $0.isSameSQLName(as: table) } }
            let (installation, state) = (installation, prepared.state)
            let keepAside = reason == .storeInvalid || prepared.user.keepsStoreAside
            let retire = holder.retiresOldStore
            var outcome = planned
            outcome.action = .installed
            outcome.removedLeftovers = staged.removedLeftovers
            // The swap, for the holder to run once it holds the store.
            let swap: @Sendable () throws(Failure) -> Swapped = { () throws(Failure) -> Swapped in
                do throws(ReseedError) {
                    let recordStranded: ((URL) throws(ReseedError) -> Void)? = undeclared.isEmpty ? nil : { kept throws(ReseedError) in
                        try installation.recordStranded(undeclared, keptAt: kept)
                    }
                    let (keptAside, retired) = try installation.swap(in: staged.temporary, storeState: state, keepAside: keepAside, retire: retire,
                                                                    onKeptAside: recordStranded)
                    // The store is swapped in: a failed `stat` only costs a later delta its incremental check.
                    return Swapped(keptAside: keptAside, retired: retired,
                                   storeFingerprint: StoreWAL.fingerprint(of: installation.storeName, in: installation.directory))
                } catch {
                    installation.discard(copy: staged.temporary)
                    throw Failure(error, origin: .store, changedNothing: false)
                }
            }
            let held: (swapped: Swapped, opened: LaunchOutcome?)
            do throws(Failure) {
                held = try holder.hold(swap, installed: outcome)
            } catch {
                // The holder failed before the swap (its pool would not close): the copy goes. After the
                // rename the temp name is gone and this removes nothing.
                installation.discard(copy: staged.temporary)
                throw error
            }
            let (swapped, opened) = held
            logger.info("installed seed", metadata: ["store": "\(installation.storePath)", "version": "\(manifest.version)"])
            outcome.storeKeptAside = swapped.keptAside
            if let opened {
                outcome.orphans = opened.orphans
                outcome.appliedMigrations = opened.appliedMigrations   // the import's, then the reopening's (finishOpening adds to them)
            } else if request.source.recorded == .download {
                // Nothing reopened the store (an update of a closed one): the rows each reference lost, counted here.
                outcome.orphans = try InstallPipeline.during(.store, changed: true) { () throws(ReseedError) in try installation.countOrphans() }
            }
            return (swapped, outcome)
        }

        /// Clean, check the free space, copy (or apply), verify, check the user store and ready the copy
        /// (``Installation/ready(copy:)``): a verified temp file beside the store, or nothing made and this throws.
        private func stage() throws(Failure) -> Staged {
            let storeName = installation.storeName
            let removedLeftovers = try InstallPipeline.during(.environment) { () throws(ReseedError) in
                try Reseed.during(.cleanUp, path: directory.url.path) { try directory.removeTemporaryFiles { StoreLayout.isTemporary($0, of: storeName) } }
            }
            if !removedLeftovers.isEmpty {
                logger.notice("removed temporary files of an interrupted install", metadata: ["files": "\(removedLeftovers)"])
            }
            // After the clean-up, whose removals count as free space; before the copy creates anything.
            try InstallPipeline.during(.environment) { () throws(ReseedError) in try installation.diskSpace().check(in: directory) }
            let temporary = StoreLayout.temporaryName(of: storeName)
            // Copy and verify are one pass: the SHA-256 is computed while copying, the checks read the
            // copy from the page cache before its only fsync, which readying it makes.
            do throws(ReseedError) {
                switch request.source {
                case .bundled, .downloaded, .compressed: try installation.copyAndVerify(into: temporary)
                case .delta(let file, _): try installation.applyDelta(file, into: temporary)
                }
            } catch {
                throw Failure(error, origin: Self.origin(ofCopyFailure: error))
            }
            do throws(Failure) {
                try InstallPipeline.during(.store) { () throws(ReseedError) in try installation.checkUserStore(seedAt: directory.path(temporary)) }
                try InstallPipeline.during(.environment) { () throws(ReseedError) in try installation.ready(copy: temporary) }
            } catch {
                installation.discard(copy: temporary)
                throw error
            }
            return Staged(temporary: temporary, removedLeftovers: removedLeftovers)
        }

        /// A failed copy or check is the source's, but for the machine's own failures writing it (a
        /// full disk, an I/O error): another source of the same seed would meet those too.
        private static func origin(ofCopyFailure error: ReseedError) -> Origin {
            if error.code == .insufficientSpace { return .environment }
            if let errno = error.errno, [.noSpace, .diskQuotaExceeded, .ioError].contains(errno) { return .environment }
            return .source
        }
    }
}
