import Foundation
import Logging
import ReseedSystem

/// The one install every journey runs: a seed carried from its source through named stages.
///
/// ```
/// clean ─▶ check space ─▶ copy (decode, apply a delta) ─▶ verify ─▶ check the user store ─▶ swap ─▶ record
/// ```
///
/// A launch, a channel's full or delta update, ``LiveStore/replace(with:)`` and, through a
/// launch of the other store, ``LiveStore/switchTo(_:)`` are its callers. They hand it a
/// ``Source`` and say how they hold the store for the swap: with no connection of this process
/// on it (a launch, an update of a closed store), or with their own pool closed under the live
/// store's gate. Opening the store afterwards is one function too (``Launcher/open(_:with:)``).
///
/// Every stage runs under the store's lock, which the caller holds. A failure before ``Stage/swap``
/// leaves everything the user had as it was, and removes what the stage made.
struct InstallPipeline: Sendable {
    /// The stages, in order.
    enum Stage: Int, Comparable, Sendable, CaseIterable {
        /// What is there is read (a legacy store adopted, the preferences, the store's first bytes,
        /// a user store prepared) and the decision taken.
        case prepare
        /// Temp files an interrupted install left are removed.
        case clean
        /// What the copy will write is compared with the data directory's free space (``DiskSpace``):
        /// a short disk fails here, with nothing written. Not the source's failure: another source
        /// of the same seed (a delta's full seed) needs more.
        case checkSpace
        /// The seed is copied into a temp file beside the store: decompressed when compressed, or
        /// made by applying a delta to a copy of the installed seed.
        case copy
        /// The copy is checked against its manifest: size, header, SHA-256, embedded name and
        /// version, a write rolled back.
        case verify
        /// With a user store, a seed that arrived at runtime is refused when a user table would
        /// hide one of its tables or a reference points at a table or column it lacks.
        case checkUserStore
        /// No other connection has the old store; its sidecars go; the copy is renamed over it.
        case swap
        /// The new version is recorded in the preferences.
        case record

        static func < (a: Stage, b: Stage) -> Bool { a.rawValue < b.rawValue }
    }

    /// A failure of one stage: ``changedNothing`` says whether the store was left as it was, so that
    /// a caller with another way to the same seed (a delta's update, which can download the full
    /// seed) knows it may take it.
    struct Failure: Error, Sendable, CustomStringConvertible {
        var stage: Stage
        var error: ReseedError
        /// The error's own sentence: whoever prints a failure prints what a user can read.
        var description: String { error.description }
        /// True before the swap: the store and the preferences are as they were.
        var changedNothing: Bool { stage < .swap }
        /// True when the seed's own copy or its checks failed: another source of the same seed may
        /// succeed (a delta's update then downloads the full seed). A failure to read what is there
        /// or to check the user store would fail the same way with any source.
        var isTheSources: Bool { stage == .copy || stage == .verify }
    }

    /// Where the seed comes from.
    enum Source: Sendable {
        /// A seed file: the bundled seed or a download, decompressed when its manifest says so.
        case seed
        /// A row-level delta, already decompressed into a file at `deltaPath`, applied to a copy
        /// of the installed store; the result must have the content hash of ``Installation/seed``'s manifest.
        case delta(deltaPath: String)
    }

    /// A verified copy beside the store, ready for the swap.
    struct Staged: Sendable {
        /// Its temp name in the data directory (`.<store>.reseed-tmp-…`).
        var temporary: String
        /// Temp files of an earlier, interrupted install removed first.
        var removedLeftovers: [String]
    }

    /// The install's facts: the seed, the data directory, the preferences, the source recorded.
    var installation: Installation
    var source: Source = .seed

    private var directory: Directory { installation.directory }
    private var logger: Logger { installation.logger }

