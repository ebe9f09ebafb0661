import Foundation
import GRDB
import GRDBSQLite
import Logging
import Synchronization

extension Launcher {
    /// The user store's file, when one is configured.
    public var userStoreURL: URL? {
        configuration.userStore.map { dataDirectory.appendingPathComponent($0.fileName, isDirectory: false) }
    }

    /// Opens the pool the app uses: the store itself, or, with a user store, the user store with
    /// the seed at `storeURL` attached read-only as ``seedSchema`` on every connection.
    ///
    /// - Throws: the `DatabaseError` of attaching the seed as it is (the launch installs the seed
    ///   again when it is not a database); a failure of the user store as a ``ReseedError``
    ///   naming it (step `openUserStore`).
    func openPool(seed storeURL: URL) throws -> DatabasePool {
        guard let userStoreURL else {
            let pool = try DatabasePool(path: storeURL.path, configuration: configuration.database)
            OpenStores.register(pool, path: storeURL.path)
            return pool
        }
        let seedFailure = Mutex<DatabaseError?>(nil)
        var database = configuration.database
        let uri = Self.readOnlyURI(storeURL.path)
        database.prepareDatabase { db in
            do {
                try db.execute(sql: "ATTACH DATABASE ? AS \(Self.seedSchema)", arguments: [uri])
                // Reading the schema now: a seed that is not a database fails here, as the seed's failure.
                _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(Self.seedSchema).sqlite_master")
            } catch let error as DatabaseError {
                seedFailure.withLock { $0 = error }
                throw error
            }
            guard sqlite3_db_readonly(db.sqliteConnection, Self.seedSchema) == 1 else {
                throw ReseedError(.database, step: .openUserStore, path: storeURL.path,
                                  message: "this SQLite did not attach the seed read-only (URI file names are off)")
            }
        }
        do {
            let pool = try DatabasePool(path: userStoreURL.path, configuration: database)
            OpenStores.register(pool, path: userStoreURL.path)
            return pool
        } catch let error as DatabaseError where seedFailure.withLock({ $0 }) != nil {
            throw error
        } catch {
            throw ReseedError.wrapping(error, step: .openUserStore, path: userStoreURL.path)
        }
    }

    /// `path` as an SQLite URI opening it read-only and immutable: the seed file is never written
    /// while attached (a new seed is renamed in), so SQLite need not lock it or look for a journal.
    static func readOnlyURI(_ path: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "/-._~")
        let escaped = path.unicodeScalars.map { scalar -> String in
            if scalar.isASCII, allowed.contains(scalar) { return String(scalar) }
            return String(scalar).utf8.map { String(format: "%%%02X", $0) }.joined()
        }.joined()
        return "file:\(escaped)?mode=ro&immutable=1"
    }

    /// After opening a user store's pool: runs the app's migrator, checks the user store against
    /// the seed, and after an install counts the user rows each reference leaves without a key.
    func finishOpening(_ pool: DatabasePool, outcome: inout LaunchOutcome) throws(ReseedError) {
        guard let userStore = configuration.userStore, let userStoreURL else { return }
        outcome.appliedMigrations = try UserStoreSchema.migrate(pool, with: userStore.migrator, path: userStoreURL.path)
        try UserStoreSchema.check(pool, userStore: userStore, path: userStoreURL.path, foreignKeys: configuration.database.foreignKeysEnabled)
        if outcome.action == .installed {
            outcome.orphans = try UserStoreSchema.countOrphans(pool, references: userStore.references, path: userStoreURL.path)
            UserStoreSchema.log(outcome.orphans, logger: configuration.logger)
        }
    }
}
