import Foundation
import Logging
import ReseedSystem

/// Brings the store up to date with a channel: a folder of static files on any HTTP host
/// where a newer seed is published between app releases.
///
/// One ``update()``:
/// 1. fetches `channel.json` with a conditional request (`If-None-Match` /
///    `If-Modified-Since` from the last check, kept in the preferences under the store's
///    entry), so an unchanged channel costs one small `304`;
/// 2. fetches `channel.json.sig`, then `keys.json` (after a `304` too, once the channel has one, to
///    check again the key that signed what the `304` stands for), and checks `keys.json` is signed by
///    the threshold of the root keys the device trusts (the pinned ones, or those a verified
///    `keys.json` rotated to), is not older than one seen, has not expired and names the channel
///    ``Configuration/channelName`` (or the first name verified there; a channel without `keys.json`
///    is trusted through the pinned keys alone; see <doc:ChannelTrust>); refuses a manifest over
///    64 KiB (it stops reading there), one whose signature `channel.json.sig` does not verify with a
///    listed, unexpired channel key (after reading the pair once more, in case a publish was halfway),
///    one signed by a key root removed, one that names a member twice, one whose `expires` has passed,
///    one issued in the future or valid longer than ``Configuration/maximumValidity``, one of a lower
///    format than verified before, one that does not name the `keys.json` served beside it, one for
///    another store or channel, one that needs a newer Reseed, and one that is not newer
///    (``SeedVersion``'s order) than the installed seed, or older than a manifest verified from the
///    channel before, or than the version the store file itself records (its `reseed_metadata`
///    table), unless ``Configuration/allowsDowngrade`` or root removed the key that signed the
///    installed release (``Outcome/revokedKeyID``); what verified is written beside the store
///    (`.<name>.sqlite.reseed-trust.json`) before anything is downloaded, and is a floor from then on;
/// 3. downloads the seed into the data directory, resuming a partial file left by a broken
///    try (`Range`, `If-Range`), never reading more than the manifest's size, and checks its
///    size and SHA-256;
/// 4. installs it: through ``LiveStore/replace(with:)`` when the store is open in a
///    ``LiveStore``, else with the launcher's steps (lock, copy and verify beside the
///    store, swap, record), recording `"source": "download"`, so that later launches keep
///    it until the app ships a newer seed (see ``SeedSource``).
///
/// ```swift
/// let updater = ChannelUpdater(
///     channel: URL(string: "https://cdn.example.com/triage/")!,
///     publicKey: try ChannelPublicKey(base64: "q8f1yR7n0TkM4gO1QbqR3y2Gv2p3sTq6f9p2k8W0a1E="),
///     store: liveStore)
/// let outcome = try await updater.update()
/// if outcome.action == .updated { logger.info("reference data now \(outcome.version)") }
/// ```
///
/// Updates of one store are serialised, across processes too, by a lock file
/// `.<name>.sqlite.reseed-update-lock` in the data directory.
public struct ChannelUpdater: Sendable {
    /// Everything about an update that has a default.
    public struct Configuration: Sendable {
        /// The longest a server may stay silent, before answering or in the middle of a body;
        /// a download that keeps moving is never cut. Default 30 seconds.
        public var timeout: Duration = .seconds(30)
        /// The longest fetching `channel.json`, or its signature, may take in all, however the
        /// server paces it: both are small, so a server that trickles them is given up on
        /// (the seed's download has no such limit; it resumes). Default 60 seconds.
        public var manifestDeadline: Duration = .seconds(60)
        /// The fewest bytes a second a transfer (the seed, its delta, `channel.json`) may average over
        /// ``lowSpeedTime`` before it is cut with ``ReseedError/Code/downloadTooSlow``, as curl's
        /// `--speed-limit`; 0 turns the check off. What arrived of a seed is kept, and the next
        /// update resumes it. Default 1024 (1 KiB/s): a phone on a poor network (EDGE, a weak
        /// signal) still averages several KiB/s, while a server trickling bytes to hold the update
        /// is cut within about a minute instead of holding it for days.
        public var lowSpeedLimit: Int64 = 1024
        /// The window ``lowSpeedLimit`` is averaged over, as curl's `--speed-time`; the check starts
        /// once a transfer is this old. Default 60 seconds: twice the idle ``timeout``, so a tunnel,
        /// a lift or a cell handover of a few tens of seconds does not cut a download that then
        /// catches up.
        public var lowSpeedTime: Duration = .seconds(60)
        /// Installs a channel's seed that is older than the installed one (as the preferences
        /// record it, or as the store file records it in its metadata), or whose version
        /// cannot be ordered (see ``SeedVersion``). Default false: such an offer is refused.
        public var allowsDowngrade = false
        /// How far behind the device's clock may be: a manifest, or a channel key, is refused only
        /// once its expiry plus this allowance has passed. Default 5 minutes.
        public var clockSkew: Duration = .seconds(300)
        /// The longest a manifest may stay valid: a `channel.json` whose `expires` is further than this
        /// from its `issued` (or, for one without `issued`, from now) is refused, so a signer alone cannot
        /// make a manifest outlive its key. Default 90 days.
        public var maximumValidity: Duration = .seconds(90 * 86_400)
        /// The channel's name the app expects: `keys.json`'s `channel` (`reseed keys --channel-name`),
        /// copied into `channel.json`. Default nil: the first name verified from the channel is kept
        /// (beside the store, see <doc:ChannelTrust>) and another one refused afterwards.
        public var channelName: String?
        /// The fewest root signatures a `keys.json` must carry (its `threshold` and the signatures
        /// themselves), whatever the file says. Default 1.
        public var minimumThreshold = 1
        /// The wall clock expiry is checked against (a manifest's `expires`, a channel key's). Default
        /// the system's; a test hands in a fixed or advancing one instead of waiting.
        ///
        /// ```swift
        /// configuration.now = { Date(timeIntervalSinceNow: 86_400) }   // as if a day had passed
        /// ```
        public var now: @Sendable () -> Date = { Date() }
        /// Called while the seed or its delta downloads (``InstallProgress/Step/download``: bytes in
        /// the file, of its size), then while it installs (``InstallProgress/Step/install``; for a
        /// delta, its copy, apply and content hash on one scale, see <doc:UpdatingFromAChannel>).
        /// Default nil: the install reports through the launcher's ``Launcher/Configuration/progress``.
        /// A live store sends its ``LiveStore/Event/progress(_:)`` events either way.
        public var progress: (@Sendable (InstallProgress) -> Void)?
        /// What carries every transfer of an update. Default the platform's engine (libcurl on
        /// Linux, `URLSession` elsewhere); a test hands in a channel held in memory.
        var transport: any HTTPTransport = HTTPTransfer.systemTransport

