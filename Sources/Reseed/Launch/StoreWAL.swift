import CReseedSystem
import Foundation
import GRDB
import ReseedSystem

/// The `-wal` an install puts beside a single-file store, so that the app's launches write nothing
/// into a store they only read, and a later delta keeps its incremental check.
///
/// A GRDB pool that opens a store whose `-wal` is missing or empty commits a transaction that creates
/// and drops a table (so that its readers and snapshots find a `-wal`), and the last connection's
/// close checkpoints that into the store file: its fingerprint changes at every launch, though no row
/// did. So the install readies its verified copy as an opened pool would leave it (``ready(_:in:)``):
/// in WAL mode, with one commit that changes nothing in the copy's `-wal`, which follows the copy
/// beside the store (``follow(_:to:in:)``). The launcher's pool then
/// finds a non-empty `-wal` and writes nothing, and each of its connections keeps the `-wal` at close
/// until it commits (``Launcher/Configuration/singleFileStorePool``). While the app only reads, the
/// store file and its `-wal` keep the fingerprint the install recorded (``fingerprint(store:wal:)``);
/// the first write changes the `-wal`, and its close checkpoints it into the file, as before.
///
/// The commit writes the page of the seed's metadata row `name` as it was (the value stored as a
/// blob, then as text again): the frame is a copy of a page of the file, never page 1, so the file
/// alone is the seed as installed, whole, and a file whose first page is damaged still fails to open.
enum StoreWAL {
    /// Switches the verified copy `temporary` to WAL mode and commits one write that changes nothing,
    /// whose frame stays in the copy's `-wal`; both made durable together (``Directory/syncFiles(_:)``:
    /// one `fsync` each, the copy's only one).
    ///
    /// Where SQLite cannot keep a `-wal` at close, the copy is left in WAL mode without one: the app's
    /// first opening then writes the store, as it always did.
    static func ready(_ temporary: String, in directory: Directory) throws(ReseedError) {
        let path = directory.path(temporary)
        try during(.open, path: path) {
            var configuration = GRDB.Configuration()
            configuration.label = "reseed.ready"
            configuration.prepareDatabase { db in
                _ = reseed_sqlite_keep_wal_on_close(UnsafeMutableRawPointer(db.sqliteConnection))
                // No -shm: a kill leaves no sidecar of the copy but its -wal. No fsync by SQLite: a kill
                // discards the copy, and both files are synced once below, before the swap.
                try db.execute(sql: "PRAGMA locking_mode = EXCLUSIVE; PRAGMA synchronous = OFF")
            }
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            try queue.writeWithoutTransaction { db in
                guard try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") == "wal" else {
                    throw ReseedError(.database, step: .open, path: path, message: "the copy did not switch to WAL mode")
                }
                // The same bytes under another type and back: SQLite skips a write that changes no byte.
                try db.inTransaction {
                    for type in ["BLOB", "TEXT"] {
                        try db.execute(sql: "UPDATE \(SeedMetadata.tableName) SET value = CAST(value AS \(type)) WHERE key = 'name'")
                    }
                    return .commit
                }
            }
            try queue.close()
            // The copy's first fsync too (the copy and its checks wrote it unsynced): one for each file.
            let wal = try directory.status(StoreLayout.wal(of: temporary)) != nil ? [StoreLayout.wal(of: temporary)] : []
            try directory.syncFiles([temporary] + wal)
        }
    }

    /// Renames the `-wal` of the copy `temporary` (see ``ready(_:in:)``), which the swap just renamed
    /// to `storeName`, beside it, unless a `-wal` is there already (a connection that opened the new
    /// store since: its own `-wal` stays, and the copy's is removed with the copy's other sidecars).
    ///
    /// After the store's rename is durable: a crash can leave the new store without this `-wal` (its
    /// first opening then writes it, as it always did), never the old store with it. Its own rename
    /// is made durable by the preferences' record that follows, in the same directory or not (then
    /// losing it costs a later delta its incremental check only). Best effort, for the same reason.
    static func follow(_ temporary: String, to storeName: String, in directory: Directory) {
        guard (try? directory.status(StoreLayout.wal(of: temporary))) != nil else { return }
        _ = try? directory.renameNoReplace(StoreLayout.wal(of: temporary), to: StoreLayout.wal(of: storeName))
    }

    /// The fingerprint of a store file and of its `-wal` (nil: there is none), as one text
    /// (`<store's>::inode:size:modified`, or the store's alone): equal
    /// fingerprints say neither was written, renamed over or truncated in between. The `-wal`'s
    /// change time is left out: SQLite running as root gives the `-wal` its database's owner at every
    /// opening (`fchown`), which moves it.
    static func fingerprint(store: FileStatus, wal: FileStatus?) -> String {
        guard let wal else { return store.fingerprint }
        return "\(store.fingerprint)::\(wal.inode):\(wal.size):\(wal.modified)"
    }

    /// The fingerprint of the store file `storeName` in `directory` and of its `-wal`, as an install
    /// just left them; nil when the store file cannot be read.
    ///
    /// Taken once the clock file systems stamp times with has passed both files' modification
    /// times, so that no later write can leave it as it is. Waiting here, after the swap's directory
    /// fsync (which takes about a tick), rather than after the copy's last write costs nothing most
    /// times; a write between the swap and this measure would be in it either way.
    static func fingerprint(of storeName: String, in directory: Directory) -> String? {
        let written = [storeName, StoreLayout.wal(of: storeName)].compactMap { try? directory.status($0) }
        // At most 20 ms: a clock set back stamps the next write with another time anyway.
        for _ in 0..<20 where !written.allSatisfy(\.isBehindFileClock) {
            Thread.sleep(forTimeInterval: 0.001)
        }
        do {
            guard let store = try directory.status(storeName) else { return nil }
            return fingerprint(store: store, wal: try directory.status(StoreLayout.wal(of: storeName)))
        } catch {
            return nil
        }
    }
}

extension Launcher.Configuration {
    /// ``pool`` for a single-file store: each connection leaves the store's `-wal` as it is when it
    /// closes until it commits (see ``StoreWAL``), and then checkpoints it at close as SQLite does by
    /// default. The `wal_autocheckpoint` the app's configuration set stays in force.
    var singleFileStorePool: GRDB.Configuration {
        var pool = pool
        pool.prepareDatabase { db in
            let autocheckpoint = try Int32.fetchOne(db, sql: "PRAGMA wal_autocheckpoint") ?? 1000
            // Best effort: where it is not kept, the close checkpoints as by default.
            guard reseed_sqlite_keep_wal_on_close(UnsafeMutableRawPointer(db.sqliteConnection)) == 0 else { return }
            reseed_sqlite_checkpoint_on_close_once_written(UnsafeMutableRawPointer(db.sqliteConnection), autocheckpoint)
        }
        return pool
    }
}
