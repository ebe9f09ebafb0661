import Foundation
import GRDB
import ReseedSystem
import Synchronization
import SystemPackage

extension Installation {
    /// The pipeline's copy and verify stages for a delta: the installed store copied into
    /// `temporary` beside it, the delta at `deltaPath` applied to that copy in one transaction, the
    /// result's content hash checked against the manifest's (signed by the channel), then checked as
    /// any seed is (a rollback-journal SQLite header, the manifest's `user_version` and
    /// `application_id`, the embedded name and version, a write rolled back); ``ready(copy:)`` makes
    /// it durable, once. The installed store is only ever read.
    ///
    /// The copy has the store's temp name, so the install's own clean-up removes what a crash left;
    /// the swap renames it into place: the seed is written once.
    ///
    /// `progress` hears of the copy, the apply and the content hash on one scale (see ``DeltaProgress``).
    ///
    /// - Throws: ``ReseedError`` at step ``ReseedError/Step/applyDelta`` (``ReseedError/Code/deltaMismatch``,
    ///   ``ReseedError/Code/invalidDelta``, ``ReseedError/Code/verificationFailed`` for another
    ///   content hash) or ``ReseedError/Step/verify``; `temporary` and its journal are removed.
    func applyDelta(_ deltaPath: String, into temporary: String) throws(ReseedError) {
        let path = directory.path(temporary)
        guard let expected = manifest.contentHash else {
            throw ReseedError(.invalidManifest, step: .applyDelta, path: deltaPath, message: "the channel states no content hash for the delta's result")
        }
        do throws(ReseedError) {
            let (scale, fingerprint) = try copyInstalledStore(into: temporary, progress: progress)
            let incremental = try incrementalCheck(storeFingerprint: fingerprint)
            // A delta made from a metadata-only entry, on a store still as installed: checked against the signed values.
            let metadataOnly = try applyMetadataOnly(to: path, incremental: incremental)
            // Any other's embedded name and version are checked, and a write taken, through the apply's own connection.
            let applied: SeedDelta.Applied = if let metadataOnly { metadataOnly } else { try SeedDelta.apply(
                deltaPath: deltaPath, to: path, expectedContentHash: expected, incremental: incremental, discardedOnFailure: true,
                rowsApplied: scale.map { scale in { scale.report(.apply, $0, of: $1) } },
                rowsHashed: scale.map { scale in { scale.report(.hash, $0, of: $1) } },
                checkingResult: { db throws(ReseedError) in try verifyEmbeddedMetadata(in: db) }) }
            scale?.report(.hash, 1, of: 1)
            if applied.incrementalContentHash != nil {
                logger.info("checked the delta's result from the rows it changed", metadata: ["store": "\(storePath)"])
            } else {
                logger.info("hashed the delta's whole result", metadata: [
                    "store": "\(storePath)",
                    "reason": "\(incremental == nil ? "no incremental content hash recorded for this store file" : "the delta does not start from the recorded row set")",
                ])
            }
            let bytes = try during(.verify, path: path) { () throws -> [UInt8] in
                let file = try FileSystem.openRegularFile(path)
                return try directory.fileSystem.reading("read", path) { () throws(Errno) in
                    try file.read(count: StoreHeader.size, at: 0)
                }
            }
            guard let header = StoreHeader(bytes), header.isRollbackJournal else {
                throw verificationFailure("the delta's result is not a seed with a rollback journal")
            }
            // Its page size is the installed seed's: a layout, which the content hash leaves out.
            try verifyHeaderValues(header, of: "the delta's result")
            if metadataOnly != nil { try verifyEmbeddedMetadata(temporary) }
        } catch {
            for name in [temporary] + StoreLayout.sidecars(of: temporary) { _ = try? directory.remove(name) }
            throw error
        }
    }

    /// What vouches for the installed seed's row set when a delta's result is checked from the rows
    /// it changed (see
    /// ``SeedDelta/apply(deltaPath:to:expectedContentHash:incremental:discardedOnFailure:rowsApplied:rowsHashed:checkingResult:)``),
    /// and the manifest's incremental content hash: the content hash of the seed installed when the
    /// store's fingerprint was recorded, and the incremental content hash recorded then (a seed
    /// built by `reseed package` records none: the delta carries its row set). Nil, and the whole
    /// result is hashed, when the manifest has none, neither is recorded, or the store file and its
    /// `-wal` no longer have that fingerprint: then something wrote to the store since (an app's
    /// row, in the `-wal` or checkpointed into the file; a connection that is not the launcher's,
    /// whose close checkpoints the `-wal`), or it is a file found in place, and only the whole
    /// content says what it holds. A single-file store the app only reads through the launcher's
    /// pool keeps it (see ``StoreWAL``); a seed beside a user store is attached read-only and keeps it.
    private func incrementalCheck(storeFingerprint: String?) throws(ReseedError) -> (from: String?, installed: String?, expected: String)? {
        guard let expected = manifest.incrementalContentHash, let storeFingerprint else { return nil }
        let (contents, entries) = try preferences.readEntries()
        guard case .valid = contents, let entry = entries[manifest.name], entry.storeFingerprint == storeFingerprint,
              entry.fingerprintedContentHash != nil || entry.incrementalContentHash != nil else { return nil }
        return (entry.fingerprintedContentHash, entry.incrementalContentHash, expected)
    }

