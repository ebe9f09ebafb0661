import Foundation
import ReseedSystem

/// Every file Reseed keeps beside a store in the data directory, by name, and what removes each.
///
/// For the store `triage` (`triage.sqlite`):
///
/// | file | kind | removed by |
/// |---|---|---|
/// | `triage.sqlite` | the store | never (an install replaces it) |
/// | `triage.sqlite-wal`, `-shm`, `-journal` | SQLite's sidecars (a single-file store's `-wal` is its install's, see `StoreWAL`) | an install, before the swap (with the old store closed) |
/// | `.triage.sqlite.reseed-lock` | the lock of launches and installs | never: a lock file stays |
/// | `.triage.sqlite.reseed-update-lock` | the lock of channel updates | never |
/// | `.triage.sqlite.reseed-trust.json` | what the device verified of its channel (``ChannelFloors``) | never: it survives lost preferences |
/// | `.triage.sqlite.reseed-tmp-<16 hex>` (and a temp file of one: `..triage.sqlite.reseed-tmp-…`) | a copy an install or a build left | the next install or launch that looks |
/// | `.triage.sqlite.reseed-download-<16 hex>[.etag]`, `-delta-<16 hex>.sqlite` | a partial download, a delta | the next update (kept to resume) |
/// | `triage.sqlite.invalid-<time>-<8 hex>` | an unusable store kept aside | never: the app's to look at |
///
/// The same names serve a user store (`triage-user.sqlite`): its lock, its temp files, a user store
/// SQLite cannot read kept aside, and its sidecars, which no install removes (they are the app's:
/// Reseed removes them only beside a user store that is gone). The preferences file is not a store's:
/// one per data directory, shared by every store, its names are ``PreferencesLayout``'s.
/// ``files(in:store:userStore:preferences:)`` finds all of them (what `reseed status` lists).
///
/// A file Reseed writes anywhere else (a seed, a manifest, a channel file, a key) takes its temp
/// files from here too: ``temporaryName(of:)``, so that a later run knows them as leftovers.
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
    static let reservedForms = [".reseed-", asideForm, PreferencesLayout.corruptForm]

    /// The reserved form `name` takes, if it takes one (see ``reservedForms``).
    static func reservedForm(of name: String) -> String? {
        reservedForms.first { name.contains($0) }
    }

    /// SQLite's sidecar suffixes of a database file.
    static let sidecarSuffixes = ["-wal", "-shm", "-journal"]

    /// The store's sidecars: `<store>-wal`, `-shm`, `-journal`.
    var sidecars: [String] { Self.sidecars(of: storeFileName) }

    /// The sidecars of any database file `name` (a delta's, a copy's, a build's scratch file).
    package static func sidecars(of name: String) -> [String] { sidecarSuffixes.map { name + $0 } }

    /// The write-ahead log of the database file `name` (a path will do): `<name>-wal`.
    package static func wal(of name: String) -> String { name + "-wal" }

    /// The lock file beside the file `name`: `.<name>.reseed-lock`.
    static func lockName(of name: String) -> String { ".\(name).reseed-lock" }

    /// The lock file launches, installs and live replacements take.
    var installLock: String { Self.lockName(of: storeFileName) }

    /// The lock file channel updates take, held across a download.
    var updateLock: String { ".\(storeFileName).reseed-update-lock" }

    /// The channel's trust floors (``ChannelFloors``), which no lost preferences file erases.
    var trustFloors: String { ".\(storeFileName).reseed-trust.json" }

    /// The prefix of the temp files Reseed makes for the file `name`: `.<name>.reseed-tmp-`.
    static func temporaryPrefix(of name: String) -> String { ".\(name).reseed-tmp-" }

    /// A fresh temp name for the file `name` (the name a durable write goes through, a copy an
    /// install renames in), such as `.triage.sqlite.reseed-tmp-1f2e3d4c5b6a7988`.
    package static func temporaryName(of name: String) -> String {
        temporaryPrefix(of: name) + String(format: "%016llx", UInt64.random(in: .min ... .max))
    }

    /// Whether `candidate` is a temp file of `name` (``temporaryName(of:)``), or a temp file of
    /// one of those (a delta built into its temp name, written through one of its own).
    ///
    /// ```swift
    /// try directory.removeTemporaryFiles { StoreLayout.isTemporary($0, of: "triage.sqlite") }
    /// ```
    package static func isTemporary(_ candidate: String, of name: String) -> Bool {
        let prefix = temporaryPrefix(of: name)
        return candidate.hasPrefix(prefix) || candidate.hasPrefix("." + prefix)
    }

    /// The prefix of partial downloads and of a delta's files.
    var downloadPrefix: String { ".\(storeFileName).reseed-download-" }

    /// The partial download of the file whose SHA-256 is `sha256`: `<download prefix><16 hex>`.
    func downloadName(sha256: String) -> String { downloadPrefix + String(sha256.prefix(16)) }

    /// The database a delta whose SHA-256 is `sha256` is decompressed into: `<download prefix>delta-<16 hex>.sqlite`.
    func deltaName(sha256: String) -> String { downloadPrefix + "delta-" + String(sha256.prefix(16)) + ".sqlite" }

    /// What ends the name of a partial download's validator.
    private static let validatorSuffix = ".etag"

    /// The file beside a partial download `name` that keeps the validator it resumes with: `<name>.etag`.
    static func validatorName(of name: String) -> String { name + validatorSuffix }

    /// The partial download whose validator is `name`; nil when `name` is not a validator's.
    static func download(validatedBy name: String) -> String? {
        name.hasSuffix(validatorSuffix) ? String(name.dropLast(validatorSuffix.count)) : nil
    }

    /// What the name of a store kept aside contains.
    static let asideForm = ".invalid-"

    /// The prefix of the names unusable stores are kept aside under.
    var asidePrefix: String { storeFileName + Self.asideForm }

    /// A new name to keep an unusable store aside under: `<store>.invalid-<UTC time>-<8 hex>`.
    func asideName() -> String {
        asidePrefix + PreferencesFile.timestamp() + "-" + String(format: "%08x", UInt32.random(in: .min ... .max))
    }

    /// What the file is: the store's kind of file, or the preferences file's (``PreferencesLayout``).
    enum Kind: String, Sendable, Encodable {
        case store, sidecar, installLock, updateLock, trustFloors, temporary, download, keptAside
        case preferences, preferencesLock, corruptPreferences

        /// What a file of the kind is, in words.
        var meaning: String {
            switch self {
            case .store: "the database itself"
            case .sidecar: "SQLite's write-ahead log, shared memory or rollback journal of the database"
            case .installLock: "the lock launches, installs and live replacements take"
            case .updateLock: "the lock channel updates take, held across a download"
            case .trustFloors: "what the device verified of its channel (the keys.json and manifest versions, the channel's name), below which nothing is taken"
            case .temporary: "a copy or a write an interrupted run left"
            case .download: "a partial download or a delta of a channel update, kept to resume"
            case .keptAside: "a database that could not be used, kept aside for the app to look at"
            case .preferences: "the preferences file, where the seed version of each store is recorded"
            case .preferencesLock: "the lock writes of the preferences take"
            case .corruptPreferences: "a preferences file that was not a JSON object, moved aside"
            }
        }
    }

    /// What removes a file of a kind.
    enum Removal: String, Sendable, Encodable {
        /// Nothing Reseed does: the store, a lock file, the preferences, an unusable store or
        /// preferences file kept aside for the app, a user store's sidecars (SQLite's).
        case never
        /// The next install, before its swap.
        case nextInstall
        /// The next launch or install that takes the store's lock.
        case nextLaunch
        /// The next channel update (a partial download is kept to resume).
        case nextUpdate
        /// The next write of the preferences (a version or a channel's state recorded).
        case nextPreferencesWrite
    }

    /// One file of the data directory that belongs to a store or to the preferences.
    package struct File: Sendable, Equatable, Encodable {
        /// Its name in its folder.
        var name: String
        var kind: Kind
        var removedBy: Removal
        /// The file it belongs to: the store's, the user store's or the preferences file's name.
        var belongsTo: String
        /// What it is, in words.
        var description: String

        init(name: String, kind: Kind, removedBy: Removal, belongsTo: String) {
            self.name = name
            self.kind = kind
            self.removedBy = removedBy
            self.belongsTo = belongsTo
            description = kind.meaning
        }

        /// One line that says it all: `name (kind, removed by: removal): what it is`.
        package var line: String { "\(name) (\(kind.rawValue), removed by: \(removedBy.rawValue)): \(description)" }
    }

    /// The kind of the file `name`; nil when it is not one of the store's.
    func kind(of name: String) -> Kind? {
        if name == storeFileName { return .store }
        if sidecars.contains(name) { return .sidecar }
        if name == installLock { return .installLock }
        if name == updateLock { return .updateLock }
        if name == trustFloors { return .trustFloors }
        if Self.isTemporary(name, of: storeFileName) { return .temporary }
        if name.hasPrefix(downloadPrefix) { return .download }
        if name.hasPrefix(asidePrefix) { return .keptAside }
        return nil
    }

    /// What removes a file of `kind` beside a store, or beside a user store when `userStore`.
    static func removal(of kind: Kind, userStore: Bool) -> Removal {
        switch kind {
        case .store, .installLock, .updateLock, .trustFloors, .keptAside, .preferences, .preferencesLock, .corruptPreferences: .never
        case .sidecar: userStore ? .never : .nextInstall
        case .temporary: .nextLaunch
        case .download: .nextUpdate
        }
    }

    /// The store's files among `names` (a directory listing), sorted by name; a user store's when `userStore`.
    func files(among names: [String], userStore: Bool = false) -> [File] {
        names.sorted().compactMap { name in
            kind(of: name).map { File(name: name, kind: $0, removedBy: Self.removal(of: $0, userStore: userStore), belongsTo: storeFileName) }
        }
    }

    /// Reseed's files that are in the data directory `directory`: the store `store`'s, then the user
    /// store `userStore`'s, then the preferences file's at `preferences`, found in its own folder.
    /// Each sorted by name; a folder that cannot be read has none.
    package static func files(in directory: URL, store: String, userStore: String?, preferences: URL) -> [File] {
        let names = (try? FileSystem.directoryNames(directory.path)) ?? []
        let preferencesNames = (try? FileSystem.directoryNames(preferences.deletingLastPathComponent().path)) ?? []
        return StoreLayout(store: store).files(among: names)
            + (userStore.map { StoreLayout(store: $0).files(among: names, userStore: true) } ?? [])
            + PreferencesLayout(fileName: preferences.lastPathComponent).files(among: preferencesNames)
    }
}