        /// The defaults.
        public init() {}

        /// Every transfer of an update: the idle timeout and the minimum rate (none when either of
        /// its values is 0, so no watchdog runs for it); `deadline` for the small files.
        func transfer(deadline: Duration? = nil) -> HTTPTransfer {
            let checked = lowSpeedLimit > 0 && lowSpeedTime > .zero
            return HTTPTransfer(timeout: timeout, deadline: deadline,
                                minimumRate: checked ? HTTPTransfer.MinimumRate(bytesPerSecond: lowSpeedLimit, window: lowSpeedTime) : nil,
                                transport: transport)
        }
    }

    /// What an update did.
    public struct Outcome: Sendable, Hashable {
        /// Whether the store changed.
        public enum Action: String, Sendable, Hashable, Codable {
            /// The channel's seed was downloaded and installed.
            case updated
            /// The channel offers what the store holds (or, when no seed is installed yet,
            /// what the bundle holds); nothing was downloaded.
            case upToDate
        }

        /// Whether the store changed.
        public var action: Action
        /// The store name.
        public var name: String
        /// The version the store holds now (with nothing installed yet, the bundled version a launch installs).
        public var version: String
        /// The version the store held before, if any.
        public var previousVersion: String?
        /// True when the channel answered `304 Not Modified`: one small request, nothing else.
        public var notModified: Bool
        /// Seed bytes received by this update.
        public var downloadedBytes: Int64
        /// Where the download resumed a partial file a broken try had left, when it did.
        public var resumedFrom: Int64?
        /// The store file.
        public var storeURL: URL
        /// The user store's file, when the launcher has one (see ``Launcher/UserStore``).
        public var userStoreURL: URL?
        /// The user tables the install copied out of a single-file store (table → rows), as a launch does.
        public var importedTables: [String: Int] = [:]
        /// The user's tables the install left in a single-file store, which it kept aside whole at
        /// ``storeKeptAside`` (as a launch does: ``LaunchOutcome/strandedTables``).
        public var strandedTables: [String] = []
        /// Where the old store file was kept before the new seed replaced it, when it was.
        public var storeKeptAside: URL?
        /// After an update with a user store, per ``SeedReference`` (its description), the user rows
        /// pointing at a key the new seed no longer has.
        public var orphans: [String: Int] = [:]
        /// How the new seed arrived, when the update installed one: a delta or the full seed.
        public var method: Method?
        /// The content hash of the seed installed before the update, as the preferences recorded it
        /// at its install; nil when nothing was installed or it had none. A delta must start from it.
        public var fromContentHash: String?
        /// Why the channel's delta was not used, when one started from the installed seed and the
        /// update fell back to the full seed (the error, in one line).
        public var deltaFailure: String?
        /// The ``ChannelPublicKey/keyID`` of the channel key that signed the release installed before
        /// the update, when the channel's root has since removed it (`keys.json`'s `revoked`): that
        /// release lost its standing, so the channel's release was installed even if not newer.
        public var revokedKeyID: String?
    }

