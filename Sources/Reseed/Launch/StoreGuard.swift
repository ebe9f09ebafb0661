import Foundation
import CReseedSystem
import GRDBSQLite
import ReseedSystem

/// Proves that no other connection, in this process or another, has a store open,
/// and keeps it that way until the store file has been replaced.
///
/// SQLite's own locks tell. In exclusive locking mode, `BEGIN EXCLUSIVE` takes an
/// exclusive lock on the database file itself: in WAL mode every open connection
/// holds a shared lock on that file for as long as it is open, so this fails while
/// anyone else has the store open, even idle; in rollback mode it fails while anyone
/// reads. Once it succeeds it shuts every newcomer out.
///
/// Two ways, for two uses:
/// - ``Purpose/replace``: the store is about to be replaced, its content does not
///   matter. The WAL is left as it is (the caller removes the sidecars), and the
///   connection is set to never delete the WAL file by name when it closes
///   (`SQLITE_FCNTL_PERSIST_WAL`; in exclusive mode it uses no `-shm` either) nor
///   checkpoint it into the file (`SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE`): it closes after
///   the new store has been renamed in, whose sidecars it must not touch, or after a
///   failure, which leaves the old store's file and `-wal` as they were.
/// - ``Purpose/move``: the store keeps its content at another path (a legacy store).
///   It is switched out of WAL first (`PRAGMA journal_mode=DELETE`, which checkpoints
///   the WAL into the file and fails while anyone else has it open): the file alone
///   then holds every committed row.
///
/// A rollback-mode connection that is idle holds no lock and cannot be seen;
/// stores opened by Reseed (a `DatabasePool`) are always in WAL mode.
final class StoreGuard {
    private var connection: OpaquePointer?

    private init(connection: OpaquePointer) {
        self.connection = connection
    }

    /// What the store is guarded for.
    enum Purpose { case replace, move }

    /// What trying to guard a store found.
    enum Result {
        /// No one else has the store open; hold the guard until the replace is done.
        case guarded(StoreGuard)
        /// The file is not a usable SQLite database: nobody can have it open as one.
        case notADatabase(String)
        /// Someone else kept it open until the deadline.
        case busy(String)
    }

    static func acquire(path: String, for purpose: Purpose, deadline: ContinuousClock.Instant) throws(ReseedError) -> Result {
        var connection = try open(path, for: purpose)
        var lastBusy = "database is locked"
        var seenInvalid = false
        let found = try Polling.until(deadline, every: .milliseconds(10)) { () throws(ReseedError) -> Result? in
            while true {
                switch purpose == .replace ? attemptExclusive(connection) : attempt(connection) {
                case .success:
                    return .guarded(StoreGuard(connection: connection))
                case .invalid(let message):
                    sqlite3_close_v2(connection)
                    // SQLite also says "malformed" when a read fails (EIO): believe it when a new connection, at once, says it again.
                    if seenInvalid { return .notADatabase(message) }
                    seenInvalid = true
                    connection = try open(path, for: purpose)
                case .busy(let message):
                    lastBusy = message
                    return nil
                case .failed(let message):
                    sqlite3_close_v2(connection)
                    throw ReseedError(.database, step: .checkStoreNotInUse, path: path,
                                      message: "cannot check that the old store is not in use: \(message); changed nothing")
                }
            }
        }
        if let found { return found }
        sqlite3_close_v2(connection)
        return .busy(lastBusy)
    }

    private static func open(_ path: String, for purpose: Purpose) throws(ReseedError) -> OpaquePointer {
        var handle: OpaquePointer?
        let openCode = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil)
        guard openCode == SQLITE_OK, let connection = handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close_v2(handle)
            throw ReseedError(.database, step: .checkStoreNotInUse, path: path,
                              message: "cannot open the old store to check it is not in use: \(message) (SQLite \(openCode))")
        }
        if purpose == .replace {
            // Must precede any access: exclusive mode from the start means no -shm is used.
            var persist: Int32 = 1
            _ = sqlite3_file_control(connection, "main", SQLITE_FCNTL_PERSIST_WAL, &persist)
            // Nor checkpoint into the old file when it closes: an install that fails before the swap
            // leaves the store's file and its -wal as they were (see StoreWAL).
            _ = reseed_sqlite_keep_wal_on_close(UnsafeMutableRawPointer(connection))
            var ignored = ""
            _ = query(connection, "PRAGMA locking_mode=EXCLUSIVE", &ignored)
        }
        return connection
    }

    private enum Attempt { case success, invalid(String), busy(String), failed(String) }

    /// ``Purpose/replace``: the exclusive lock, nothing else.
    private static func attemptExclusive(_ connection: OpaquePointer) -> Attempt {
        var ignored = ""
        let code = query(connection, "BEGIN EXCLUSIVE", &ignored)
        if code == SQLITE_OK {
            // BEGIN takes the locks; a read proves the file is a database SQLite can use.
            let check = query(connection, "SELECT count(*) FROM sqlite_master", &ignored)
            if check == SQLITE_OK { return .success }
            _ = query(connection, "ROLLBACK", &ignored)
            return outcome(check, connection)
        }
        return outcome(code, connection)
    }

    private static func outcome(_ code: Int32, _ connection: OpaquePointer) -> Attempt {
        let message = String(cString: sqlite3_errmsg(connection))
        switch code & 0xff {
        case SQLITE_BUSY, SQLITE_LOCKED: return .busy(message)
        case SQLITE_NOTADB, SQLITE_CORRUPT: return .invalid(message)
        // An I/O error or a full disk proves neither that the file is not a database nor
        // that no one has it open: replacing it then could cut another process's store
        // from its WAL, and the copy kept aside would lack that WAL.
        default: return .failed("\(message) (SQLite \(code))")
        }
    }

    private static func attempt(_ connection: OpaquePointer) -> Attempt {
        var mode = ""
        var code = query(connection, "PRAGMA journal_mode", &mode)
        if code == SQLITE_OK, mode.lowercased() == "wal" {
            code = query(connection, "PRAGMA journal_mode=DELETE", &mode)
            if code == SQLITE_OK, mode.lowercased() == "wal" { return .busy("the store is open in WAL mode elsewhere") }
        }
        if code == SQLITE_OK {
            code = query(connection, "PRAGMA locking_mode=EXCLUSIVE", &mode)
        }
        if code == SQLITE_OK {
            code = query(connection, "BEGIN EXCLUSIVE", &mode)
            if code == SQLITE_OK { return .success }
        }
        let result = outcome(code, connection)
        if case .busy = result { _ = query(connection, "PRAGMA locking_mode=NORMAL", &mode) }
        return result
    }

    /// Runs one statement; `result` receives the first column of its first row, if any.
    private static func query(_ connection: OpaquePointer, _ sql: String, _ result: inout String) -> Int32 {
        var statement: OpaquePointer?
        var code = sqlite3_prepare_v2(connection, sql, -1, &statement, nil)
        guard code == SQLITE_OK else { return code }
        defer { sqlite3_finalize(statement) }
        code = sqlite3_step(statement)
        if code == SQLITE_ROW {
            if let text = sqlite3_column_text(statement, 0) { result = String(cString: text) }
            return SQLITE_OK
        }
        return code == SQLITE_DONE ? SQLITE_OK : code
    }

    /// Ends the guard: the old file (by now replaced) is closed.
    func release() {
        guard let connection else { return }
        var ignored = ""
        _ = Self.query(connection, "ROLLBACK", &ignored)
        sqlite3_close_v2(connection)
        self.connection = nil
    }

    deinit { release() }
}
