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
    /// the seed at `storeURL` attached read-only as ``seedSchema`` on every connection; and the user
    /// store's `schema_version` (nil without a user store), which an up-to-date launch's check needs.
    ///
    /// - Throws: the `DatabaseError` of attaching the seed as it is (the launch installs the seed
    ///   again when it is not a database); a failure of the user store as a ``ReseedError``
    ///   naming it (step `openUserStore`).
    ///
    /// The pool's first connection (its writer, opened by the pool's initializer) reads the seed's
    /// schema and the user store's `schema_version` right after attaching the seed, with no
    /// transaction and no hop to a reader: a seed that is not a database fails there, with SQLite's
    /// error, so the launch installs it again. A read through the pool cost a measurable part of
    /// the up-to-date launch (figure 10).
    func openPoolReadingSchemaVersion(seed storeURL: URL) throws -> (pool: DatabasePool, userSchemaVersion: Int?) {
        guard let userStoreURL else {
            let pool = try DatabasePool(path: storeURL.path, configuration: configuration.singleFileStorePool)
            OpenStores.register(pool, path: storeURL.path)
            return (pool, nil)
        }
        let seedFailure = Mutex<DatabaseError?>(nil)
        let first = Mutex<(opened: Bool, schemaVersion: Int?)>((false, nil))
        var database = configuration.pool
        let uri = Self.readOnlyURI(storeURL.path)
        database.prepareDatabase { db in
            let isFirst = first.withLock { state in
                defer { state.opened = true }
                return !state.opened
            }
            // The user store's own schema first: its damage is the user store's, never the seed's
            // (which the launch would install again, keeping a copy aside each time, to no end).
            if isFirst { try Self.readUserSchema(db, path: userStoreURL.path) }
            do {
                try Self.attachSeed(db, uri: uri, path: storeURL.path)
                if isFirst { _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(Self.seedSchema).sqlite_master") }
            } catch let error as DatabaseError {
                // The seed's failure: the launch installs the seed again when it is not a database.
                seedFailure.withLock { $0 = error }
                throw error
            }
            if isFirst {
                let version = try Int.fetchOne(db, sql: "PRAGMA main.schema_version")
                first.withLock { $0.schemaVersion = version }
            }
        }
        let pool: DatabasePool
        do {
            pool = try DatabasePool(path: userStoreURL.path, configuration: database)
        } catch let error as DatabaseError where seedFailure.withLock({ $0 }) != nil {
            throw error
        } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED {
            // A moment's lock (another launch switching the user store to WAL): the open is tried again.
            throw error
        } catch {
            throw ReseedError.wrapping(error, step: .openUserStore, path: userStoreURL.path)
        }
        OpenStores.register(pool, path: userStoreURL.path)
        return (pool, first.withLock { $0.schemaVersion })
    }

    /// Reads the user store's schema; a store SQLite cannot read fails naming it, with what to do.
    static func readUserSchema(_ db: Database, path: String) throws {
        do {
            _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM main.sqlite_master")
        } catch let error as DatabaseError where error.resultCode == .SQLITE_NOTADB || error.resultCode == .SQLITE_CORRUPT {
            throw ReseedError(.database, step: .openUserStore, path: path, databaseError: error,
                              message: "the user store cannot be read as a database, so the app cannot start on it; Reseed changed nothing",
                              advice: "restore it from a backup, or recover its rows with `sqlite3 '\(path)' .recover | sqlite3 RECOVERED.sqlite` and put that file in its place with the app closed")
        }
    }

    /// Attaches the seed at `uri` (``readOnlyURI(_:)`` of `path`) as ``seedSchema``; refuses an
    /// attachment SQLite made writable.
    static func attachSeed(_ db: Database, uri: String, path: String) throws {
        try db.execute(sql: "ATTACH DATABASE ? AS \(seedSchema)", arguments: [uri])
        guard sqlite3_db_readonly(db.sqliteConnection, seedSchema) == 1 else {
            throw ReseedError(.database, step: .openUserStore, path: path,
                              message: "this SQLite did not attach the seed read-only (URI file names are off)")
        }
    }

    /// `path` as an SQLite URI opening it read-only and immutable: the seed file is never written
    /// while attached (a new seed is renamed in), so SQLite need not lock it or look for a journal.
    package static func readOnlyURI(_ path: String) -> String {
        // Byte by byte: this is on every launch's path, where CharacterSet and String(format:) cost
        // microseconds a character. Unreserved ASCII and "/" stay; every other byte is %XX.
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes = Array("file:".utf8)
        bytes.reserveCapacity(path.utf8.count + 32)
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "/"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                bytes.append(byte)
            default:
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0f)]]
            }
        }
        bytes += Array("?mode=ro&immutable=1".utf8)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// After opening a user store's pool: runs the app's migrator, checks the user store against
    /// the seed, and after an install counts the user rows each reference leaves without a key.
    ///
    /// An up-to-date launch skips the migrator's look and the checks when nothing they depend on
    /// changed since they last passed: the preferences entry keeps a fingerprint of the seed's
    /// version and source, the user store's `schema_version` (any DDL changes it), the migrations
    /// and references declared, and whether foreign keys are on. Reading `schema_version` costs one
    /// small read; the checks cost several reads of both schemas, on every launch's path.
    ///
    /// `schemaVersion` is the user store's, when the opening already read it.
    func finishOpening(_ pool: DatabasePool, outcome: inout LaunchOutcome, schemaVersion opened: Int? = nil) throws(ReseedError) {
        guard let userStore = configuration.userStore, let userStoreURL else { return }
        let path = userStoreURL.path
        let foreignKeys = configuration.database.foreignKeysEnabled
        let checked = { (outcome: LaunchOutcome, known: Int?) throws(ReseedError) -> String in
            var schemaVersion = known ?? 0
            if known == nil {
                schemaVersion = try during(.checkUserStore, path: path) { try pool.read { try Int.fetchOne($0, sql: "PRAGMA main.schema_version") } } ?? 0
            }
            return UserStoreSchema.fingerprint(userStore, version: outcome.version, source: outcome.source, schemaVersion: schemaVersion, foreignKeys: foreignKeys)
        }
        var fingerprint = try checked(outcome, opened)
        // The fingerprint as the launch read it: the preferences are not read a second time.
        if outcome.action == .upToDate, outcome.userStoreChecked == fingerprint { return }
        var inspection = try UserStoreSchema.inspect(pool, userStore: userStore, path: path, foreignKeys: foreignKeys)
        if !userStore.migrator.migrations.allSatisfy(inspection.applied.contains) {
            // Under the user store's lock: another launch (a process, or a pool of this one) may be
            // migrating the same file; the migrator reads what is applied again once it holds it.
            let locked = try data.lock(userStore.lockName, heldBy: userStore.lockHolder)
            defer { locked.lock.release() }
            outcome.appliedMigrations += try UserStoreSchema.migrate(pool, with: userStore.migrator, path: path)
        }
        if !outcome.appliedMigrations.isEmpty {
            inspection = try UserStoreSchema.inspect(pool, userStore: userStore, path: path, foreignKeys: foreignKeys)
            fingerprint = try checked(outcome, nil)
        }
        if let problem = inspection.problem {
            throw ReseedError(.userStoreConflict, step: .checkUserStore, path: path, message: problem)
        }
        if outcome.action == .installed {
            outcome.orphans = try UserStoreSchema.countOrphans(pool, references: userStore.references, path: path)
            UserStoreSchema.log(outcome.orphans, logger: configuration.logger)
        }
        // Remembered only to skip work: a preferences file that cannot take it costs the checks next time.
        _ = try? preferences.record([.userStoreChecked(fingerprint)], for: outcome.name,
                                    timeout: configuration.lockTimeout, logger: configuration.logger)
    }
}

extension Launcher.Configuration {
    /// The app's GRDB configuration, waiting up to ``busyTimeout`` for a lock when it leaves GRDB's
    /// default of failing at once.
    ///
    /// SQLite holds a store's write lock for moments the app does not see: another connection's
    /// transaction, a checkpoint, the WAL recovery the first connection to a store just swapped in
    /// runs. With GRDB's default an app's write then fails with "database is locked"; an app's
    /// write must wait for a swap, never fail because of one.
    var pool: GRDB.Configuration {
        var pool = database
        if case .immediateError = pool.busyMode {
            pool.busyMode = .timeout(busyTimeout.inSeconds)
        }
        return pool
    }
}