    /// How an update's seed arrived.
    public enum Method: String, Sendable, Hashable, Codable {
        /// A row-level delta applied to a copy of the installed seed.
        case delta
        /// The whole seed (compressed when the channel offers it).
        case full
    }

    enum Target: Sendable {
        case launcher(Launcher)
        case store(LiveStore)
    }

    /// The channel folder's URL; `channel.json`, its signature and the seed files are read relative to it.
    public let channelURL: URL
    /// The keys the app pins: the root keys that sign the channel's `keys.json` or, for a channel
    /// without one, the keys that sign `channel.json` itself.
    public let publicKeys: [ChannelPublicKey]
    /// The timeout, the minimum rate, the downgrade switch and the progress callback.
    public var configuration: Configuration
    let target: Target

    /// An updater of the store `launcher` installs, for when the store is not open: the app
    /// checks before launching, or a tool such as `reseed update`.
    /// `publicKeys` are the pinned root keys (one or more: a second, kept offline, lets root itself be replaced).
    public init(channel: URL, publicKeys: [ChannelPublicKey], launcher: Launcher, configuration: Configuration = Configuration()) {
        self.channelURL = channel
        self.publicKeys = publicKeys
        self.configuration = configuration
        self.target = .launcher(launcher)
    }

    /// An updater of a store the app has open: the new seed goes in through ``LiveStore/replace(with:)``.
    public init(channel: URL, publicKeys: [ChannelPublicKey], store: LiveStore, configuration: Configuration = Configuration()) {
        self.channelURL = channel
        self.publicKeys = publicKeys
        self.configuration = configuration
        self.target = .store(store)
    }

    /// An updater of the store `launcher` installs, pinning one key.
    public init(channel: URL, publicKey: ChannelPublicKey, launcher: Launcher, configuration: Configuration = Configuration()) {
        self.init(channel: channel, publicKeys: [publicKey], launcher: launcher, configuration: configuration)
    }

