import Foundation
import GRDB
import Logging
import ReseedSystem

extension Installation {
    /// What the user store's part of step 2 did, for the decision and the outcome.
    struct UserStoreStep {
        /// The store file still holds user tables that are (now) in the user store: the seed must replace it.
        var storeHoldsUserTables = false
        /// The store file has a SQLite header but SQLite cannot read it: no user table can be copied
        /// out of it. It is installed over and kept aside (``LaunchOutcome/storeKeptAside``), as
        /// without a user store, so the app starts and the file is never lost.
        var storeUnreadable = false
        /// The install this step forces, if any.
        var forcing: LaunchOutcome.Reason? { storeUnreadable ? .storeInvalid : nil }
        var userStoreURL: URL?
        var imported: [String: Int] = [:]
        var missing: [String] = []
        /// The user's tables left in the store file (not declared, or their user-store table holds
        /// other rows): the install keeps the store file aside whole.
        var stranded: [String] = []
        var keptAside: URL?
        /// The app's migrations the import applied before carrying the rows.
        var appliedMigrations: [String] = []
        /// The store file holds tables of the user's that stay in it: the install keeps it aside whole.
        var keepsStoreAside = false

        func report(in outcome: inout LaunchOutcome) {
            outcome.userStoreURL = userStoreURL
            outcome.importedTables = imported
            outcome.missingUserTables = missing
            outcome.strandedTables = stranded
            outcome.appliedMigrations = appliedMigrations
            outcome.userStoreKeptAside = keptAside
        }
    }

    /// Step 2 with a user store, under the store's lock, before deciding:
    ///
    /// 1. a user store file that is not a database is kept aside (renamed, never deleted);
    /// 2. unless the preferences say the store file holds no user tables (an entry written with
    ///    this user store), the store file is looked at: **a table of it that is not a table of the
    ///    seed being installed is the user's** (names compared as SQLite does, ignoring ASCII case).
    ///    The declared ones are carried into the user store (``UserTableImport``); any other, and a
    ///    declared one whose user-store table holds other rows, is stranded: the store file is kept
    ///    aside whole before the seed replaces it, and the outcome names the tables left there.
    ///    Either way the seed then replaces the store file.
    ///
    /// A crash leaves the store file as it was and the user store either without the rows (a new
    /// one not renamed in, an existing one's transaction not committed) or with all of them, which
    /// the next launch finds carried already.
    func prepareUserStore(
        recorded: Decision.Recorded?, entry: PreferencesFile.Entry?, storeState: StoreState
    ) throws(ReseedError) -> UserStoreStep {
        guard let userStore = configuration.userStore else { return UserStoreStep() }
        try Self.checkName(of: userStore, storeName: storeName, in: directory)
        var step = UserStoreStep(userStoreURL: URL(fileURLWithPath: directory.path(userStore.fileName), isDirectory: false))
        var userState = try userStoreState(userStore)
        if userState == .notSQLite {
            step.keptAside = try keepUserStoreAside(userStore)
            userState = .missing
        }
        if userState == .missing {
            // Sidecars without their database belong to no store: the new one starts without them.
            try during(.removeSidecars, path: directory.path(userStore.fileName)) {
                for sidecar in StoreLayout.sidecars(of: userStore.fileName) { try directory.remove(sidecar) }
            }
        }
        // Whether or not the move was recorded: a kill after the swap leaves only this record of the kept file.
        if let stranded = entry?.strandedIn, storeState == .sqlite {
            try carryStranded(stranded, userStore: userStore, userState: userState, into: &step)
        }
        guard recorded?.userStore != userStore.name, storeState == .sqlite else { return step }
        guard let seed = source.seed else {
            // A delta starts from a pure seed; this store file may hold the user's tables.
            throw ReseedError(.verificationFailed, step: .applyDelta, path: storePath,
                              message: "the store file may hold the user's tables, so a delta cannot start from it; run the update again to install the full seed")
        }
        let importer = UserTableImport(directory: directory, storeName: storeName, logger: logger)
        // A compressed seed is decompressed beside the store for the look (and removed after it).
        try seed.withDatabaseFile(temporaryDirectory: directory.url, step: .checkUserStore) { seedPath throws(ReseedError) in
            // A declared table the seed has too is the seed's: copied, it would hide the seed's rows.
            let seedTables = try UserStoreSchema.refuseIncompatibleSeed(
                userTables: userStore.userTables, references: [], seedPath: seedPath, userPath: directory.path(userStore.fileName), declared: true)
            let owned: [String]
            do throws(ReseedError) {
                owned = try importer.userTables(excluding: seedTables)
            } catch where error.databaseError.map({ [.SQLITE_NOTADB, .SQLITE_CORRUPT].contains($0.resultCode) }) ?? false {
                logger.warning("the store file cannot be read as a database: no user table copied; it is kept aside and replaced", metadata: [
                    "store": "\(storePath)", "error": "\(error)",
                ])
                step.storeUnreadable = true
                return
            }
            var declared: [(declared: String, name: String)] = []
            for name in userStore.userTables where !declared.contains(where: { $0.declared.isSameSQLName(as: name) }) {
                if let found = owned.first(where: { $0.isSameSQLName(as: name) }) {
                    declared.append((name, found))
                } else {
                    step.missing.append(name)
                }
            }
            step.stranded = owned.filter { name in !declared.contains { $0.name == name } }
            if !step.missing.isEmpty {
                logger.notice("declared user tables the store does not have", metadata: ["tables": "\(step.missing)", "store": "\(storePath)"])
            }
            guard !owned.isEmpty else { return }
            step.storeHoldsUserTables = true
            guard !declared.isEmpty else { return }
            let carried = try carry(declared, with: importer, seedAt: seedPath, userStore: userStore, userState: userState)
            step.imported = carried.rows
            step.stranded += carried.stranded
            step.appliedMigrations = carried.appliedMigrations
        }
        step.keepsStoreAside = !step.stranded.isEmpty
        if step.storeHoldsUserTables {
            logger.notice("the store file holds the user's tables: the seed replaces it", metadata: [
                "store": "\(storePath)", "userStore": "\(directory.path(userStore.fileName))", "imported": "\(step.imported)",
                "stranded": "\(step.stranded)",
            ])
        }
        return step
    }

