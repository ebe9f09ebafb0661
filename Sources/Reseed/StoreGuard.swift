import Foundation
import GRDBSQLite

/// Proves that no other connection, in this process or another, has a store open,
/// and keeps it that way until the store file has been replaced.
///
/// SQLite's own locks tell: a connection in WAL mode holds a shared lock on the
/// database file for as long as it is open, so switching the store out of WAL
/// (`PRAGMA journal_mode=DELETE`) fails while anyone else has it open; then
/// `BEGIN EXCLUSIVE` in exclusive locking mode fails while any rollback-mode
/// connection reads, and once it succeeds shuts every newcomer out. The switch
/// also checkpoints the old WAL into the old file, which is about to be
/// replaced, so none of its rows can reach the new store.
///
/// A rollback-mode connection that is idle holds no lock and cannot be seen;
/// stores opened by Reseed (a `DatabasePool`) are always in WAL mode.
final class StoreGuard {
    private var connection: OpaquePointer?

    private init(connection: OpaquePointer) {
        self.connection = connection
    }

    /// What trying to guard a store found.
    enum Result {
        /// No one else has the store open; hold the guard until the replace is done.
        case guarded(StoreGuard)
        /// The file is not a usable SQLite database: nobody can have it open as one.
        case notADatabase(String)
        /// Someone else kept it open until the deadline.
        case busy(String)
    }

    static func acquire(path: String, deadline: ContinuousClock.Instant) throws(ReseedError) -> Result {
        var connection = try open(path)
        var lastBusy = "database is locked"
        var seenInvalid = false
        while true {
            switch attempt(connection) {
            case .success:
                return .guarded(StoreGuard(connection: connection))
            case .invalid(let message):
                sqlite3_close_v2(connection)
                // SQLite also says "malformed" when a read fails (EIO): believe it when a new connection says it again.
                if seenInvalid { return .notADatabase(message) }
                seenInvalid = true
                connection = try open(path)
                continue
            case .busy(let message):
                lastBusy = message
            case .failed(let message):
                sqlite3_close_v2(connection)
                throw ReseedError(.database, step: .checkStoreNotInUse, path: path,
                                  message: "cannot check that the old store is not in use: \(message); changed nothing")
            }
            if ContinuousClock.now >= deadline {
                sqlite3_close_v2(connection)
                return .busy(lastBusy)
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    private static func open(_ path: String) throws(ReseedError) -> OpaquePointer {
        var handle: OpaquePointer?
        let openCode = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil)
        guard openCode == SQLITE_OK, let connection = handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close_v2(handle)
            throw ReseedError(.database, step: .checkStoreNotInUse, path: path,
                              message: "cannot open the old store to check it is not in use: \(message) (SQLite \(openCode))")
        }
        return connection
    }

    private enum Attempt { case success, invalid(String), busy(String), failed(String) }

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
        let message = String(cString: sqlite3_errmsg(connection))
        switch code & 0xff {
        case SQLITE_BUSY, SQLITE_LOCKED:
            _ = query(connection, "PRAGMA locking_mode=NORMAL", &mode)
            return .busy(message)
        case SQLITE_NOTADB, SQLITE_CORRUPT:
            return .invalid(message)
        default:
            // An I/O error or a full disk proves neither that the file is not a database nor
            // that no one has it open: replacing it then could cut another process's store
            // from its WAL, and the copy kept aside would lack that WAL.
            return .failed("\(message) (SQLite \(code))")
        }
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