    /// An updater of a store the app has open, pinning one key.
    public init(channel: URL, publicKey: ChannelPublicKey, store: LiveStore, configuration: Configuration = Configuration()) {
        self.init(channel: channel, publicKeys: [publicKey], store: store, configuration: configuration)
    }

    /// Checks the channel and installs its seed when it is newer than the installed one.
    ///
    /// - Returns: what the update did.
    /// - Throws: ``ReseedError``, the installed store and its recorded version then left as they were:
    ///   ``ReseedError/Code/download`` (no answer within the timeout, connection lost, an HTTP
    ///   error with ``ReseedError/httpStatus``; a broken seed download resumes on the next try),
    ///   ``ReseedError/Code/downloadTooSlow`` (a transfer averaged under
    ///   ``Configuration/lowSpeedLimit`` over ``Configuration/lowSpeedTime``; it resumes too),
    ///   ``ReseedError/Code/signature`` (of `channel.json` or `keys.json`), ``ReseedError/Code/channelExpired``,
    ///   ``ReseedError/Code/channelKeyRevoked``, ``ReseedError/Code/channelKeyExpired``,
    ///   ``ReseedError/Code/channelRefused`` (also for a `keys.json` older than one seen before),
    ///   ``ReseedError/Code/invalidManifest``, ``ReseedError/Code/verificationFailed`` (the
    ///   download does not match the signed size and SHA-256), ``ReseedError/Code/insufficientSpace``
    ///   (the data directory's filesystem cannot hold the download and the install's copy; found
    ///   before anything is downloaded, and not a reason to fall back from a delta to the full seed),
    ///   and the install's own errors, such as ``ReseedError/Code/storeBusy``.
    ///
    /// When the channel offers what the store holds, the files an earlier update left in the data
    /// directory (a partial download whose install was done when the update stopped, a delta's
    /// copy of the seed) are removed: nothing will resume them.
    public func update() async throws(ReseedError) -> Outcome {
        let context = try await offload { () throws(ReseedError) in try self.context() }
        defer { context.lock.release() }
        let logger = context.logger

        // What the channel's preferences say of the installed release (nil once the store changed otherwise).
        let recorded = context.validators.flatMap { $0.url == channelURL.absoluteString && $0.version == context.installed ? $0 : nil }
        // Persist on verify: keys.json is kept the moment it verifies, whatever becomes of channel.json.
        var kept = context.floors
        let offer = try await fetchSignedManifest(conditional: recorded, recorded: context.validators, floors: context.floors) { keys throws(ReseedError) in
            kept = try await keep(kept.raised(by: keys), over: kept, in: context)
        }
        var found = ChannelDecision.Found(
            name: context.name, manifest: offer.manifest?.manifest, manifestURL: channelURL.appendingPathComponent(ChannelManifest.fileName),
            recorded: recorded, keys: offer.trust?.keys, installed: context.installed, bundled: context.bundled, embedded: context.embedded,
            storePath: context.storeURL.path, contentHash: context.contentHash,
            mayHoldUserTables: context.configuration.userStore.map { context.userStore != $0.name } ?? false,
            allowsDowngrade: configuration.allowsDowngrade, now: configuration.now(), clockSkew: configuration.clockSkew)
        found.floors = context.floors
        found.channelName = configuration.channelName
        found.maximumValidity = configuration.maximumValidity
        let decision = ChannelDecision.decide(found)
        // And so is the manifest, before anything is downloaded (or the offer refused).
        kept = try await keep(kept.raised(verifying: offer, decision: decision), over: kept, in: context)
        if case .refused(let error) = decision { throw error }
        let signed = offer.manifest.flatMap { manifest in offer.trust.map { (manifest, $0) } }
        let baseline = found.baseline
        var outcome = Outcome(
            action: .upToDate, name: context.name, version: baseline, previousVersion: context.installed,
            notModified: false, downloadedBytes: 0, storeURL: context.storeURL)
        outcome.userStoreURL = context.userStoreURL
        guard let (fetched, trust) = signed else {
            logger.debug("channel not modified", metadata: ["channel": "\(channelURL.absoluteString)", "version": "\(baseline)"])
            outcome.notModified = true
            // The channel still offers what the store holds: what an update cut short after its install left is worthless.
            await offload { SeedDownload.removeAll(store: context.name, in: context.directory) }
            return outcome
        }
        let manifest = fetched.manifest
        guard decision.installs else {
            try await offload { () throws(ReseedError) in
                SeedDownload.removeAll(store: context.name, in: context.directory)
                try self.remember(fetched, trust: trust, in: context)
            }
            return outcome
        }
        // Root removed the key that signed the installed release: it loses its standing.
        outcome.revokedKeyID = found.revokedKeyID

        outcome.fromContentHash = found.fromContentHash
        if case .delta(let delta) = decision {
            logger.info("applying a delta from the channel", metadata: [
                "channel": "\(channelURL.absoluteString)", "version": "\(manifest.version)", "from": "\(delta.fromVersion)",
            ])
            // A failure of the delta's own (its download, its apply, its result's checks) leaves the
            // store as it was: the full seed is downloaded instead. One of the store's or the
            // machine's (a busy store, a short disk, an I/O error) would fail the full seed too.
            do throws(InstallPipeline.Failure) {
                // A release whose data did not change: its delta is made here, nothing downloaded.
                let made = try await delta.metadataOnly == nil ? nil : makeMetadataOnlyDelta(delta, of: manifest, in: context)
                let deltaFile: DeltaFile
                if let made { deltaFile = made.file } else { deltaFile = try await fetchDelta(delta, of: manifest, in: context, received: &outcome.downloadedBytes) }
                defer { deltaFile.removeFiles() }
                var request = InstallPipeline.Request(delta: deltaFile.path, from: delta.fromContentHash, making: manifest.seedManifest(file: deltaFile.name),
                                                      expecting: .some(context.installed))
                request.metadataOnly = made?.entry
                request.recordingAlso = channelState(fetched, trust: trust, in: context)
                request.progress = configuration.progress
                outcome.record(try await install(request))
                logger.info("installed the channel's seed from a delta", metadata: ["version": "\(manifest.version)", "bytes": "\(outcome.downloadedBytes)"])
                outcome.action = .updated
                outcome.version = manifest.version
                outcome.method = .delta
                return outcome
            } catch where error.isTheSources {
                logger.warning("the delta cannot be used; downloading the full seed", metadata: ["error": "\(error.error)"])
                outcome.deltaFailure = error.error.description
            } catch {
                throw error.error
            }
        }

        logger.info("downloading a seed from the channel", metadata: [
            "channel": "\(channelURL.absoluteString)", "version": "\(manifest.version)", "previous": "\(context.installed ?? "none")",
        ])
        // The compressed seed when the channel offers it (its smallest encoding): the install decompresses it into its temp file,
        // checking the database's own size and SHA-256 there.
        let compressed = manifest.compressed?.smallest
        let file = compressed ?? ChannelManifest.File(encoding: "identity", file: manifest.file, size: manifest.size, sha256: manifest.sha256)
        let download = SeedDownload(
            store: manifest.name, kind: compressed == nil ? "seed" : "compressed seed", size: file.size, sha256: file.sha256, url: channelURL.appendingPathComponent(file.file),
            directory: context.directory, transfer: configuration.transfer(), progress: downloadProgress,
            keeping: manifest.offeredSHA256)
        // Before any byte: the rest of the download and the install's temp copy must fit beside the store.
        try DiskSpace(purpose: "download and install \(manifest.name) \(manifest.version)", needed: DiskSpace.fullUpdate(
            downloadSize: file.size, alreadyDownloaded: download.alreadyDownloaded, seedSize: manifest.size)).check(in: context.directory)
        let downloaded = try await download.run()
        var seedManifest = manifest.seedManifest(file: downloaded.file)
        seedManifest.compression = compressed.flatMap { SeedManifest.Compression(encoding: $0.encoding) }
        // The download, as a seed beside the channel's manifest would be: its file in the data directory.
        let seed = Seed(manifestURL: context.directory.url.appendingPathComponent(ChannelManifest.fileName, isDirectory: false), manifest: seedManifest)
        var request = InstallPipeline.Request(seed, from: .download, expecting: .some(context.installed))
        request.recordingAlso = channelState(fetched, trust: trust, in: context)
        request.progress = configuration.progress
        do throws(InstallPipeline.Failure) {
            outcome.record(try await install(request))
        } catch {
            // A seed that matched its signed checksum yet fails the install's checks will fail again: drop it.
            if error.isTheSources { await offload { download.removeFiles() } }
            throw error.error
        }
        // The channel's state was recorded with the version, in one write.
        await offload { SeedDownload.removeAll(store: manifest.name, in: context.directory) }
        logger.info("installed the channel's seed", metadata: ["version": "\(manifest.version)", "bytes": "\(downloaded.received)"])
        outcome.action = .updated
        outcome.version = manifest.version
        outcome.downloadedBytes += downloaded.received
        outcome.resumedFrom = downloaded.resumedFrom
        outcome.method = .full
        return outcome
    }

