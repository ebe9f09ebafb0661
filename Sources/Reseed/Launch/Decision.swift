/// Step 2 of an install, as a value: what to do with the store, decided from what the
/// preferences record and what the store file is, with no I/O.
///
/// The launcher (``Launcher/prepare()``), the install of a downloaded seed and `reseed status`
/// all decide with ``decide(name:version:source:recorded:store:embedded:preferencesMovedAside:forcing:storeHoldsUserTables:)``;
/// the code that acts on the decision does the I/O.
///
/// ```swift
/// let decision = Decision.decide(name: "triage", version: "2.0.0", source: .bundle,
///                                recorded: .init(version: "2.0.0", source: .bundle), store: .sqlite)
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
    package struct Recorded: Sendable, Hashable {
        package var version: String
        /// ``SeedSource/bundle`` for an entry that does not say.
        package var source: SeedSource
        /// The user store the seed was installed or kept for: set, the store holds no user tables.
        package var userStore: String?

        package init(version: String, source: SeedSource, userStore: String? = nil) {
            self.version = version
            self.source = source
            self.userStore = userStore
        }
    }

    /// Decides what to do with the store.
    ///
    /// Up to date: the recorded version is the offered one and the store starts with the SQLite
    /// header. A bundled seed leaves a recorded download alone unless it is newer by SemVer
    /// precedence (or the store is missing or not SQLite). A downloaded seed is always installed
    /// from its verified bytes when its version is not the recorded one.
    ///
    /// - Parameters:
    ///   - name: the store name of the offered seed.
    ///   - version: the offered seed's version.
    ///   - source: where the offered seed comes from: the bundle at launch, a download at run time.
    ///   - recorded: what the preferences record; nil when nothing is (no file, no entry, a corrupt
    ///     or oversized file).
    ///   - store: what the store file is.
    ///   - embedded: the store's own metadata, consulted only when
    ///     ``looksAtEmbeddedMetadata(source:recorded:store:forcing:)`` says so.
    ///   - preferencesMovedAside: the preferences were corrupt and were moved aside.
    ///   - forced: install for this reason whatever the rest says (the store failed to open).
    ///   - storeHoldsUserTables: a user store is configured and the store file still holds the
    ///     user's tables (now copied to the user store): the seed must replace it.
    package static func decide(
        name: String, version: String, source: SeedSource, recorded: Recorded?, store: StoreState,
        embedded: SeedMetadata? = nil, preferencesMovedAside: Bool = false, forcing forced: LaunchOutcome.Reason? = nil,
        storeHoldsUserTables: Bool = false
    ) -> Decision {
        // The store's embedded metadata counts only where callers are told to read it.
        let embedded = looksAtEmbeddedMetadata(source: source, recorded: recorded, store: store, forcing: forced) ? embedded : nil
        if let forced { return .install(reason: forced, previousVersion: recorded?.version) }
        if storeHoldsUserTables, store == .sqlite {
            return .install(reason: .userDataMoved, previousVersion: recorded?.version ?? embedded?.version)
        }
        if let recorded {
            if recorded.version == version, store == .sqlite { return .upToDate }
            // A missing or non-SQLite store is no reason to keep anything; a store that fails to
            // open comes back here forced.
            if source == .bundle, recorded.source == .download, store == .sqlite,
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
        switch store {
        case .missing:
            return .install(reason: preferencesMovedAside ? .preferencesCorrupt : .fresh, previousVersion: nil)
        case .notSQLite:
            return .install(reason: preferencesMovedAside ? .preferencesCorrupt : .storeInvalid, previousVersion: nil)
        case .sqlite:
            let unrecorded: LaunchOutcome.Reason = preferencesMovedAside ? .preferencesCorrupt : .preferencesMissing
            if let embedded, embedded.name == name, embedded.version == version {
                return .recordVersion(reason: unrecorded)
            }
            return .install(reason: unrecorded, previousVersion: embedded?.version)
        }
    }

    /// Whether ``decide(name:version:source:recorded:store:embedded:preferencesMovedAside:forcing:storeHoldsUserTables:)``
    /// looks at the store's embedded metadata: only then is the store opened as a database before
    /// deciding (the up-to-date path reads no database pages).
    package static func looksAtEmbeddedMetadata(
        source: SeedSource, recorded: Recorded?, store: StoreState, forcing forced: LaunchOutcome.Reason? = nil
    ) -> Bool {
        forced == nil && source == .bundle && recorded == nil && store == .sqlite
    }

    /// True when acting on the decision writes nothing: the store is up to date, or keeps a download.
    package var writesNothing: Bool {
        switch self {
        case .upToDate, .keepDownloaded: true
        case .recordVersion, .install: false
        }
    }
}