    /// Copies the installed store into a new file `name`, with its `-wal` beside it when it has one:
    /// the apply replays that `-wal` and gives the copy a rollback journal, as every seed has (see
    /// ``SeedDelta/apply(deltaPath:to:expectedContentHash:incremental:discardedOnFailure:rowsApplied:rowsHashed:checkingResult:)``).
    /// The store is opened read-only and only ever read.
    ///
    /// The copy is the fastest the OS offers (``FileCopier``: a clone where the filesystem shares
    /// blocks, else `copy_file_range(2)`, else a 1 MiB loop), never SQLite's page-by-page backup, made
    /// inside a read transaction of the store, and consistent:
    ///
    /// - Rollback journal (a seed as installed): the transaction holds a SHARED lock on the file,
    ///   and a writer needs EXCLUSIVE to write it (or to switch it to WAL). The bytes are a database.
    /// - WAL (a single-file store a ``LiveStore`` opened; its pool may be open now, and an app that
    ///   opened it leaves frames in the `-wal`, its first write at least): the file alone may lack
    ///   frames not yet copied back, and a checkpoint may copy some back while we read it. So the
    ///   `-wal` is copied too, beside the copy, after the file; SQLite's recovery then replays it
    ///   when the apply opens the copy, as after a crash during a checkpoint. That is consistent because
    ///   our transaction pins what the replay needs: a checkpoint copies back only frames up to the
    ///   oldest reader's snapshot, so every page of the file that can change while we read is in a
    ///   frame of our snapshot, replayed over it; and while we hold that snapshot the `-wal` is not
    ///   restarted, so those frames are still in it when we copy it, whole, up to its size measured
    ///   once the transaction began. Frames appended since only bring the copy to a later commit
    ///   (a torn one is dropped by the replay's checksums); if our snapshot needed no frame, SQLite
    ///   gave us WAL read lock 0, which no checkpoint writes past, and the file alone is whole.
    ///   Any committed state will do as the base: the delta's result is checked against the signed
    ///   content hash.
    ///
    /// The store is read only when it is a regular file (`lstat`): SQLite opens it by its path, and
    /// would wait forever on a FIFO, holding the store's lock.
    ///
    /// With `progress`, the copy reports the store file's bytes copied; the scale it returns goes on
    /// with the apply and the content hash. It also returns the fingerprint of the store file and its
    /// `-wal` (``StoreWAL/fingerprint(store:wal:)``) as the copy found them.
    private func copyInstalledStore(
        into name: String, progress report: ProgressReport?
    ) throws(ReseedError) -> (progress: DeltaProgress?, storeFingerprint: String?) {
        let status = try during(.applyDelta, path: storePath) { try directory.status(storeName) }
        let kind = status?.kind
        guard kind == .regular else {
            throw ReseedError(.deltaMismatch, step: .applyDelta, path: storePath, message:
                "the installed seed is \(kind.map { $0.nonRegularName ?? "" } ?? "missing")\(kind == nil ? "" : ", not a regular file"); no delta starts from it")
        }
        // A single-file store the app filled far beyond the seed cannot give the seed's content
        // hash: not worth copying whole to find out.
        let largest = 2 * manifest.size + (64 << 20)
        let size = status?.size ?? 0
        if size > largest {
            throw ReseedError(.deltaMismatch, step: .applyDelta, path: storePath, message:
                "the store is \(size) bytes, far more than the \(manifest.size)-byte seed: the app has written to it; no delta starts from it")
        }
        let progress = report.map { DeltaProgress(report: $0, storeSize: size) }
        progress?.report(.copy, 0, of: 1)
        let path = directory.path(name)
        let (methods, fingerprint) = try during(.applyDelta, path: path) { () throws -> ([String], String?) in
            // Taking the read lock (SHARED, or a WAL snapshot) before anything is measured or copied.
            // Its failure names the installed store, not the copy.
            let reading = try during(.applyDelta, path: storePath) { try StoreReadTransaction(path: storePath) }
            // Measured once the snapshot is taken: a commit before it (into the -wal, or checkpointed
            // into the file) changes one of them; one after it is not in what is copied.
            let walStatus = try directory.status(StoreLayout.wal(of: storeName))
            let fingerprint = try directory.status(storeName).map { StoreWAL.fingerprint(store: $0, wal: walStatus) }
            // A -wal SQLite reads with the file (it recovers one it finds, whatever the header says) goes with it.
            let walSize = walStatus?.size ?? 0
            guard walSize <= largest else {
                throw ReseedError(.deltaMismatch, step: .applyDelta, path: directory.path(StoreLayout.wal(of: storeName)), message:
                    "the store's -wal is \(walSize) bytes: the app has written to the store; no delta starts from it")
            }
            var methods: [String]
            if OpenStores.isOpen(storePath) {
                // This process has the store open: no descriptor of ours on it (see `StoreReadTransaction.backup`).
                try directory.createExclusive(name).close()
                do { try reading.backup(into: path) } catch { throw ReseedError.wrapping(error, step: .applyDelta, path: storePath) }
                methods = ["sqlite backup"]
                progress?.report(.copy, 1, of: 1)
            } else {
                methods = [try copyFile(storeName, into: name, limit: largest + 1, whole: true, progress: progress).rawValue]
                if walSize > 0 {
                    methods.append(try copyFile(StoreLayout.wal(of: storeName), into: StoreLayout.wal(of: name), limit: walSize, whole: false, progress: nil).rawValue)
                }
            }
            // Measured again after the copy: a commit meanwhile (one that restarted the -wal while our
            // snapshot held WAL read lock 0 can leave the copy at that later commit) means the
            // fingerprint no longer vouches for what was copied, and the result is hashed whole.
            let walAfter = try directory.status(StoreLayout.wal(of: storeName))
            let after = try directory.status(storeName).map { StoreWAL.fingerprint(store: $0, wal: walAfter) }
            _ = consume reading
            return (methods, after == fingerprint ? fingerprint : nil)
        }
        logger.debug("copied the installed seed for the delta", metadata: [
            "method": "\(methods[0])", "bytes": "\(size)", "wal": "\(methods.count > 1 ? "copied" : "none")",
        ])
        return (progress, fingerprint)
    }