    /// Writes `floors` beside the store when they differ from `current` (what the file holds); returns them.
    private func keep(_ floors: ChannelFloors, over current: ChannelFloors, in context: Context) async throws(ReseedError) -> ChannelFloors {
        if floors != current {
            try await offload { () throws(ReseedError) in try floors.write(store: context.name, in: context.directory) }
        }
        return floors
    }

    /// Installs what `request` says through the install pipeline: held by the live store (its
    /// replace), or a closed store's. The install refuses to go on when another process changed the
    /// recorded version since the update read it (``InstallPipeline/Request/expecting``).
    private func install(_ request: InstallPipeline.Request) async throws(InstallPipeline.Failure) -> LaunchOutcome {
        switch target {
        case .store(let store):
            return try await store.replace(request).installed
        case .launcher(let launcher):
            let pipeline = launcher.pipeline
            return try await offload { () throws(InstallPipeline.Failure) in try pipeline.run(request, holder: ClosedStore()) }
        }
    }

    /// The download's (bytes in the file, total bytes) as ``Configuration/progress`` hears them.
    var downloadProgress: (@Sendable (Int64, Int64) -> Void)? {
        guard let report = configuration.progress else { return nil }
        return { @Sendable (done: Int64, total: Int64) in report(InstallProgress(step: .download, completed: done, total: total)) }
    }

