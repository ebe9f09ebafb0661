import GRDB
import GRDBSQLite
import ReseedSystem

extension Installation {
    /// The check of a delta the device made from a channel's metadata-only entry (``metadataOnly``,
    /// see ``ChannelManifest/MetadataOnly``), applied to `path`, the private copy of the installed
    /// store, without hashing the result whole; nil when it does not apply: no such entry, or no
    /// `incremental` (the store file changed since its install, or nothing recorded then vouches for
    /// the seed it holds), and then the made delta is applied and its result hashed whole, as any delta's.
    ///
    /// It is as strict as the incremental check of a delta file (``SeedDelta/apply(deltaPath:to:expectedContentHash:incremental:discardedOnFailure:rowsApplied:rowsHashed:checkingResult:)``):
    ///
    /// - The rows the change does not touch are vouched for by the store's fingerprint, as there:
    ///   `incremental` is given only while the store file and its `-wal` have the fingerprint recorded
    ///   when the store was installed, so the copy holds exactly the seed whose content hash was
    ///   recorded then; that hash (and the one recorded with the fingerprint, when recorded) must be
    ///   the entry's signed `fromContentHash`.
    /// - The touched table is compared whole against the signed values: `reseed_metadata` read
    ///   before and after the change (triggers off, as the applier has them) must be equal but for
    ///   the entry's keys, each of which held another value and now holds the entry's as TEXT;
    ///   SQLite must count exactly one changed row per value (`sqlite3_total_changes`) and no schema
    ///   change (`schema_version`).
    /// - The publisher built the delta between the two seeds, checked that it changes those values
    ///   and nothing else (schema, other tables, statistics, `user_version`, `application_id`), and
    ///   signed the entry with the new seed's content hash and incremental content hash. So the copy
    ///   now holds that seed, and the install records those two signed hashes, as after a delta
    ///   checked from its changed rows. The rest of the install's checks (header values, embedded
    ///   name and version) run after this as after any delta.
    ///
    /// - Returns: what was applied, with the manifest's content hash and incremental content hash.
    /// - Throws: ``ReseedError`` (step ``ReseedError/Step/applyDelta``) in one sentence when anything is
    ///   off (``ReseedError/Code/deltaMismatch`` for a store the entry does not fit,
    ///   ``ReseedError/Code/verificationFailed`` for a change that did not do exactly that): the caller
    ///   removes the copy and the update falls back to the full seed, the store untouched.
    func applyMetadataOnly(to path: String, incremental: (from: String?, installed: String?, expected: String)?) throws(ReseedError) -> SeedDelta.Applied? {
        guard let change = metadataOnly, let incremental else { return nil }
        let (contents, entries) = try preferences.readEntries()
        let recorded = entries[manifest.name]
        guard case .valid = contents, let recordedHash = recorded?.contentHash, recordedHash == change.fromContentHash,
              incremental.from.map({ $0 == recordedHash }) ?? true, recorded?.incrementalContentHash == incremental.installed else {
            throw ReseedError(.deltaMismatch, step: .applyDelta, path: storePath, message:
                "the installed seed's recorded content hash is not \(change.fromContentHash), where the channel's metadata-only delta starts")
        }
        guard change.toContentHash == manifest.contentHash, incremental.expected == manifest.incrementalContentHash else {
            throw ReseedError(.verificationFailed, step: .applyDelta, path: path, message: "the metadata-only delta does not lead to the manifest's content hash")
        }
        try MetadataOnlyChange(values: change.values, path: path).apply()
        logger.info("checked the metadata-only delta's result against the channel's signed values", metadata: ["store": "\(storePath)"])
        let table = SeedDelta.Header.Table(index: 1, name: SeedMetadata.tableName, deleted: 0, updated: change.values.count, inserted: 0)
        let header = SeedDelta.Header(format: SeedDelta.Format.rows.rawValue, fromContentHash: change.fromContentHash, fromRowSet: nil,
                                      toContentHash: change.toContentHash, userVersion: change.userVersion, applicationID: change.applicationID,
                                      tables: [table])
        return SeedDelta.Applied(header: header, contentHash: change.toContentHash, incrementalContentHash: incremental.expected)
    }
}