    /// Carries the tables an earlier launch left in a store file it kept aside (`stranded`) that the
    /// configuration now declares, as the first launch would have (the app's migrations first, with
    /// the installed seed attached); then records what is left there. The kept file is only read,
    /// never removed. A table whose user-store table holds other rows stays there, named once more.
    private func carryStranded(_ stranded: PreferencesFile.StrandedTables, userStore: Launcher.UserStore, userState: StoreState,
                               into step: inout UserStoreStep) throws(ReseedError) {
        let wanted = userStore.userTables.compactMap { declared in
            stranded.tables.first { $0.isSameSQLName(as: declared) }.map { (declared: declared, name: $0) }
        }
        guard !wanted.isEmpty else { return }
        let rest = stranded.tables.filter { table in !wanted.contains { $0.name == table } }
        let remaining: ([PreferencesFile.Change], [PreferencesFile.Entry.Field]) =
            rest.isEmpty ? ([], [.strandedIn]) : ([.strandedIn(PreferencesFile.StrandedTables(file: stranded.file, tables: rest))], [])
        guard stranded.file.hasPrefix(StoreLayout(storeFileName: storeName).asidePrefix),
              try during(.inspectStore, path: directory.path(stranded.file), { try directory.status(stranded.file) })?.kind == .regular else {
            logger.warning("the file the user's tables were kept in is gone (or not one Reseed kept): nothing to carry", metadata: ["file": "\(directory.path(stranded.file))"])
            _ = try preferences.record(remaining.0, for: manifest.name, clearing: remaining.1, timeout: configuration.lockTimeout, logger: logger)
            return
        }
        let importer = UserTableImport(directory: directory, storeName: stranded.file, logger: logger)
        let carried = try carry(wanted, with: importer, seedAt: storePath, userStore: userStore, userState: userState)
        step.imported = carried.rows
        step.stranded = carried.stranded
        step.appliedMigrations = carried.appliedMigrations
        logger.notice("carried the user's tables out of the store file kept aside", metadata: [
            "file": "\(directory.path(stranded.file))", "imported": "\(carried.rows)", "stranded": "\(carried.stranded)",
        ])
        // A crash before this write carries them again next time, and finds them carried.
        _ = try preferences.record(remaining.0, for: manifest.name, clearing: remaining.1, timeout: configuration.lockTimeout, logger: logger)
    }

    /// Carries `tables` with `importer` into the user store, under the user store's own lock (the app's
    /// migrations run first, and another launch's may be running), the seed at `seedPath` attached as at
    /// every launch.
    private func carry(
        _ tables: [(declared: String, name: String)], with importer: UserTableImport, seedAt seedPath: String,
        userStore: Launcher.UserStore, userState: StoreState
    ) throws(ReseedError) -> UserTableImport.Carried {
        let userLock = try StoreLock.acquire(userStore.lockName, in: directory, timeout: configuration.lockTimeout, timeoutMessage: userStore.lockHolder)
        defer { userLock.release() }
        var database = configuration.pool
        let uri = Launcher.readOnlyURI(seedPath)
        database.prepareDatabase { db in try Launcher.attachSeed(db, uri: uri, path: seedPath) }
        return try importer.carry(tables, into: userStore.fileName, target: try importTarget(userStore, userState),
                                  database: database, migrator: userStore.migrator)
    }

    /// Where an import puts the rows: a new user store, or the existing one when it has a schema.
    private func importTarget(_ userStore: Launcher.UserStore, _ state: StoreState) throws(ReseedError) -> UserTableImport.Target {
        guard state == .sqlite else { return .new }
        let path = directory.path(userStore.fileName)
        let objects = try during(.openUserStore, path: path) { () throws -> Int in
            // Not read-only: a hot journal an import killed midway left must be rolled back to read the store.
            let queue = try DatabaseQueue(path: path, configuration: configuration.pool)
            defer { try? queue.close() }
            return try queue.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM sqlite_master") ?? 0 }
        }
        return objects == 0 ? .empty : .existing
    }

