import Foundation
import GRDB
import ReseedSystem

extension ChannelUpdater {
    /// A seed built on the device from the installed one and a channel's delta, ready for the install.
    struct DeltaResult: Sendable {
        /// The seed: the applied copy in the data directory, under a manifest of its own bytes.
        var seed: Seed
        /// Removes the delta's download and the files made from it.
        var removeFiles: @Sendable () -> Void
    }

    /// The delta of `manifest` that starts from `installed`, the installed seed's content hash as
    /// recorded at its install (never guessed from its version), when the channel also states the
    /// new seed's content hash.
    func usableDelta(_ manifest: ChannelManifest, from installed: String?) -> ChannelManifest.Delta? {
        guard let installed, manifest.contentHash != nil else { return nil }
        return manifest.deltas.first { $0.fromContentHash == installed }
    }

    /// Downloads `delta`, applies it to a copy of the installed seed in the data directory, in one
    /// transaction, and checks the copy's content hash against the signed manifest's.
    ///
    /// The files it makes are named like partial downloads (`.<name>.sqlite.reseed-download-…`):
    /// a crash leaves them for the next update to remove, never for an install's clean-up, which
    /// could run in another process while this one works.
    ///
    /// `received` counts the delta's bytes this call downloaded, whether or not it then succeeds.
    ///
    /// - Throws: ``ReseedError``: any failure here leaves the store as it was, and the caller
    ///   falls back to the full seed.
    func applyDelta(_ delta: ChannelManifest.Delta, of manifest: ChannelManifest, in context: Context, received: inout Int64)
        async throws(ReseedError) -> DeltaResult
    {
        guard let expected = manifest.contentHash else {
            throw ReseedError(.invalidManifest, step: .applyDelta, url: channelURL, message: "the channel states no content hash for the delta's result")
        }
        let directory = context.directory
        let download = SeedDownload(
            store: manifest.name, size: delta.file.size, sha256: delta.file.sha256, url: channelURL.appendingPathComponent(delta.file.file),
            directory: directory, transfer: HTTPTransfer(timeout: configuration.timeout), progress: configuration.progress,
            keeping: manifest.offeredSHA256)
        let downloaded = try await download.run()
        received += downloaded.received
        let stem = SeedDownload.prefix(forStore: manifest.name) + "delta-" + String(delta.file.sha256.prefix(16))
        let deltaName = stem + ".sqlite", appliedName = stem + ".applied"
        let removeFiles: @Sendable () -> Void = {
            download.removeFiles()
            for name in [deltaName, appliedName] {
                for file in [name] + StoreLayout.sidecars(of: name) { _ = try? directory.remove(file) }
            }
        }
        do {
            let seed = try await offload("reseed-delta") { () throws(ReseedError) -> Seed in
                try self.decompress(downloaded.file, encoding: delta.file.encoding, into: deltaName, limit: manifest.size, in: directory)
                try self.copyInstalledSeed(context.storeURL.lastPathComponent, into: appliedName, sizeLimit: manifest.size, in: directory)
                _ = try SeedDelta.apply(deltaPath: directory.path(deltaName), to: directory.path(appliedName), expectedContentHash: expected)
                return try self.seed(appliedName, of: manifest, in: directory)
            }
            return DeltaResult(seed: seed, removeFiles: removeFiles)
        } catch {
            removeFiles()
            throw error
        }
    }

    /// Decompresses the downloaded delta into a new file `name` (never through a name someone
    /// prepared: removed, then created with `O_EXCL`), at most `limit` bytes, through the file-system
    /// seam as the install's own decompression.
    private func decompress(_ compressed: String, encoding: String, into name: String, limit: Int64, in directory: Directory) throws(ReseedError) {
        let path = directory.path(name)
        guard let codec = Codecs.named(encoding) else {
            // The manifest's reader skips deltas in an encoding it does not know: only a bug gets here.
            throw ReseedError(.invalidManifest, step: .applyDelta, path: directory.path(compressed), message: "the delta is encoded as '\(encoding)', which this Reseed does not read")
        }
        try during(.applyDelta, path: path) {
            _ = try directory.remove(name)
            let output = try directory.createExclusive(name)
            let input = try FileSystem.openRegularFile(directory.path(compressed))
            _ = try directory.fileSystem.performCoding(.copy, path) { () throws(CodecFailure) in
                try codec.decompress(from: input, to: output, limit: limit, hashing: false, progress: nil)
            }
        }
    }

