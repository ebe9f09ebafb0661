import Foundation
import GRDB
import Reseed
import ReseedSystem

extension ChannelPublisher {
    /// `delta` (built and checked from `release`'s seed to `manifest`'s) with the metadata values its
    /// entry carries when the two seeds differ only in Reseed's metadata (see
    /// ``MetadataOnlyRelease/changedValues(built:oldPath:newPath:version:)``): devices of this Reseed then make
    /// it themselves, and older ones still download its file. Otherwise `delta` as it is.
    func withMetadataOnly(_ delta: ChannelManifest.Delta, built: SeedDeltaBuilder.Built, from release: EarlierRelease,
                          to manifest: ChannelManifest, in directory: Directory) throws(PackagingError) -> ChannelManifest.Delta {
        let oldPath = directory.path(release.file)
        let values = try packaging(.publish, path: oldPath) {
            try MetadataOnlyRelease.changedValues(built: built, oldPath: oldPath, newPath: directory.path(manifest.file), version: manifest.version)
        }
        var delta = delta
        delta.metadataOnly = values.map(ChannelManifest.MetadataOnly.init(values:))
        return delta
    }
}

/// Whether two releases of a seed differ only in Reseed's metadata, and in which values.
enum MetadataOnlyRelease {
    /// SQLite's tables a delta carries whole besides the rows: the content hash covers none of them,
    /// so they must be equal for a device to keep its own.
    static let statisticsTables = SeedDelta.Names.statistics.map(\.table)

    /// The `reseed_metadata` values of the seed at `newPath` that differ from the seed's at `oldPath`,
    /// when nothing else does; nil otherwise. `built` is the checked delta between them: it must
    /// change rows of `reseed_metadata` only, by updates only, and no schema (format 1); then every
    /// other table holds the same rows and the schema is the same, since applying it reached the new
    /// seed's content hash. Besides, both tables must be `(key, value)` with the same distinct TEXT keys (``SeedMetadata/storedValues(_:schema:)``) and the
    /// changed values TEXT (what a device writes), `user_version`, `application_id` and the statistics
    /// (`sqlite_stat1`, `sqlite_stat4`, `sqlite_sequence`, row by row with their rowids) the same, and the values
    /// within the bounds a device reads (``ChannelManifest/MetadataOnly/problem(of:version:)``).
    ///
    /// - Throws: the `DatabaseError` of reading either seed.
    static func changedValues(built: SeedDeltaBuilder.Built, oldPath: String, newPath: String, version: String) throws -> [String: String]? {
        guard built.format == SeedDelta.Format.rows.rawValue, built.schemaObjects.isEmpty, built.tables.count == 1, let table = built.tables.first,
              table.name == SeedMetadata.tableName, table.carries == .rows, table.reason == .rowsChanged,
              table.deleted == 0, table.inserted == 0, table.moved == 0, table.updated > 0 else { return nil }
        let queue = try DatabaseQueue()
        defer { try? queue.close() }
        return try queue.writeWithoutTransaction { db -> [String: String]? in
            try db.execute(sql: "ATTACH DATABASE ? AS old", arguments: [Launcher.readOnlyURI(oldPath)])
            try db.execute(sql: "ATTACH DATABASE ? AS new", arguments: [Launcher.readOnlyURI(newPath)])
            for pragma in ["user_version", "application_id"] {
                guard try Int64.fetchOne(db, sql: "PRAGMA old.\(pragma)") == Int64.fetchOne(db, sql: "PRAGMA new.\(pragma)") else { return nil }
            }
            for name in statisticsTables {
                guard try statistics(name, in: "old", db) == statistics(name, in: "new", db) else { return nil }
            }
            guard let old = try SeedMetadata.storedValues(db, schema: "old"), let new = try SeedMetadata.storedValues(db, schema: "new"),
                  Set(old.keys) == Set(new.keys) else { return nil }
            var values: [String: String] = [:]
            for (key, value) in new where old[key] != value {
                guard case .string(let text) = value.storage else { return nil }
                values[key] = text
            }
            guard values.count == table.updated, ChannelManifest.MetadataOnly.problem(of: values, version: version) == nil else { return nil }
            return values
        }
    }

    /// The rows of SQLite's table `name` in `schema`, rowid first, in rowid order; nil when the table is not there.
    private static func statistics(_ name: String, in schema: String, _ db: Database) throws -> [[DatabaseValue]]? {
        guard try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM \(schema).sqlite_schema WHERE type = 'table' AND name = ?", arguments: [name]) == true else {
            return nil
        }
        return try Row.fetchAll(db, sql: "SELECT rowid, * FROM \(schema).\(name) ORDER BY rowid").map { Array($0.databaseValues) }
    }
}

extension ChannelManifest.MetadataOnly {
    /// The member as `channel.json` writes it in a delta entry: `"metadata": {…}`, the keys in the order of their UTF-8 bytes.
    var jsonMember: String {
        let sorted = values.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        return "\"metadata\": {" + sorted.map { "\(JSONNode.quote($0.key)): \(JSONNode.quote($0.value))" }.joined(separator: ", ") + "}"
    }
}