    /// Clean, check the free space, copy, verify and check the user store: a verified temp file beside the store, or
    /// nothing made and this throws.
    ///
    /// `progress` hears of the copy as (bytes copied, total bytes); of a delta's copy, apply and
    /// content hash on one scale (``DeltaProgress``).
    func stage(progress: (@Sendable (_ completed: Int64, _ total: Int64) -> Void)?) throws(Failure) -> Staged {
        let storeName = installation.storeName
        let removedLeftovers = try Self.during(.clean) { () throws(ReseedError) in
            try Reseed.during(.cleanUp, path: directory.url.path) { try directory.removeTemporaryFiles { StoreLayout.isTemporary($0, of: storeName) } }
        }
        if !removedLeftovers.isEmpty {
            logger.notice("removed temporary files of an interrupted install", metadata: ["files": "\(removedLeftovers)"])
        }
        // After the clean-up, whose removals count as free space; before the copy creates anything.
        try Self.during(.checkSpace) { () throws(ReseedError) in try installation.diskSpace(for: source).check(in: directory) }
        let temporary = StoreLayout.temporaryName(of: storeName)
        // Copy and verify are one pass: the SHA-256 is computed while copying, the checks read the
        // copy from the page cache before its fsync. A failure names which of the two it was.
        do throws(ReseedError) {
            switch source {
            case .seed: try installation.copyAndVerify(into: temporary, progress: progress)
            case .delta(let deltaPath): try installation.applyDelta(deltaPath, into: temporary, progress: progress)
            }
        } catch {
            throw Failure(stage: error.step == .verify || error.code == .verificationFailed ? .verify : .copy, error: error)
        }
        do throws(Failure) {
            try Self.during(.checkUserStore) { () throws(ReseedError) in try checkUserStore(seedAt: directory.path(temporary)) }
        } catch {
            _ = try? directory.remove(temporary)
            throw error
        }
        return Staged(temporary: temporary, removedLeftovers: removedLeftovers)
    }

    /// A store just swapped in.
    struct Swapped: Sendable {
        /// Where the old store was kept, when it was kept aside.
        var keptAside: URL?
        /// The new store file's fingerprint right after the rename, before anything can open it
        /// (nil when it cannot be read: the incremental content hash is then not recorded).
        var storeFingerprint: String?
    }

    /// Swaps the staged copy in for the store (see ``Installation/swap(in:storeState:keepAside:onKeptAside:)``);
    /// the copy is removed when the swap fails.
    func swap(
        _ staged: Staged, storeState: Decision.StoreState, keepAside: Bool, onKeptAside: ((URL) throws(ReseedError) -> Void)? = nil
    ) throws(Failure) -> Swapped {
        let keptAside: URL?
        do {
            keptAside = try Self.during(.swap) { () throws(ReseedError) in
                try installation.swap(in: staged.temporary, storeState: storeState, keepAside: keepAside, onKeptAside: onKeptAside)
            }
        } catch {
            _ = try? directory.remove(staged.temporary)
            throw error
        }
        // The store is swapped in: a failed `stat` only costs a later delta its incremental check.
        return Swapped(keptAside: keptAside, storeFingerprint: (try? directory.status(installation.storeName))??.fingerprint)
    }

    /// Records the new version (``Installation/recordVersion(installed:)``); `installed`: the store
    /// swapped in just now, if one was.
    ///
    /// - Returns: where corrupt preferences were moved aside, if they were.
    func record(installed: Swapped?) throws(Failure) -> URL? {
        try Self.during(.record) { () throws(ReseedError) in try installation.recordVersion(installed: installed) }
    }

    /// Stage and swap, for a caller that has no connection on the store (a launch, an update of a
    /// closed store). Recording is the caller's: a launch records also when it installed nothing.
    func install(
        storeState: Decision.StoreState, keepAside: Bool, onKeptAside: ((URL) throws(ReseedError) -> Void)? = nil,
        progress: (@Sendable (Int64, Int64) -> Void)?
    ) throws(Failure) -> (staged: Staged, swapped: Swapped) {
        let staged = try stage(progress: progress)
        return (staged, try swap(staged, storeState: storeState, keepAside: keepAside, onKeptAside: onKeptAside))
    }

    /// With a user store, for a seed that arrived at runtime: refuses it, before it replaces the
    /// installed one, when a user table would hide one of its tables or a reference points at
    /// something it lacks. A bundled seed is checked after opening instead, once the app's
    /// migrator has run (see ``Launcher/finishOpening(_:outcome:)``).
    private func checkUserStore(seedAt seedPath: String) throws(ReseedError) {
        guard installation.source == .download, let userStore = installation.configuration.userStore else { return }
        let userPath = directory.path(userStore.fileName)
        try UserStoreSchema.refuseIncompatibleSeed(
            userTables: try UserStoreSchema.ownNames(ofStoreAt: userPath, busyTimeout: installation.configuration.busyTimeout), references: userStore.references,
            seedPath: seedPath, userPath: userPath)
    }

    /// Runs `body` as `stage`: its error comes out as that stage's failure.
    static func during<T>(_ stage: Stage, _ body: () throws(ReseedError) -> T) throws(Failure) -> T {
        do {
            return try body()
        } catch {
            throw Failure(stage: stage, error: error)
        }
    }
}
