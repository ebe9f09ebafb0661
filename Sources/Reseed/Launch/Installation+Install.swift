import Foundation
import GRDB
import Logging
import ReseedSystem
import SystemPackage

extension Installation {
    /// Step 3: the temp file holds a verified copy of the seed, or is gone and this throws. It is
    /// made durable by ``ready(copy:)``, once, after the checks.
    ///
    /// ``verification`` says how thoroughly; `progress` is called with (bytes copied, total bytes).
    /// A compressed seed (``Seed/isCompressed``) is decompressed into the temp file, bounded by
    /// the manifest's size, and its SHA-256 always checked, whatever ``verification`` says: the
    /// decompression reads every byte anyway, and the manifest describes the database, not the
    /// gzip file. A stream that does not decompress fails as ``ReseedError/Code/verificationFailed``
    /// naming the seed file, and the store stays as it was.
    func copyAndVerify(into temporary: String) throws(ReseedError) {
        guard let seed = source.seed else {
            throw ReseedError(.invalidArgument, step: .copy, path: source.path, message: "a delta is applied, not copied")
        }
        let seedPath = seed.fileURL.path
        let input = try seed.openFile(at: .copy)
        let total = manifest.size
        let report = progress.map { report in { @Sendable (done: Int64) in report(InstallProgress(step: .install, completed: done, total: total)) } }
        try during(.copy, path: directory.path(temporary)) {
            try directory.writeTemporary(temporary, synced: false, write: { destination in
                // At most one byte more than the manifest says: a longer source (a file that grows, a huge
                // sparse file, a gzip bomb) is refused after size + 1 bytes, never copied until the disk fills.
                let copied = try during(.copy, path: seedPath) {
                    try directory.fileSystem.performCoding(.copy, directory.path(temporary)) { () throws(CodecFailure) in
                        try seed.copyDatabase(from: input, to: destination, hashing: checksSHA256, progress: report)
                    }
                }
                // Before any fsync: the checks read the copy from the page cache, and a copy that fails them is removed unsynced.
                try verify(destination, temporary: temporary, copied: copied)
            }, check: { _ in
                try verifyEmbeddedMetadata(temporary)
            })
        }
    }

    /// What the copy stage will write (see ``DiskSpace``): the seed's temp copy, or for a delta the
    /// copy of the installed store it is applied to and what the apply adds, sized by the decompressed delta.
    func diskSpace() throws(ReseedError) -> DiskSpace {
        let seed = "\(manifest.name) \(manifest.version)"
        switch source {
        case .bundled, .downloaded, .compressed:
            return DiskSpace(purpose: "install \(seed)", needed: DiskSpace.install(seedSize: manifest.size))
        case .delta(let deltaPath, _):
            let deltaSize = try during(.checkSpace, path: deltaPath) { try FileSystem.openRegularFile(deltaPath).status().size }
            let installedSize = try DiskSpace.installedSize(of: storeName, in: directory)
            return DiskSpace(purpose: "install \(seed) from a delta", needed: DiskSpace.deltaInstall(installedSize: installedSize, deltaSize: deltaSize))
        }
    }

    /// Whether the copy's SHA-256 is checked: when ``verification`` asks, and always for a compressed seed.
    private var checksSHA256: Bool {
        if case .compressed = source { return true }
        return verification == .checksum
    }

    /// The seed is refused: `message` says why, with SQLite's words or those of the error it `causedBy`;
    /// the error names the source's file (the seed, or the delta).
    func verificationFailure(_ message: String, causedBy cause: (any Error)? = nil) -> ReseedError {
        if let cause = cause as? DatabaseError {
            return ReseedError(.verificationFailed, step: .verify, path: source.path, databaseError: cause, message: message)
        }
        let detail = cause.map { ($0 as? ReseedError)?.message ?? plainDescription(of: $0) ?? systemErrno(of: $0)?.phrase ?? "it failed" }
            .map { ": " + $0 } ?? ""
        return ReseedError(.verificationFailed, step: .verify, path: source.path, message: message + detail)
    }

    /// The O(1) checks of ``Verification/size``, and the SHA-256 of ``Verification/checksum``.
    private func verify(_ file: borrowing OwnedDescriptor, temporary: String, copied: FileCopier.Result) throws(ReseedError) {
        let path = directory.path(temporary)
        let size = try during(.verify, path: path) {
            try directory.fileSystem.reading("fstat", path) { () throws(Errno) in try file.status().size }
        }
        guard copied.bytes <= manifest.size else {
            throw verificationFailure("seed is longer than the \(manifest.size) bytes the manifest says; the copy stopped there")
        }
        guard size == manifest.size, copied.bytes == manifest.size else {
            throw verificationFailure("seed is \(size) bytes, the manifest says \(manifest.size)")
        }
        let bytes = try during(.verify, path: path) {
            try directory.fileSystem.reading("read", path) { () throws(Errno) in try file.read(count: StoreHeader.size, at: 0) }
        }
        guard let header = StoreHeader(bytes) else { throw verificationFailure("seed does not start with a SQLite header") }
        guard header.isRollbackJournal else { throw verificationFailure("seed is in WAL mode; a seed must use a rollback journal") }
        guard header.pageSize == manifest.pageSize else {
            throw verificationFailure("seed page size is \(header.pageSize), the manifest says \(manifest.pageSize)")
        }
        try verifyHeaderValues(header, of: "seed")
        if checksSHA256 {
            guard let digest = copied.sha256 else { throw verificationFailure("no checksum was computed") }
            guard digest == manifest.sha256 else {
                throw verificationFailure("seed SHA-256 is \(digest), the manifest says \(manifest.sha256)")
            }
        }
    }

