import ReseedSystem

/// Every file Reseed keeps beside a store in the data directory, by name, and what removes each.
///
/// For the store `triage` (`triage.sqlite`):
///
/// | file | kind | removed by |
/// |---|---|---|
/// | `triage.sqlite` | the store | never (an install replaces it) |
/// | `triage.sqlite-wal`, `-shm`, `-journal` | SQLite's sidecars | an install, before the swap (with the old store closed) |
/// | `.triage.sqlite.reseed-lock` | the lock of launches and installs | never: a lock file stays |
/// | `.triage.sqlite.reseed-update-lock` | the lock of channel updates | never |
/// | `.triage.sqlite.reseed-tmp-<16 hex>` | a copy an install or a build left | the next install or launch that looks |
/// | `.triage.sqlite.reseed-download-<16 hex>[.etag]`, `-delta-…` | a partial download, a delta | the next update (kept to resume) |
/// | `triage.sqlite.invalid-<time>-<8 hex>` | an unusable store kept aside | never: the app's to look at |
///
/// The same names serve a user store (`triage-user.sqlite`): its sidecars, and a user store
/// SQLite cannot read kept aside.
package struct StoreLayout: Sendable, Equatable {
    /// The store's file name: `<name>.sqlite`.
    package let storeFileName: String

    /// The file name of the store called `name`: `<name>.sqlite`.
    static func fileName(ofStore name: String) -> String { name + ".sqlite" }

    init(storeFileName: String) {
        self.storeFileName = storeFileName
    }

    /// The layout of the store called `name` (file `<name>.sqlite`).
    package init(store name: String) {
        self.init(storeFileName: Self.fileName(ofStore: name))
    }

    /// What Reseed's own file names contain, whatever the store (temp files, downloads and locks
    /// `.reseed-`, stores kept aside `.invalid-`, preferences moved aside `.corrupt-`): a store or a
    /// user store whose file name takes one of these forms could be removed as a leftover or taken
    /// for a kept file, so none may.
    static let reservedForms = [".reseed-", ".invalid-", ".corrupt-"]

    /// The reserved form `name` takes, if it takes one (see ``reservedForms``).
    static func reservedForm(of name: String) -> String? {
        reservedForms.first { name.contains($0) }
    }

    /// SQLite's sidecar suffixes of a database file.
    static let sidecarSuffixes = ["-wal", "-shm", "-journal"]

    /// The store's sidecars: `<store>-wal`, `-shm`, `-journal`.
    var sidecars: [String] { Self.sidecars(of: storeFileName) }

    /// The sidecars of any database file `name` (a delta's, a copy's).
    static func sidecars(of name: String) -> [String] { sidecarSuffixes.map { name + $0 } }

    /// The write-ahead log of the database file `name`: `<name>-wal`.
    static func wal(of name: String) -> String { name + "-wal" }

    /// The rollback journal of the database file `name`: `<name>-journal`.
    static func journal(of name: String) -> String { name + "-journal" }

    /// The lock file launches, installs and live replacements take.
    var installLock: String { ".\(storeFileName).reseed-lock" }

    /// The lock file channel updates take, held across a download.
    var updateLock: String { ".\(storeFileName).reseed-update-lock" }

    /// The prefix of the temp files of installs and builds (see `Directory.temporaryName(for:)`).
    package var temporaryPrefix: String { Directory.temporaryPrefix(for: storeFileName) }

    /// The prefix of partial downloads and of a delta's files.
    var downloadPrefix: String { ".\(storeFileName).reseed-download-" }

    /// The prefix of the names unusable stores are kept aside under.
    var asidePrefix: String { storeFileName + ".invalid-" }

    /// A new name to keep an unusable store aside under: `<store>.invalid-<UTC time>-<8 hex>`.
    func asideName() -> String {
        asidePrefix + PreferencesFile.timestamp() + "-" + String(format: "%08x", UInt32.random(in: .min ... .max))
    }

    /// What a file beside the store is.
    package enum Kind: String, Sendable, Codable, CaseIterable {
        case store, sidecar, installLock, updateLock, temporary, download, keptAside
    }

    /// What removes a file of a kind.
    package enum Removal: String, Sendable, Codable {
        /// Nothing: the store, a lock file, an unusable store kept aside for the app.
        case never
        /// The next install, before its swap.
        case nextInstall
        /// The next launch or install that takes the store's lock.
        case nextLaunch
        /// The next channel update (a partial download is kept to resume).
        case nextUpdate
    }

    /// One file of the data directory that belongs to the store.
    package struct File: Sendable, Equatable, Codable {
        package var name: String
        package var kind: Kind
        package var removedBy: Removal
    }

    /// The kind of the file `name`; nil when it is not one of the store's.
    func kind(of name: String) -> Kind? {
        if name == storeFileName { return .store }
        if sidecars.contains(name) { return .sidecar }
        if name == installLock { return .installLock }
        if name == updateLock { return .updateLock }
        if name.hasPrefix(temporaryPrefix) { return .temporary }
        if name.hasPrefix(downloadPrefix) { return .download }
        if name.hasPrefix(asidePrefix) { return .keptAside }
        return nil
    }

    /// What removes a file of `kind`.
    static func removal(of kind: Kind) -> Removal {
        switch kind {
        case .store, .installLock, .updateLock, .keptAside: .never
        case .sidecar: .nextInstall
        case .temporary: .nextLaunch
        case .download: .nextUpdate
        }
    }

    /// The store's files among `names` (a directory listing), sorted by name.
    package func files(among names: [String]) -> [File] {
        names.sorted().compactMap { name in kind(of: name).map { File(name: name, kind: $0, removedBy: Self.removal(of: $0)) } }
    }
}