    /// Copies the installed seed into a new file `name` with SQLite's backup, which reads a
    /// consistent snapshot whatever the store's journal mode (a single-file store runs in WAL),
    /// then gives the copy a rollback journal, as every seed has.
    ///
    /// The store `storeName` in `directory` is read only when it is a regular file (`lstat`): SQLite
    /// opens it by its path, and would wait forever on a FIFO, holding the update lock.
    private func copyInstalledSeed(_ storeName: String, into name: String, sizeLimit: Int64, in directory: Directory) throws(ReseedError) {
        let storePath = directory.path(storeName)
        let status = try during(.applyDelta, path: storePath) { try directory.status(storeName) }
        let kind = status?.kind
        guard kind == .regular else {
            throw ReseedError(.deltaMismatch, step: .applyDelta, path: storePath, message:
                "the installed seed is \(kind.map { $0.nonRegularName ?? "" } ?? "missing")\(kind == nil ? "" : ", not a regular file"); no delta starts from it")
        }
        // A single-file store the app filled far beyond the seed cannot give the seed's content
        // hash: not worth copying whole to find out.
        if let size = status?.size, size > 2 * sizeLimit + (64 << 20) {
            throw ReseedError(.deltaMismatch, step: .applyDelta, path: storePath, message:
                "the store is \(size) bytes, far more than the \(sizeLimit)-byte seed: the app has written to it; no delta starts from it")
        }
        let path = directory.path(name)
        try during(.applyDelta, path: path) {
            _ = try directory.remove(name)
            _ = try directory.createExclusive(name)
            var readOnly = GRDB.Configuration()
            readOnly.readonly = true
            let source = try DatabaseQueue(path: storePath, configuration: readOnly)
            // No fsync of a copy a crash would discard anyway: the install copies and syncs the result.
            var unsynced = GRDB.Configuration()
            unsynced.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = OFF") }
            let copy = try DatabaseQueue(path: path, configuration: unsynced)
            try source.backup(to: copy)
            try copy.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = DELETE") }
            try source.close()
            try copy.close()
        }
    }

    /// The seed manifest of the applied copy: the channel's name, version and content hash, with
    /// the copy's own size, SHA-256 and header values (its page layout is the installed seed's, not
    /// the published file's). The install then checks the copy against these, as any seed's.
    private func seed(_ name: String, of manifest: ChannelManifest, in directory: Directory) throws(ReseedError) -> Seed {
        let path = directory.path(name)
        let facts = try during(.applyDelta, path: path) { try FileFacts(path: path) }
        guard let header = facts.header else {
            throw ReseedError(.verificationFailed, step: .applyDelta, path: path, message: "the delta's result does not start with a SQLite header")
        }
        var seedManifest = manifest.seedManifest(file: name)
        seedManifest.facts.size = facts.size
        seedManifest.facts.sha256 = facts.sha256
        seedManifest.facts.pageSize = header.pageSize
        seedManifest.facts.userVersion = header.userVersion
        seedManifest.facts.applicationID = header.applicationID
        return Seed(manifestURL: directory.url.appendingPathComponent(ChannelManifest.fileName, isDirectory: false), manifest: seedManifest)
    }
}

extension ChannelManifest {
    /// The SHA-256 of every file the manifest offers: the seed, its compressed form, the deltas.
    var offeredSHA256: Set<String> {
        Set([facts.sha256] + (compressed.map { [$0.sha256] } ?? []) + deltas.map(\.file.sha256))
    }
}

extension ReseedError.Step {
    /// True for the steps of trying a delta (its download and checks, applying it, the install's
    /// checks of its result): a failure there makes the update download the full seed instead.
    var fallsBackToFullSeed: Bool {
        switch self {
        case .download, .verify, .applyDelta, .cleanUp: true
        default: false
        }
    }
}
