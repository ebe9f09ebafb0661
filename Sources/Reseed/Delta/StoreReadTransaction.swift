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

    deinit {
        // Closing ends the read transaction.
        sqlite3_close_v2(connection)
    }
}