/// The names beside the preferences file, which is one per data directory (`preferences.json` by
/// default, or where ``Launcher/Configuration/preferencesURL`` puts it) and shared by every store:
/// so its names are not a store's, though its lock and temp files take the same forms.
///
/// | file | kind | removed by |
/// |---|---|---|
/// | `preferences.json` | the preferences | never |
/// | `.preferences.json.reseed-lock` | the lock every write takes | never: a lock file stays |
/// | `.preferences.json.reseed-tmp-<16 hex>` | a write a crash interrupted | the next write, under the lock |
/// | `preferences.json.corrupt-<UTC time>[-<n>]` | a file that was not a JSON object, moved aside | never: the app's to look at |
///
/// A preferences file that is a symbolic link is written beside the file it points to: its temp
/// files and a corrupt file moved aside are named after that file, in that folder.
struct PreferencesLayout: Sendable, Equatable {
    /// The preferences file's name.
    let fileName: String

    /// What the name of a preferences file moved aside contains.
    static let corruptForm = ".corrupt-"

    /// The lock file every write of the preferences takes: `.<file>.reseed-lock`.
    var lock: String { StoreLayout.lockName(of: fileName) }

    /// The prefix of the names a corrupt preferences file is moved aside under.
    var corruptPrefix: String { fileName + Self.corruptForm }

    /// The name to move a corrupt file aside under at `stamp` (a UTC time): `<file>.corrupt-<stamp>`,
    /// then `-2`, `-3`… for the `attempt`s after the first when that name is taken.
    func corruptName(stamp: String, attempt: Int) -> String {
        corruptPrefix + stamp + (attempt == 1 ? "" : "-\(attempt)")
    }

    /// The kind of the file `name`; nil when it is not one of the preferences'.
    func kind(of name: String) -> StoreLayout.Kind? {
        if name == fileName { return .preferences }
        if name == lock { return .preferencesLock }
        if StoreLayout.isTemporary(name, of: fileName) { return .temporary }
        if name.hasPrefix(corruptPrefix) { return .corruptPreferences }
        return nil
    }

    /// The preferences' files among `names` (a listing of its folder), sorted by name.
    func files(among names: [String]) -> [StoreLayout.File] {
        names.sorted().compactMap { name in
            kind(of: name).map { kind in
                StoreLayout.File(name: name, kind: kind, removedBy: kind == .temporary ? .nextPreferencesWrite : .never, belongsTo: fileName)
            }
        }
    }
}