    /// `user_version` and `application_id` in `header` (of `what`: "seed") are the manifest's.
    func verifyHeaderValues(_ header: StoreHeader, of what: String) throws(ReseedError) {
        guard header.userVersion == manifest.userVersion, header.applicationID == manifest.applicationID else {
            throw verificationFailure(
                "\(what) user_version/application_id are \(header.userVersion)/\(header.applicationID), the manifest says \(manifest.userVersion)/\(manifest.applicationID)")
        }
    }

    /// The copy says it is the manifest's seed (name and version in its metadata table), and takes a write.
    func verifyEmbeddedMetadata(_ temporary: String) throws(ReseedError) {
        let metadata: SeedMetadata?
        do {
            metadata = try SeedMetadata.read(path: directory.path(temporary))
        } catch {
            throw verificationFailure("seed cannot be read as a database", causedBy: error)
        }
        try verify(metadata)
        try verifyWritable(temporary)
    }

    /// ``verifyEmbeddedMetadata(_:)`` through `db`, a connection to the copy that is open already
    /// (a delta's apply, once committed), outside any transaction: the same reads and the same write.
    func verifyEmbeddedMetadata(in db: Database) throws(ReseedError) {
        let metadata: SeedMetadata?
        do {
            metadata = try SeedMetadata.read(db)
        } catch {
            throw verificationFailure("seed cannot be read as a database", causedBy: error)
        }
        try verify(metadata)
        do {
            try Self.probeWrite(db)
        } catch {
            throw verificationFailure("seed cannot be written as a database", causedBy: error)
        }
    }

    private func verify(_ metadata: SeedMetadata?) throws(ReseedError) {
        guard let metadata else { throw verificationFailure("seed has no \(SeedMetadata.tableName) table") }
        guard metadata.name == manifest.name, metadata.version == manifest.version else {
            throw verificationFailure(
                "seed says it is '\(metadata.name)' \(metadata.version), the manifest says '\(manifest.name)' \(manifest.version)")
        }
    }

    /// A write rolled back on the copy, which leaves its bytes as they are.
    ///
    /// SQLite checks the free list and the auto-vacuum pointers only when it allocates a page,
    /// and opening the store for use does (GRDB creates and drops a table), so a seed damaged
    /// there must fail now, before it replaces the store, not after. The journal is kept in
    /// memory: a `-journal` file that an I/O error left behind would outlive the launch.
    private func verifyWritable(_ temporary: String) throws(ReseedError) {
        do {
            var configuration = GRDB.Configuration()
            configuration.label = "reseed.verify"
            let queue = try DatabaseQueue(path: directory.path(temporary), configuration: configuration)
            defer { try? queue.close() }
            try queue.writeWithoutTransaction { db in try Self.probeWrite(db) }
        } catch {
            throw verificationFailure("seed cannot be written as a database", causedBy: error)
        }
    }

    /// The write of ``verifyWritable(_:)``, rolled back, through `db`.
    private static func probeWrite(_ db: Database) throws {
        try db.execute(sql: "PRAGMA main.journal_mode = MEMORY")
        try db.inTransaction(.immediate) {
            try db.execute(sql: "CREATE TABLE main.reseed_write_probe (id INTEGER PRIMARY KEY)")
            return .rollback
        }
    }

    /// Readies the verified copy `temporary` for the swap and makes it durable: a single-file store's
    /// is switched to WAL with the `-wal` the app's launches then keep, both synced together (see
    /// ``StoreWAL``); a seed beside a user store is only ever attached read-only, keeps its rollback
    /// journal, and is synced alone. The copy's only fsync: the copy and the checks wrote it unsynced.
    func ready(copy temporary: String) throws(ReseedError) {
        guard configuration.userStore == nil else {
            try during(source.seed == nil ? .applyDelta : .copy, path: directory.path(temporary)) { try directory.syncFile(temporary) }
            return
        }
        try StoreWAL.ready(temporary, in: directory)
    }

    /// Removes the copy `temporary` and the sidecars SQLite made for it. Best effort: what stays is a
    /// temp file the next install removes.
    func discard(copy temporary: String) {
        for name in [temporary] + StoreLayout.sidecars(of: temporary) { _ = try? directory.remove(name) }
    }

