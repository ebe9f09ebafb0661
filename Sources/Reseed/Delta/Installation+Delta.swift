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
    /// - Throws: ``ReseedError`` at step ``ReseedError/Step/applyDelta`` (``ReseedError/Code/deltaMismatch``,
    ///   ``ReseedError/Code/invalidDelta``, ``ReseedError/Code/verificationFailed`` for another
    ///   content hash) or ``ReseedError/Step/verify``; `temporary` and its journal are removed.
    func applyDelta(_ deltaPath: String, into temporary: String) throws(ReseedError) {
        let path = directory.path(temporary)
        guard let expected = manifest.contentHash else {
            throw ReseedError(.invalidManifest, step: .applyDelta, path: deltaPath, message: "the channel states no content hash for the delta's result")
        }
        do throws(ReseedError) {
            try copyInstalledStore(into: temporary)
            _ = try SeedDelta.apply(deltaPath: deltaPath, to: path, expectedContentHash: expected)
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

    /// Copies the installed store into a new file `name` with SQLite's backup, which reads a
    /// consistent snapshot whatever the store's journal mode (a single-file store runs in WAL, and
    /// may be open in a ``LiveStore``), then gives the copy a rollback journal, as every seed has.
    ///
    /// The store is read only when it is a regular file (`lstat`): SQLite opens it by its path, and
    /// would wait forever on a FIFO, holding the store's lock.
    private func copyInstalledStore(into name: String) throws(ReseedError) {
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
            try source.backup(to: copy)
            try copy.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = DELETE") }
        }
    }
}