    /// What an update works with, read under the update lock.
    struct Context: Sendable {
        /// The data directory the store is in, and the launcher's configuration of it.
        var data: DataDirectory
        var configuration: Launcher.Configuration
        var userStoreURL: URL?
        var name: String
        /// The version the store holds: recorded in the preferences, or the live store's.
        var installed: String?
        /// The version in the app's bundle (what a launch installs when nothing is installed).
        var bundled: String
        /// The version the store file records in its metadata table, when it is a seed of this store
        /// and not open in a ``LiveStore`` (whose version is ``installed``).
        var embedded: String?
        var validators: ChannelValidators?
        /// What the device verified of this channel before (``ChannelFloors``).
        var floors: ChannelFloors
        /// The installed seed's content hash, as its install recorded it.
        var contentHash: String?
        /// The user store the preferences say the store file was installed for (it then holds no user tables).
        var userStore: String?
        var directory: Directory
        var lock: StoreLock
        var storeURL: URL

        var logger: Logger { configuration.logger }
    }

    private func context() throws(ReseedError) -> Context {
        let facts: (launcher: Launcher, name: String, bundled: String, live: String?)
        switch target {
        case .store(let store):
            let open = store.opened
            facts = (open.launcher, open.name, open.version, open.version)
        case .launcher(let given):
            let shipped = try Seed(at: given.seedURL).manifest
            facts = (given, shipped.name, shipped.version, nil)
        }
        let data = facts.launcher.data
        let name = facts.name
        let (directory, lock) = try data.lock(StoreLayout(store: name).updateLock, heldBy: "another update of the store '\(name)' is running")
        var entry = (try? data.preferences.readEntries())?.entries[name]
        let storeFileName = StoreLayout.fileName(ofStore: name)
        let storePath = directory.path(storeFileName)
        // A swap whose record a crash cut short: the update starts from what the store holds, recorded under the store's lock.
        if facts.live == nil, UnrecordedInstall.find(name: name, entry: entry, in: directory)?.isRecordedVersion == false {
            let locked = try data.lockStore(named: name)
            defer { locked.lock.release() }
            // Read again under the lock: a launch may have recorded the store since.
            entry = (try? data.preferences.readEntries())?.entries[name]
            if let unrecorded = UnrecordedInstall.find(name: name, entry: entry, in: directory), !unrecorded.isRecordedVersion {
                let recorded = try unrecorded.record(in: data.preferences, name: name, bundled: facts.bundled, userStore: entry?.userStore,
                                                     timeout: data.lockTimeout, logger: facts.launcher.configuration.logger)
                entry?.version = recorded.version
                entry?.contentHash = nil
            }
        }
        // Read through SQLite, read-only: no descriptor of ours can drop the locks of a connection
        // this process holds. A store that cannot be read has no floor; its install would replace it.
        var embedded: String?
        if facts.live == nil, let info = try? directory.status(storeFileName), info.kind == .regular,
           let metadata = try? SeedMetadata.read(path: storePath), metadata.name == name {
            embedded = metadata.version
        }
        return Context(
            data: data, configuration: facts.launcher.configuration, userStoreURL: facts.launcher.userStoreURL, name: name, installed: facts.live ?? entry?.version, bundled: facts.bundled, embedded: embedded,
            validators: entry?.channel, floors: ChannelFloors.read(store: name, url: channelURL.absoluteString, pinned: publicKeys, in: directory),
            contentHash: entry?.contentHash, userStore: entry?.userStore,
            directory: directory, lock: lock,
            storeURL: URL(fileURLWithPath: storePath, isDirectory: false))
    }

