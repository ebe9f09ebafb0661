import Foundation
import GRDB
import ReseedSystem
import SystemPackage

extension Installation {
    /// The pipeline's copy and verify stages for a delta: the installed store copied into
    /// `temporary` beside it, the delta at `deltaPath` applied to that copy in one transaction, the
    /// result's content hash checked against the manifest's (signed by the channel), made durable,
    /// then checked as any seed is (a rollback-journal SQLite header, the embedded name and version,
    /// a write rolled back). The installed store is only ever read.
    ///
    /// The copy has the store's temp name, so the install's own clean-up removes what a crash left;
    /// the swap renames it into place: the seed is written once.
    ///
    /// `progress` hears of the copy, the apply and the content hash on one scale (see ``DeltaProgress``).
    ///
    /// - Throws: ``ReseedError`` at step ``ReseedError/Step/applyDelta`` (``ReseedError/Code/deltaMismatch``,
    ///   ``ReseedError/Code/invalidDelta``, ``ReseedError/Code/verificationFailed`` for another
    ///   content hash) or ``ReseedError/Step/verify``; `temporary` and its journal are removed.
    func applyDelta(_ deltaPath: String, into temporary: String, progress: (@Sendable (_ completed: Int64, _ total: Int64) -> Void)?) throws(ReseedError) {
        let path = directory.path(temporary)
        guard let expected = manifest.contentHash else {
            throw ReseedError(.invalidManifest, step: .applyDelta, path: deltaPath, message: "the channel states no content hash for the delta's result")
        }
        do throws(ReseedError) {
            let (scale, fingerprint) = try copyInstalledStore(into: temporary, progress: progress)
            let incremental = try incrementalCheck(storeFingerprint: fingerprint)
            let applied = try SeedDelta.apply(
                deltaPath: deltaPath, to: path, expectedContentHash: expected, incremental: incremental,
                rowsApplied: scale.map { scale in { scale.report(.apply, $0, of: $1) } },
                rowsHashed: scale.map { scale in { scale.report(.hash, $0, of: $1) } })
            scale?.report(.hash, 1, of: 1)
            if applied.incrementalContentHash != nil {
                logger.info("checked the delta's result from the rows it changed", metadata: ["store": "\(storePath)"])
            } else {
                logger.info("hashed the delta's whole result", metadata: [
                    "store": "\(storePath)",
                    "reason": "\(incremental == nil ? "no incremental content hash recorded for this store file" : "the delta does not start from the recorded row set")",
                ])
            }
            try during(.applyDelta, path: path) { try directory.syncFile(temporary) }
            let bytes = try during(.verify, path: path) { () throws -> [UInt8] in
                let file = try FileSystem.openRegularFile(path)
                return try directory.fileSystem.reading("read", path) { () throws(Errno) in
                    try file.read(count: StoreHeader.size, at: 0)
                }
            }
            guard let header = StoreHeader(bytes), header.isRollbackJournal else {
                throw verificationFailure("the delta's result is not a seed with a rollback journal")
            }
            try verifyEmbeddedMetadata(temporary)
        } catch {
            for name in [temporary] + StoreLayout.sidecars(of: temporary) { _ = try? directory.remove(name) }
            throw error
        }
    }

    /// The incremental content hashes a delta's result may be checked with (see
    /// ``SeedDelta/apply(deltaPath:to:expectedContentHash:incremental:rowsApplied:rowsHashed:)``): the
    /// one recorded for the installed seed and the manifest's. Nil, and the whole result is hashed,
    /// when either is missing or the store file no longer has the fingerprint recorded when it was
    /// installed: then something wrote to it since (an app that uses a single-file store as its own),
    /// and only the whole content says what it holds.
    private func incrementalCheck(storeFingerprint: String?) throws(ReseedError) -> (installed: String, expected: String)? {
        guard let expected = manifest.incrementalContentHash, let storeFingerprint else { return nil }
        let (contents, entries) = try preferences.readEntries()
        guard case .valid = contents, let entry = entries[manifest.name], entry.storeFingerprint == storeFingerprint,
              let installed = entry.incrementalContentHash else { return nil }
        return (installed, expected)
    }

