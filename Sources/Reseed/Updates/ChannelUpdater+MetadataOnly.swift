import Foundation
import GRDB
import ReseedSystem

extension ChannelUpdater {
    /// The delta of an entry whose seeds differ only in Reseed's metadata (``ChannelManifest/MetadataOnly``),
    /// made on the device instead of downloaded: a format-1 delta file in the data directory that
    /// updates those values in `reseed_metadata`, from the installed seed's content hash to the
    /// manifest's. The install pipeline applies it as any delta (a copy of the installed store, the
    /// apply, the check of the result, the swap), so nothing about crash safety changes. The result is checked against the entry's values (``MetadataOnlyDelta``,
    /// returned beside the file for the install) while the store still has its recorded fingerprint,
    /// else hashed whole, the file having no starting row set.
    ///
    /// - Throws: a disk too short for the install's copy as the environment's failure (no fallback);
    ///   an entry the manifest's reader refused, one that does not fit the manifest, or a file that
    ///   cannot be written as the source's (the caller then falls back to the full seed). Nothing is
    ///   left in the data directory on failure.
    func makeMetadataOnlyDelta(_ delta: ChannelManifest.Delta, of manifest: ChannelManifest, in context: Context)
        async throws(InstallPipeline.Failure) -> (file: DeltaFile, entry: MetadataOnlyDelta)
    {
        let directory = context.directory
        let layout = StoreLayout(store: manifest.name)
        let made = try InstallPipeline.during(.source) { () throws(ReseedError) in
            try MetadataOnlyDelta(delta: delta, manifest: manifest, storePath: directory.path(layout.storeFileName))
        }
        try InstallPipeline.during(.environment) { () throws(ReseedError) in
            let installedSize = try DiskSpace.installedSize(of: layout.storeFileName, in: directory)
            try DiskSpace(purpose: "install \(manifest.name) \(manifest.version) from a copy of the installed seed", needed: DiskSpace.deltaUpdate(
                deltaSize: MetadataOnlyDelta.sizeBound, alreadyDownloaded: MetadataOnlyDelta.sizeBound, installedSize: installedSize)).check(in: directory)
        }
        let name = layout.deltaName(sha256: made.toContentHash)
        let removeFiles: @Sendable () -> Void = {
            for file in [name] + StoreLayout.sidecars(of: name) { _ = try? directory.remove(file) }
        }
        do {
            try await offload("reseed-delta") { () throws(InstallPipeline.Failure) in
                try InstallPipeline.during(.source) { () throws(ReseedError) in try made.write(name, in: directory) }
            }
        } catch {
            removeFiles()
            throw error
        }
        return (DeltaFile(name: name, path: directory.path(name), removeFiles: removeFiles), made)
    }
}

/// A delta file that sets values of `reseed_metadata` and nothing else (see
/// ``ChannelManifest/MetadataOnly``), made from a manifest's entry: the format-1 file of
/// <doc:RowLevelDeltas>, one table, updated rows only, no statistics (the publisher states them equal).
struct MetadataOnlyDelta: Sendable {
    /// A bound on the file's size, for the disk-space check: a few pages.
    static let sizeBound: Int64 = 64 << 10

    var fromContentHash: String
    var toContentHash: String
    var userVersion: Int32
    var applicationID: Int32
    /// The values to set, in the order of their keys' UTF-8 bytes.
    var values: [(key: String, value: String)]
    /// `PRAGMA encoding` of the installed store, which the delta must share to be attached to its copy.
    var encoding: String

    /// The delta of `delta`'s entry to `manifest`'s seed, applied to the store at `storePath`.
    ///
    /// - Throws: ``ReseedError/Code/invalidManifest`` (step ``ReseedError/Step/applyDelta``) for an entry
    ///   the manifest's reader refused or a manifest without a content hash; ``ReseedError/Code/database``
    ///   when the store's text encoding cannot be read.
    init(delta: ChannelManifest.Delta, manifest: ChannelManifest, storePath: String) throws(ReseedError) {
        let source = ChannelManifest.fileName
        guard let entry = delta.metadataOnly else {
            throw ReseedError(.invalidManifest, step: .applyDelta, path: source, message: "the delta from \(delta.fromVersion) carries no metadata values")
        }
        if let refusal = entry.refusal {
            throw ReseedError(.invalidManifest, step: .applyDelta, path: source, message: "the delta from \(delta.fromVersion) is refused: \(refusal)")
        }
        guard let toContentHash = manifest.contentHash else {
            throw ReseedError(.invalidManifest, step: .applyDelta, path: source, message: "the channel states no content hash for the delta's result")
        }
        fromContentHash = delta.fromContentHash
        self.toContentHash = toContentHash
        userVersion = manifest.userVersion
        applicationID = manifest.applicationID
        values = entry.values.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }.map { ($0.key, $0.value) }
        encoding = try during(.applyDelta, path: storePath) { () throws -> String in
            var readOnly = GRDB.Configuration()
            readOnly.readonly = true
            let store = try DatabaseQueue(path: storePath, configuration: readOnly)
            defer { try? store.close() }
            return try store.read { db in try String.fetchOne(db, sql: "PRAGMA main.encoding") } ?? ""
        }
        guard ["UTF-8", "UTF-16le", "UTF-16be"].contains(encoding) else {
            throw ReseedError(.database, step: .applyDelta, path: storePath, message: "the store's text encoding reads as \(JSONNode.quote(encoding)), which SQLite does not write")
        }
    }

    /// Writes the delta into a new file `name` of `directory` (never through a name someone
    /// prepared: removed, then created with `O_EXCL`). Not synced: a crash leaves it for the next
    /// update's clean-up, as a download.
    func write(_ name: String, in directory: Directory) throws(ReseedError) {
        let path = directory.path(name)
        try during(.applyDelta, path: path) {
            _ = try directory.remove(name)
            try directory.createExclusive(name).close()
            var configuration = GRDB.Configuration()
            configuration.label = "reseed.metadataDelta"
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            defer { try? queue.close() }
            typealias Names = SeedDelta.Names
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA main.encoding = '\(encoding)'")
                try db.execute(sql: "PRAGMA main.synchronous = OFF")
                try db.inTransaction {
                    try db.execute(sql: "CREATE TABLE main.\(Names.header) (key TEXT PRIMARY KEY, value)")
                    let header: [(String, any DatabaseValueConvertible)] = [
                        ("format", SeedDelta.Format.rows.rawValue), ("fromContentHash", fromContentHash), ("toContentHash", toContentHash),
                        ("userVersion", Int64(userVersion)), ("applicationID", Int64(applicationID)),
                    ]
                    for (key, value) in header {
                        try db.execute(sql: "INSERT INTO main.\(Names.header) (key, value) VALUES (?, ?)", arguments: [key, value])
                    }
                    try db.execute(sql: """
                        CREATE TABLE main.\(Names.tables) (idx INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, deleted INTEGER NOT NULL, updated INTEGER NOT NULL, inserted INTEGER NOT NULL)
                        """)
                    try db.execute(sql: "INSERT INTO main.\(Names.tables) VALUES (1, ?, 0, ?, 0)", arguments: [SeedMetadata.tableName, values.count])
                    let updated = Names.table(1, .updated)
                    try db.execute(sql: "CREATE TABLE main.\(updated) (\(Names.columns(of: .updated, keys: 1, values: 1).joined(separator: ", ")))")
                    for (key, value) in values {
                        try db.execute(sql: "INSERT INTO main.\(updated) VALUES (?, '1', ?)", arguments: [key, value])
                    }
                    return .commit
                }
            }
        }
    }
}
