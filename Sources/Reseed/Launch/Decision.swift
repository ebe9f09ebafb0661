/// Step 2 of an install, as a value: what to do with the store, decided from what the
/// preferences record and what the store file is, with no I/O.
///
/// The launcher (``Launcher/prepare()``), the install of a downloaded seed and `reseed status`
/// all decide with ``decide(_:)`` from one ``Found`` value; the code that acts on the decision does the I/O.
///
/// ```swift
/// let decision = Decision.decide(.init(name: "triage", version: "2.0.0", source: .bundle,
///                                      recorded: .init(version: "2.0.0", source: .bundle), store: .sqlite))
/// // .upToDate
/// ```
package enum Decision: Sendable, Hashable {
    /// The store holds the offered version, as recorded: nothing to write.
    case upToDate
    /// The store holds a downloaded seed, recorded as `version`, that the bundled seed is not
    /// newer than: it stays, and nothing is written.
    case keepDownloaded(version: String)
    /// The store holds the offered seed (its embedded name and version say so) but the
    /// preferences do not record it: record the version, keep the store.
    case recordVersion(reason: LaunchOutcome.Reason)
    /// Install the offered seed over whatever is there; `previousVersion` is the version
    /// the store held, as recorded (or embedded, when nothing is recorded).
    case install(reason: LaunchOutcome.Reason, previousVersion: String?)

    /// What the store file is, judged from its first 16 bytes.
    package enum StoreState: Sendable, Hashable { case missing, notSQLite, sqlite }

    /// What the preferences record for the store: its version, and where that seed came from.
    struct Recorded: Sendable, Hashable {
        var version: String
        /// ``SeedSource/bundle`` for an entry that does not say.
        var source: SeedSource
        /// The user store the seed was installed or kept for: set, the store holds no user tables.
        var userStore: String?

        init(version: String, source: SeedSource, userStore: String? = nil) {
            self.version = version
            self.source = source
            self.userStore = userStore
        }
    }

    /// Everything a decision is made from: what was offered, and what was found before deciding.
    struct Found: Sendable, Hashable {
        /// The store name of the offered seed.
        var name: String
        /// The offered seed's version.
        var version: String
        /// Where the offered seed comes from: the bundle at launch, a download at run time.
        var source: SeedSource
        /// What the preferences record; nil when nothing is (no file, no entry, a corrupt or oversized file).
        var recorded: Recorded?
        /// What the store file is.
        var store: StoreState
        /// The store's own metadata, consulted only when ``looksAtEmbeddedMetadata`` says so.
        var embedded: SeedMetadata?
        /// The preferences were corrupt and were moved aside.
        var preferencesMovedAside = false
        /// Install for this reason whatever the rest says (the store failed to open).
        var forcing: LaunchOutcome.Reason?
        /// A user store is configured and the store file still holds the user's tables (now
        /// copied to the user store): the seed must replace it.
        var storeHoldsUserTables = false

        init(
            name: String, version: String, source: SeedSource, recorded: Recorded?, store: StoreState,
            embedded: SeedMetadata? = nil, preferencesMovedAside: Bool = false, forcing: LaunchOutcome.Reason? = nil,
            storeHoldsUserTables: Bool = false
        ) {
            self.name = name
            self.version = version
            self.source = source
            self.recorded = recorded
            self.store = store
            self.embedded = embedded
            self.preferencesMovedAside = preferencesMovedAside
            self.forcing = forcing
            self.storeHoldsUserTables = storeHoldsUserTables
        }

        /// Whether the decision looks at the store's embedded metadata: only then is the store
        /// opened as a database before deciding (the up-to-date path reads no database pages).
        var looksAtEmbeddedMetadata: Bool {
            forcing == nil && source == .bundle && recorded == nil && store == .sqlite
        }
    }

    /// Decides what to do with the store from what was `found`.
    ///
    /// Up to date: the recorded version is the offered one and the store starts with the SQLite
    /// header. A bundled seed leaves a recorded download alone unless it is newer by
    /// ``SeedVersion``'s order (or the store is missing or not SQLite); with nothing recorded, a store
    /// whose embedded version is newer than the bundle's is kept too. A downloaded seed is always installed
    /// from its verified bytes when its version is not the recorded one.
    static func decide(_ found: Found) -> Decision {
        let (version, recorded, store) = (found.version, found.recorded, found.store)
        // The store's embedded metadata counts only where callers are told to read it.
        let embedded = found.looksAtEmbeddedMetadata ? found.embedded : nil
        if let forced = found.forcing { return .install(reason: forced, previousVersion: recorded?.version) }
        if found.storeHoldsUserTables, store == .sqlite {
            return .install(reason: .userDataMoved, previousVersion: recorded?.version ?? embedded?.version)
        }
        if let recorded {
            if recorded.version == version, store == .sqlite { return .upToDate }
            // A missing or non-SQLite store is no reason to keep anything; a store that fails to
            // open comes back here forced.
            if found.source == .bundle, recorded.source == .download, store == .sqlite,
               !SeedVersion(version).isNewer(than: SeedVersion(recorded.version)) {
                return .keepDownloaded(version: recorded.version)
            }
            let reason: LaunchOutcome.Reason = switch store {
            case .missing: .storeMissing
            case .notSQLite: .storeInvalid
            case .sqlite: .versionChanged
            }
            return .install(reason: reason, previousVersion: recorded.version)
        }
        let unrecorded: LaunchOutcome.Reason = found.preferencesMovedAside ? .preferencesCorrupt : .preferencesMissing
        switch store {
        case .missing:
            return .install(reason: found.preferencesMovedAside ? .preferencesCorrupt : .fresh, previousVersion: nil)
        case .notSQLite:
            return .install(reason: found.preferencesMovedAside ? .preferencesCorrupt : .storeInvalid, previousVersion: nil)
        case .sqlite:
            if let embedded, embedded.name == found.name, embedded.version == version {
                return .recordVersion(reason: unrecorded)
            }
            // A seed newer than the bundle's can only have been downloaded: the preferences that said
            // so are lost, but the store's own metadata says what it is, and reinstalling the bundle
            // would undo the update (and let an older one in again).
            if let embedded, embedded.name == found.name, SeedVersion(embedded.version).isNewer(than: SeedVersion(version)) {
                return .keepDownloaded(version: embedded.version)
            }
            return .install(reason: unrecorded, previousVersion: embedded?.version)
        }
    }

    /// True when acting on the decision writes nothing: the store is up to date, or keeps a download.
    package var writesNothing: Bool {
        switch self {
        case .upToDate, .keepDownloaded: true
        case .recordVersion, .install: false
        }
    }
}
