import GRDB
import GRDBSQLite

/// A read transaction on a store, opened read-only with SQLite's own API, that reads only the
/// database header: what a copy of the store made inside it needs (see
/// ``Installation/applyDelta(_:into:)``), without the schema.
///
/// GRDB checks a file it opens by reading `sqlite_schema`, which parses every `CREATE` statement:
/// milliseconds for a seed with large triggers (PROJ's `proj.db` has 180 KB of them), and the copy
/// reads no table. `PRAGMA schema_version` takes the same lock as any read (SHARED in rollback
/// mode, a snapshot in WAL mode, recovering the `-wal` as any reader would) and reads page 1 only.
/// The transaction ends when the value goes.
struct StoreReadTransaction: ~Copyable {
    private let connection: OpaquePointer

    /// Opens the store at `path` and begins reading it.
    ///
    /// - Throws: `DatabaseError` when SQLite cannot open it or read its header (not a database, busy).
    init(path: String) throws(DatabaseError) {
        var handle: OpaquePointer?
        let opened = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil)
        guard opened == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) }
            sqlite3_close_v2(handle)
            throw DatabaseError(resultCode: ResultCode(rawValue: opened), message: message)
        }
        // A writer's commit in a rollback journal, or a WAL's recovery, holds the read off for a moment.
        sqlite3_busy_timeout(handle, 2_000)
        let read = sqlite3_exec(handle, "BEGIN DEFERRED; PRAGMA main.schema_version", nil, nil, nil)
        guard read == SQLITE_OK else {
            let message = String(cString: sqlite3_errmsg(handle))
            sqlite3_close_v2(handle)
            throw DatabaseError(resultCode: ResultCode(rawValue: read), message: message)
        }
        connection = handle
    }

    /// Copies the database as this transaction reads it into the new, empty file at `path`, page by
    /// page through SQLite's backup API (not synced: the install that takes the copy syncs it).
    ///
    /// For a store this process has open (``OpenStores``): SQLite reads it through its own
    /// descriptors, whose closing it defers while the process holds locks on the file, where a
    /// descriptor of ours, once closed, would drop every lock the process holds on it, the app's
    /// pool's included. The copy is the store with its `-wal` folded in: no `-wal` goes with it.
    ///
    /// - Throws: `DatabaseError` when SQLite cannot open the copy or copy a page.
    func backup(into path: String) throws(DatabaseError) {
        var handle: OpaquePointer?
        let opened = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil)
        defer { sqlite3_close_v2(handle) }
        guard opened == SQLITE_OK, let destination = handle else {
            throw DatabaseError(resultCode: ResultCode(rawValue: opened), message: handle.map { String(cString: sqlite3_errmsg($0)) })
        }
        // A private copy: no journal, no fsync.
        let prepared = sqlite3_exec(destination, "PRAGMA main.journal_mode = OFF; PRAGMA main.synchronous = OFF", nil, nil, nil)
        guard prepared == SQLITE_OK else {
            throw DatabaseError(resultCode: ResultCode(rawValue: prepared), message: String(cString: sqlite3_errmsg(destination)))
        }
        guard let backup = sqlite3_backup_init(destination, "main", connection, "main") else {
            throw DatabaseError(resultCode: ResultCode(rawValue: sqlite3_errcode(destination)), message: String(cString: sqlite3_errmsg(destination)))
        }
        let stepped = sqlite3_backup_step(backup, -1)
        let finished = sqlite3_backup_finish(backup)
        guard stepped == SQLITE_DONE, finished == SQLITE_OK else {
            let code = stepped == SQLITE_DONE ? finished : stepped
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(destination)))
        }
    }

    deinit {
        // Closing ends the read transaction.
        sqlite3_close_v2(connection)
    }
}
