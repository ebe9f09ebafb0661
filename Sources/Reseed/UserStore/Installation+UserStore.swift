import Foundation
import Logging

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
        var keptAside: URL?

        func report(in outcome: inout LaunchOutcome) {
            outcome.userStoreURL = userStoreURL
            outcome.importedTables = imported
            outcome.missingUserTables = missing
            outcome.userStoreKeptAside = keptAside
        }
    }

    /// Step 2 with a user store, under the store's lock, before deciding:
    ///
    /// 1. a user store file that is not a database is kept aside (renamed, never deleted);
    /// 2. unless the preferences say the store file holds no user tables (an entry written with
    ///    this user store), the store file is looked at for the declared user tables; when the
    ///    user store does not exist yet, those it has are copied into a new one (built in a temp
    ///    file, verified, fsynced, renamed into place). Either way the seed must then replace
    ///    the store file, whose user tables are in the user store.
    ///
    /// A crash leaves either no user store (the next launch imports again from the store
    /// file, untouched) or a complete one (the next launch sees the store file still holds
    /// the tables, and replaces it).
    func prepareUserStore(recorded: Decision.Recorded?, storeState: StoreState) throws(ReseedError) -> UserStoreStep {
        guard let userStore = configuration.userStore else { return UserStoreStep() }
        // By bytes: a "/" followed by a combining mark is one Character that is not "/".
        guard userStore.fileName != storeName, !userStore.name.isEmpty, SeedManifest.isPlainFileName(userStore.fileName) else {
            throw ReseedError(.invalidArgument, step: .openUserStore, path: directory.path(userStore.fileName),
                              message: "the user store's name '\(userStore.name)' must be a file name other than the seed's '\(manifest.name)'")
        }
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
        guard recorded?.userStore != userStore.name, storeState == .sqlite, !userStore.userTables.isEmpty else { return step }
        let importer = UserTableImport(directory: directory, storeName: storeName, logger: logger)
        let present: [String]
        do {
            present = try importer.tablesPresent(userStore.userTables)
        } catch where error.databaseError.map({ [.SQLITE_NOTADB, .SQLITE_CORRUPT].contains($0.resultCode) }) ?? false {
            logger.warning("the store file cannot be read as a database: no user table copied; it is kept aside and replaced", metadata: [
                "store": "\(storePath)", "error": "\(error)",
            ])
            step.storeUnreadable = true
            return step
        }
        if userState == .missing {
            // A declared table the seed has too is the seed's: copied, it would hide the seed's rows.
            // A compressed seed is decompressed beside the store for the look (and removed after it).
            try seed.withDatabaseFile(temporaryDirectory: directory.url, step: .checkUserStore) { seedPath throws(ReseedError) in
                try UserStoreSchema.refuseIncompatibleSeed(userTables: userStore.userTables, references: [], seedPath: seedPath,
                                                    userPath: directory.path(userStore.fileName), declared: true)
            }
            let imported = try importer.run(userStore.userTables, present: present, into: userStore.fileName)
            step.imported = imported.rows
            step.missing = imported.missing
            step.storeHoldsUserTables = !imported.rows.isEmpty
        } else {
            step.storeHoldsUserTables = !present.isEmpty
        }
        if step.storeHoldsUserTables {
            logger.notice("the store file holds the user's tables, which are in the user store: the seed replaces it", metadata: [
                "store": "\(storePath)", "userStore": "\(directory.path(userStore.fileName))", "imported": "\(step.imported)",
            ])
        }
        return step
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