/// The values of a metadata-only entry set in `reseed_metadata` of the database at `path` (a private
/// copy), checked to have changed exactly those rows to exactly those values (see
/// ``Installation/applyMetadataOnly(to:incremental:)``).
struct MetadataOnlyChange {
    /// The values to set, by key.
    var values: [(key: String, value: String)]
    var path: String

    /// Sets the values in one transaction, committed only when every check holds; no fsync (the install syncs the copy).
    ///
    /// - Throws: ``ReseedError`` (step ``ReseedError/Step/applyDelta``), the copy left as it was.
    func apply() throws(ReseedError) {
        let configuration = Configuration.settingRows(label: "reseed.metadataOnly", path: path, for: "the metadata-only delta")
        let queue = try during(.applyDelta, path: path) { try DatabaseQueue(path: path, configuration: configuration) }
        defer { try? queue.close() }
        try during(.applyDelta, path: path) {
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA main.synchronous = OFF")
                // A copy with its -wal beside it (see Installation.applyDelta): checkpointed into it, as a seed has a rollback journal.
                try db.execute(sql: "PRAGMA main.journal_mode = DELETE")
                try db.inTransaction(.immediate) {
                    try check(db)
                    return .commit
                }
            }
        }
    }

    /// Reads the table, sets the values and reads it again, inside the caller's transaction.
    private func check(_ db: Database) throws {
        let table = SeedMetadata.tableName
        let schemaVersion = try Int64.fetchOne(db, sql: "PRAGMA main.schema_version")
        let before = try rows(db)
        var expected = before
        for (key, value) in values {
            guard let old = before[key] else { throw mismatch("the store's \(table) has no key \(JSONNode.quote(key)) to set") }
            guard old != value.databaseValue else { throw mismatch("the store's \(table) already holds \(JSONNode.quote(key)) = \(JSONNode.quote(value))") }
            expected[key] = value.databaseValue
        }
        let changesBefore = sqlite3_total_changes64(db.sqliteConnection)
        for (key, value) in values {
            try db.execute(sql: "UPDATE main.\(table) SET value = ? WHERE key = ?", arguments: [value, key])
        }
        let changed = sqlite3_total_changes64(db.sqliteConnection) - changesBefore
        guard changed == Int64(values.count) else {
            throw refused("setting \(values.count) value(s) changed \(changed) row(s)")
        }
        guard try Int64.fetchOne(db, sql: "PRAGMA main.schema_version") == schemaVersion else { throw refused("setting the values changed the schema") }
        guard try rows(db) == expected else { throw refused("\(table) holds other rows than the installed ones with the channel's values set") }
    }

    /// `reseed_metadata` of `main` by key (``SeedMetadata/storedValues(_:schema:)``); else the store does not fit the entry.
    private func rows(_ db: Database) throws -> [String: DatabaseValue] {
        guard let values = try SeedMetadata.storedValues(db, schema: "main") else {
            throw mismatch("the store's \(SeedMetadata.tableName) is not a table of (key, value) with distinct TEXT keys")
        }
        return values
    }

    private func mismatch(_ message: String) -> ReseedError {
        ReseedError(.deltaMismatch, step: .applyDelta, path: path, message: message + "; the metadata-only delta does not fit it")
    }

    private func refused(_ message: String) -> ReseedError {
        ReseedError(.verificationFailed, step: .applyDelta, path: path, message: message + "; rolled back")
    }
}

extension Configuration {
    /// A connection that sets rows exactly, as a delta's applier does (step ``ReseedError/Step/applyDelta``
    /// on the database at `path`, for `purpose`): triggers off, foreign keys unchecked, `trusted_schema` off.
    static func settingRows(label: String, path: String, for purpose: String) -> Configuration {
        var configuration = Configuration()
        configuration.label = label
        configuration.foreignKeysEnabled = false
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA trusted_schema = OFF")
            try db.turnTriggersOff(step: .applyDelta, path: path, for: purpose)
        }
        return configuration
    }
}