    /// The channel's state to keep after `fetched` verified: the manifest's validators, so the next
    /// check is conditional, with who signed it, when it expires and the version of `keys.json` (see
    /// ``ChannelValidators``). Empty when the preferences have it already.
    private func channelState(_ fetched: SignedManifest, trust: ChannelTrust, in context: Context) -> [PreferencesFile.Change] {
        let highest = context.validators.flatMap { $0.url == channelURL.absoluteString ? $0.keysVersion : nil }
        let validators = ChannelValidators(
            url: channelURL.absoluteString, etag: fetched.etag, lastModified: fetched.lastModified, version: fetched.manifest.version,
            signedBy: fetched.signer, expires: fetched.manifest.expires.map(RFC3339.string),
            keysVersion: trust.keys.map { max($0.version, highest ?? 0) } ?? highest)
        return validators == context.validators ? [] : [.channel(validators)]
    }

    /// Keeps the channel's state when no install records it (the channel offers what the store holds).
    private func remember(_ fetched: SignedManifest, trust: ChannelTrust, in context: Context) throws(ReseedError) {
        let changes = channelState(fetched, trust: trust, in: context)
        guard !changes.isEmpty else { return }
        _ = try context.data.preferences.record(changes, for: context.name, timeout: context.data.lockTimeout, logger: context.logger)
    }
}

extension ChannelUpdater.Outcome {
    /// Takes what the install did to the user's data: the tables carried and stranded, the store kept aside, the orphans.
    mutating func record(_ installed: LaunchOutcome) {
        importedTables = installed.importedTables
        strandedTables = installed.strandedTables
        storeKeptAside = installed.storeKeptAside
        orphans = installed.orphans
    }
}