    /// The bytes of the file `source` of the data directory (never following a link) into the new
    /// file `name` through ``FileCopier`` (no fsync), at most `limit` bytes; with `whole`, all of it
    /// as `fstat` measures it when opened, else up to `limit`.
    private func copyFile(_ source: String, into name: String, limit: Int64, whole: Bool, progress: DeltaProgress?) throws -> FileCopier.Method {
        let sourcePath = directory.path(source)
        guard let file = try directory.openForReading(source) else {
            throw FileSystemFailure(operation: "open", path: sourcePath, errno: .noSuchFileOrDirectory)
        }
        let total = try directory.fileSystem.reading("fstat", sourcePath) { () throws(Errno) in try file.status().size }
        let destination = try directory.createExclusive(name)
        let copier = FileCopier(hashing: false, limit: limit, progress: progress.map { progress in
            { @Sendable copied in progress.report(.copy, copied, of: total) }
        })
        let copied = try directory.fileSystem.perform(.copy, directory.path(name)) { () throws(Errno) in
            try copier.copy(from: file, to: destination)
        }
        if whole, copied.bytes != total {
            throw FileSystemFailure(operation: "copy", path: sourcePath, errno: nil, reason: "copied \(copied.bytes) of its \(total) bytes")
        }
        return copied.method
    }
}

/// A delta install's progress as one (completed, total) scale, for a callback that knows nothing of
/// phases: the total is three times the installed store's size in bytes, and the copy (bytes copied),
/// the apply (rows applied, against the rows the delta lists) and the content hash (rows hashed,
/// against the result's rows) each fill a third, in that order. Reports never go back, and the last
/// is the total.
///
/// Used on the one thread that installs; the lock only lets a copy's `@Sendable` callback hold it.
final class DeltaProgress: Sendable {
    enum Phase: Int64 {
        case copy = 0, apply, hash
    }

    private let report: ProgressReport
    /// A third of the scale: the installed store's size, at least 1.
    private let third: Int64
    private let reported = Mutex<Int64>(-1)

    init(report: @escaping ProgressReport, storeSize: Int64) {
        self.report = report
        self.third = max(storeSize, 1)
    }

    /// Reports `done` of `total` in `phase`, unless it would not move the scale forward.
    func report(_ phase: Phase, _ done: Int64, of total: Int64) {
        let fraction = total <= 0 ? 1 : Double(min(max(done, 0), total)) / Double(total)
        let completed = phase.rawValue * third + Int64((Double(third) * fraction).rounded(.down))
        let moved = reported.withLock { reported in
            defer { reported = max(reported, completed) }
            return completed > reported
        }
        if moved { report(InstallProgress(step: .install, completed: completed, total: 3 * third)) }
    }
}