    /// Refuses a user store name that is empty, not a plain file name, the seed's own, or one of the
    /// forms of Reseed's own files (which a later launch would remove as a leftover or take for a kept store).
    static func checkName(of userStore: Launcher.UserStore, storeName: String, in directory: Directory) throws(ReseedError) {
        // By bytes: a "/" followed by a combining mark is one Character that is not "/".
        // Compared as a case-insensitive, normalizing filesystem (APFS by default) would: `Triage` and `triage` are one file there.
        func folded(_ name: String) -> String { name.precomposedStringWithCanonicalMapping.lowercased() }
        guard folded(userStore.fileName) != folded(storeName), !userStore.name.isEmpty, SeedManifest.isPlainFileName(userStore.fileName) else {
            throw ReseedError(.invalidArgument, step: .openUserStore, path: directory.path(userStore.fileName),
                              message: "the user store's name '\(userStore.name)' must be a file name other than the seed's store '\(storeName)'")
        }
        if let form = StoreLayout.reservedForm(of: userStore.fileName) {
            throw ReseedError(.invalidArgument, step: .openUserStore, path: directory.path(userStore.fileName),
                              message: "the user store's name '\(userStore.name)' has the form of Reseed's own files ('\(form)'), which Reseed removes or keeps aside; choose another name")
        }
    }

    /// What the user store file is: missing when its name is not in the directory (whatever this
    /// process still holds open: a pool of a user store deleted since must not skip the import);
    /// not a database when it is not a regular file (a symbolic link, a FIFO, a directory) or
    /// when its first 16 bytes say so; an empty regular file is an empty database.
    private func userStoreState(_ userStore: Launcher.UserStore) throws(ReseedError) -> StoreState {
        let status = try during(.inspectStore, path: directory.path(userStore.fileName)) { try directory.status(userStore.fileName) }
        guard let status else { return .missing }
        guard status.kind == .regular else { return .notSQLite }
        if status.size == 0 { return .sqlite }
        return try StoreState.judging(userStore.fileName, in: directory)
    }

    /// Renames a user store that is not a database to `<name>.sqlite.invalid-<time>-<random>`, with its sidecars.
    private func keepUserStoreAside(_ userStore: Launcher.UserStore) throws(ReseedError) -> URL {
        let name = StoreLayout(storeFileName: userStore.fileName).asideName()
        try during(.openUserStore, path: directory.path(userStore.fileName)) {
            // The sidecars first: a crash in between leaves the file to be kept aside again.
            for suffix in StoreLayout.sidecarSuffixes where try directory.status(userStore.fileName + suffix) != nil {
                try directory.renameNoReplace(userStore.fileName + suffix, to: name + suffix)
            }
            try directory.renameNoReplace(userStore.fileName, to: name)
            try directory.sync()
        }
        logger.warning("the user store is not a database: kept it aside and starting a new one", metadata: ["at": "\(directory.path(name))"])
        return URL(fileURLWithPath: directory.path(name), isDirectory: false)
    }
}

extension Installation {
    /// With a user store, for a seed that arrived at runtime: refuses it, before it replaces the
    /// installed one, when a user table would hide one of its tables or a reference points at
    /// something it lacks. A bundled seed is checked after opening instead, once the app's
    /// migrator has run (see ``Launcher/finishOpening(_:outcome:schemaVersion:)``).
    func checkUserStore(seedAt seedPath: String) throws(ReseedError) {
        guard source.recorded == .download, let userStore = configuration.userStore else { return }
        let userPath = directory.path(userStore.fileName)
        try UserStoreSchema.refuseIncompatibleSeed(
            userTables: try UserStoreSchema.ownNames(ofStoreAt: userPath, busyTimeout: configuration.busyTimeout), references: userStore.references,
            seedPath: seedPath, userPath: userPath)
    }

    /// Per reference, the user rows pointing at a key the installed seed does not have, counted
    /// through a connection of its own, for an install nothing reopens (an update of a closed
    /// store; a launch counts them once the app's migrations ran, ``Launcher/finishOpening(_:outcome:schemaVersion:)``).
    /// Empty without a user store, references, or a user store file.
    func countOrphans() throws(ReseedError) -> [String: Int] {
        guard let userStore = configuration.userStore, !userStore.references.isEmpty,
              try during(.openUserStore, path: directory.path(userStore.fileName), { try directory.status(userStore.fileName) }) != nil else { return [:] }
        let userPath = directory.path(userStore.fileName)
        var database = configuration.pool
        let uri = Launcher.readOnlyURI(storePath)
        database.prepareDatabase { [storePath] db in try Launcher.attachSeed(db, uri: uri, path: storePath) }
        let queue = try during(.openUserStore, path: userPath) { try DatabaseQueue(path: userPath, configuration: database) }
        defer { try? queue.close() }
        let orphans = try UserStoreSchema.countOrphans(queue, references: userStore.references, path: userPath)
        UserStoreSchema.log(orphans, logger: logger)
        return orphans
    }
}
