import Foundation

/// What a launch did, for the app to log or show, and for tests to assert on.
///
/// ```swift
/// let (database, outcome) = try launcher.launch()
/// if outcome.action == .installed, outcome.change == .upgrade { showWhatsNew() }
/// ```
public struct LaunchOutcome: Sendable, Hashable, Codable {
    /// What happened to the store.
    public enum Action: String, Sendable, Hashable, Codable {
        /// The bundled seed was copied in and replaced whatever was there.
        case installed
        /// The store already held the shipped version, or a downloaded seed the shipped one
        /// is not newer than (see ``SeedSource``); nothing was written.
        case upToDate
        /// The store already held the shipped version (its embedded name and
        /// version say so) but the preferences did not record it: the version
        /// was recorded again and the store kept.
        case repaired
    }

    /// Why the seed was installed (or the preferences repaired).
    public enum Reason: String, Sendable, Hashable, Codable {
        /// No store and no recorded version: a first launch.
        case fresh
        /// The recorded version differs from the shipped one (and is not a download the
        /// shipped seed is older than, or as old as).
        case versionChanged
        /// A version is recorded but the store file is gone.
        case storeMissing
        /// The store is not a SQLite database, cannot be opened, or is another seed's.
        case storeInvalid
        /// The preferences file was not a JSON object; it was moved aside.
        case preferencesCorrupt
        /// A store exists but nothing is recorded for it (no preferences file, or no entry).
        case preferencesMissing
        /// A user store is configured and the single-file store still held the user's tables
        /// (they are in the user store now, copied by this launch or an interrupted earlier one):
        /// the seed replaced it.
        case userDataMoved
    }

    public var action: Action
    /// Nil when ``action`` is ``Action/upToDate``.
    public var reason: Reason?
    /// The store name.
    public var name: String
    /// The seed version the store now holds: the shipped one, or a newer one downloaded
    /// from a channel that the launch kept (then ``source`` is ``SeedSource/download``).
    public var version: String
    /// Where the seed the store holds came from. Default ``SeedSource/bundle``.
    public var source: SeedSource = .bundle
    /// The version recorded before this launch, if any.
    public var previousVersion: String?
    /// Upgrade or downgrade, when a recorded version was replaced and both can be ordered (see ``SeedVersion``).
    public var change: SeedVersion.Change?
    /// The live store file.
    public var storeURL: URL
    /// Where a corrupt preferences file was moved, when one was.
    public var preferencesMovedAside: URL?
    /// Where an invalid store was kept (a second name of the old file) before the seed replaced it.
    public var storeKeptAside: URL?
    /// The legacy store moved to the current location by this launch, if any.
    public var adoptedFrom: URL?
    /// Legacy stores left where they are because a store already exists at the current location.
    public var legacyStoresLeftInPlace: [URL] = []
    /// Temporary files of an earlier, interrupted launch that this launch removed.
    public var removedLeftovers: [String]
    /// The verification the installed copy passed, when the seed was installed.
    public var verification: Verification?
    /// The user store's file, when one is configured (see ``Launcher/UserStore``); the seed
    /// (``storeURL``) is then attached to it read-only.
    public var userStoreURL: URL?
    /// The user tables this launch copied out of the single-file store, with the rows copied.
    public var importedTables: [String: Int] = [:]
    /// Declared ``Launcher/UserStore/userTables`` the single-file store did not have when the user store was created.
    public var missingUserTables: [String] = []
    /// The user's tables this launch left in the single-file store, which it kept aside whole
    /// (``storeKeptAside``) before the seed replaced it: tables that are not the seed's and were
    /// not declared in ``Launcher/UserStore/userTables``, or declared ones whose table in the user
    /// store already held other rows. Their rows are in that file, never deleted.
    public var strandedTables: [String] = []
    /// Where a user store that was not a database was kept (renamed, never deleted); a new one was created.
    public var userStoreKeptAside: URL?
    /// The app's migrations this launch applied to the user store.
    public var appliedMigrations: [String] = []
    /// After an install, per ``SeedReference`` (its description), the user rows pointing at a key the seed no longer has.
    public var orphans: [String: Int] = [:]
    /// The user store's check the preferences recorded when the launch read them (`"userStoreChecked"`):
    /// an up-to-date launch compares it after opening instead of reading the preferences again.
    var userStoreChecked: String?

    public init(
        action: Action, reason: Reason?, name: String, version: String, previousVersion: String?,
        change: SeedVersion.Change?, storeURL: URL, preferencesMovedAside: URL? = nil, storeKeptAside: URL? = nil,
        removedLeftovers: [String] = [], verification: Verification? = nil
    ) {
        self.action = action
        self.reason = reason
        self.name = name
        self.version = version
        self.previousVersion = previousVersion
        self.change = change
        self.storeURL = storeURL
        self.preferencesMovedAside = preferencesMovedAside
        self.storeKeptAside = storeKeptAside
        self.removedLeftovers = removedLeftovers
        self.verification = verification
    }
}

/// How thoroughly a copied seed is checked before it replaces the store.
public enum Verification: String, Sendable, Hashable, Codable, CaseIterable {
    /// The default, O(1) in the seed's size: the size equals the manifest's, the
    /// file has a SQLite header in rollback-journal mode with the manifest's page
    /// size, `user_version` and `application_id`, the embedded name and
    /// version equal the manifest's, and SQLite can write to it (a write rolled back).
    case size
    /// All of ``size`` plus the SHA-256 of every byte, computed while copying
    /// (the seed is read once).
    case checksum
}