    /// Copies the installed store into a new file `name` with SQLite's backup, which reads a
    /// consistent snapshot whatever the store's journal mode (a single-file store runs in WAL, and
    /// may be open in a ``LiveStore``), then gives the copy a rollback journal, as every seed has.
    ///
    /// The store is read only when it is a regular file (`lstat`): SQLite opens it by its path, and
    /// would wait forever on a FIFO, holding the store's lock.
    ///
    /// With `progress`, the copy goes a step of 1 MiB at a time in one read transaction of the
    /// store (a snapshot the steps all read), reported after each step; the scale it returns goes
    /// on with the apply and the content hash. It also returns the store's fingerprint as it was
    /// before the copy.
    private func copyInstalledStore(
        into name: String, progress report: (@Sendable (Int64, Int64) -> Void)?
    ) throws(ReseedError) -> (progress: DeltaProgress?, storeFingerprint: String?) {
        let status = try during(.applyDelta, path: storePath) { try directory.status(storeName) }
        let kind = status?.kind
        guard kind == .regular else {
            throw ReseedError(.deltaMismatch, step: .applyDelta, path: storePath, message:
                "the installed seed is \(kind.map { $0.nonRegularName ?? "" } ?? "missing")\(kind == nil ? "" : ", not a regular file"); no delta starts from it")
        }
        // A single-file store the app filled far beyond the seed cannot give the seed's content
        // hash: not worth copying whole to find out.
        if let size = status?.size, size > 2 * manifest.size + (64 << 20) {
            throw ReseedError(.deltaMismatch, step: .applyDelta, path: storePath, message:
                "the store is \(size) bytes, far more than the \(manifest.size)-byte seed: the app has written to it; no delta starts from it")
        }
        let progress = report.map { DeltaProgress(report: $0, storeSize: status?.size ?? 0) }
        progress?.report(.copy, 0, of: 1)
        let path = directory.path(name)
        try during(.applyDelta, path: path) {
            try directory.createExclusive(name).close()
            var readOnly = GRDB.Configuration()
            readOnly.readonly = true
            let source = try DatabaseQueue(path: storePath, configuration: readOnly)
            defer { try? source.close() }
            // No fsync while copying: a crash discards the copy; it is synced once the delta is applied.
            var unsynced = GRDB.Configuration()
            unsynced.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = OFF") }
            let copy = try DatabaseQueue(path: path, configuration: unsynced)
            defer { try? copy.close() }
            if let progress {
                try source.read { sourceDB in
                    // Taking the read lock now: every step then copies the same snapshot, never restarted by a writer.
                    _ = try Int.fetchOne(sourceDB, sql: "SELECT count(*) FROM sqlite_schema")
                    let pageSize = try Int.fetchOne(sourceDB, sql: "PRAGMA page_size") ?? 4096
                    try copy.writeWithoutTransaction { copyDB in
                        try sourceDB.backup(to: copyDB, pagesPerStep: CInt(max(1, (1 << 20) / max(pageSize, 512)))) { step in
                            progress.report(.copy, Int64(step.completedPageCount), of: Int64(step.totalPageCount))
                        }
                    }
                }
            } else {
                try source.backup(to: copy)
            }
            try copy.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = DELETE") }
        }
        return (progress, status?.fingerprint)
    }
}

/// A delta install's progress as one (completed, total) scale, for a callback that knows nothing of
/// phases: the total is three times the installed store's size in bytes, and the copy (pages copied),
/// the apply (rows applied, against the rows the delta lists) and the content hash (rows hashed,
/// against the result's rows) each fill a third, in that order. Reports never go back, and the last
/// is the total.
///
/// Used on the one thread that installs, hence a class with no lock.
final class DeltaProgress {
    enum Phase: Int64 {
        case copy = 0, apply, hash
    }

    private let report: @Sendable (Int64, Int64) -> Void
    /// A third of the scale: the installed store's size, at least 1.
    private let third: Int64
    private var reported: Int64 = -1

    init(report: @escaping @Sendable (Int64, Int64) -> Void, storeSize: Int64) {
        self.report = report
        self.third = max(storeSize, 1)
    }

    /// Reports `done` of `total` in `phase`, unless it would not move the scale forward.
    func report(_ phase: Phase, _ done: Int64, of total: Int64) {
        let fraction = total <= 0 ? 1 : Double(min(max(done, 0), total)) / Double(total)
        let completed = phase.rawValue * third + Int64((Double(third) * fraction).rounded(.down))
        guard completed > reported else { return }
        reported = completed
        report(completed, 3 * third)
    }
}