    /// Step 4: no one has the old store open; sidecars gone; rename; directory fsync; the copy's `-wal`
    /// (see ``ready(copy:)``) beside the store.
    ///
    /// A store that is not a usable database, or any store when `keepAside` (it failed to open),
    /// first gets a second name so replacing it loses nothing.
    ///
    /// `onKeptAside` hears the second name before the rename (what it records survives a kill there).
    /// With `retire`, a store not kept aside gets a temp second name instead, for the caller to remove
    /// later (freeing a large file's blocks takes time; a crash leaves the name to the next clean-up).
    ///
    /// - Returns: the second name the old store was kept aside at, and its temp name when retired.
    func swap(
        in temporary: String, storeState: StoreState, keepAside: Bool, retire: Bool = false, onKeptAside: ((URL) throws(ReseedError) -> Void)? = nil
    ) throws(ReseedError) -> (keptAside: URL?, retired: String?) {
        var storeGuard: StoreGuard?
        defer { storeGuard?.release() }
        var invalid = storeState == .notSQLite
        if storeState == .sqlite {
            let deadline = ContinuousClock.now.advanced(by: configuration.busyTimeout)
            // A store kept aside keeps its content at its second name: switched out of WAL first, so the
            // file alone holds every committed row (a `-wal` beside the kept file could go stale).
            switch try StoreGuard.acquire(path: storePath, for: keepAside ? .move : .replace, deadline: deadline) {
            case .guarded(let held):
                storeGuard = held
            case .notADatabase(let why):
                logger.warning("old store is not a usable database", metadata: ["store": "\(storePath)", "reason": "\(why)"])
                invalid = true
            case .busy(let why):
                throw ReseedError(.storeBusy, step: .checkStoreNotInUse, path: storePath,
                                  message: "the store is open in another connection or process (\(why)); waited \(configuration.busyTimeout), changed nothing")
            }
        }
        var keptAside: URL?
        if invalid || keepAside, try during(.inspectStore, path: storePath, { try directory.status(storeName) }) != nil {
            let kept = try keepStoreAside()
            try onKeptAside?(kept)
            keptAside = kept
        }
        var retired: String?
        if retire, keptAside == nil, storeState == .sqlite {
            let name = StoreLayout.temporaryName(of: storeName)
            // Best effort: without it the rename frees the old blocks itself.
            if (try? directory.link(storeName, to: name)) != nil { retired = name }
        }
        try during(.removeSidecars, path: storePath) {
            for suffix in StoreLayout.sidecarSuffixes {
                try directory.remove(storeName + suffix)
            }
        }
        // The old store's last name goes with the rename: its blocks are freed off this path (see
        // ReplacedFile), closed after the guard, whose locks a close of another descriptor of the file would drop.
        // A failed rename leaves the old file the store: it is closed at once, before anything opens it again.
        let replaced = keptAside == nil && retired == nil ? directory.holdForRelease(storeName) : nil
        var renamed = false
        defer {
            storeGuard?.release()
            if renamed { replaced?.release() } else { replaced?.closeNow() }
        }
        try during(.replace, path: storePath) {
            try directory.rename(temporary, to: storeName)
            renamed = true
            try directory.sync()
        }
        StoreWAL.follow(temporary, to: storeName, in: directory)
        // Sidecars SQLite made for the copy under its temp name (switching a copy out of or into WAL
        // creates them) and could not remove itself: nothing reads them now, and an up-to-date
        // launch would never look for them. Best effort.
        for sidecar in StoreLayout.sidecars(of: temporary) { _ = try? directory.remove(sidecar) }
        return (keptAside, retired)
    }

    /// Gives an unusable store a second name (a hard link) so replacing it loses nothing.
    ///
    /// A store that could not be switched out of WAL (not a usable database) has its `-wal` given the
    /// second name's `-wal` too (rows committed since the last checkpoint are there). A second name the store already has (an
    /// install killed between this link and its rename) is taken again: the same file is never kept aside twice.
    private func keepStoreAside() throws(ReseedError) -> URL {
        let layout = StoreLayout(storeFileName: storeName)
        let name = try during(.replace, path: storePath) { () throws -> String in
            var existing: String?
            if let store = try directory.status(storeName), store.linkCount > 1 {
                existing = try directory.names().first { other in
                    guard other.hasPrefix(layout.asidePrefix), let kept = try directory.status(other) else { return false }
                    return kept.device == store.device && kept.inode == store.inode
                }
            }
            let aside = existing ?? layout.asideName()
            if existing == nil { try directory.link(storeName, to: aside) }
            if try directory.status(StoreLayout.wal(of: storeName))?.kind == .regular, try directory.status(StoreLayout.wal(of: aside)) == nil {
                try directory.link(StoreLayout.wal(of: storeName), to: StoreLayout.wal(of: aside))
            }
            return aside
        }
        logger.warning("kept the unusable store aside", metadata: ["at": "\(directory.path(name))"])
        return URL(fileURLWithPath: directory.path(name), isDirectory: false)
    }
}
