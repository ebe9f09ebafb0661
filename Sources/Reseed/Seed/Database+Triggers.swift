import CReseedSystem
import GRDB

extension Database {
    /// Turns this connection's triggers off (`SQLITE_DBCONFIG_ENABLE_TRIGGER`): rows written through it
    /// go in as they are, whatever triggers the schema holds. For a connection of Reseed's own that
    /// copies rows (a delta's apply, the carry of the user's tables), closed after.
    ///
    /// - Throws: ``ReseedError/Code/database`` naming `path` and `purpose` when SQLite did not turn them off.
    func turnTriggersOff(step: ReseedError.Step, path: String, for purpose: String) throws(ReseedError) {
        guard reseed_sqlite_disable_triggers(UnsafeMutableRawPointer(sqliteConnection)) == 0 else {
            throw ReseedError(.database, step: step, path: path, message: "SQLite did not turn triggers off for \(purpose)")
        }
    }
}
