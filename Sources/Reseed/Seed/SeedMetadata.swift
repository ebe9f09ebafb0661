import Foundation
import GRDB

/// What a seed says about itself inside the database, so a store can be checked
/// against the manifest and the preferences without trusting either alone.
///
/// Stored in two tables that `reseed package` creates:
/// `reseed_metadata(key TEXT PRIMARY KEY, value TEXT)` with the keys `format`,
/// `name` and `version`; and `reseed_steps(position INTEGER PRIMARY KEY, id TEXT, checksum TEXT)`.
/// In a GeoPackage both are also registered in `gpkg_contents` and `gpkg_extensions` under a data
/// type of their own, so GDAL does not list them as layers; seeds built before that registration
/// read as they always did (see <doc:AdoptingInAnAppThatShipsADatabase>, "GeoPackage and MBTiles").
public struct SeedMetadata: Sendable, Hashable {
    /// The table of key/value metadata.
    public static let tableName = "reseed_metadata"
    /// The table of migration steps.
    public static let stepsTableName = "reseed_steps"
    /// Reseed's own `PRAGMA application_id` ("RSED"), which earlier releases wrote into every
    /// seed. A seed now keeps its database's own (or `reseed.json`'s `applicationID`); Reseed
    /// recognises a seed by its ``tableName`` table, never by this number.
    public static let applicationID: Int32 = 0x5253_4544

    public var format: Int
    public var name: String
    public var version: String
    public var steps: [SeedManifest.Step]

    public init(format: Int = SeedManifest.currentFormat, name: String, version: String, steps: [SeedManifest.Step]) {
        self.format = format
        self.name = name
        self.version = version
        self.steps = steps
    }

    /// Reads the metadata of the database `db` is connected to; nil when it has no metadata table.
    public static func read(_ db: Database) throws -> SeedMetadata? {
        try read(db, schema: "main")
    }

    /// Reads the metadata of the database attached as `schema`; nil when it has no metadata table.
    static func read(_ db: Database, schema: String) throws -> SeedMetadata? {
        guard try db.tableExists(tableName, in: schema) else { return nil }
        let rows = try Row.fetchAll(db, sql: "SELECT key, value FROM \(schema).\(tableName)")
        var values: [String: String] = [:]
        for row in rows {
            if let key: String = row["key"], let value: String = row["value"] { values[key] = value }
        }
        guard let name = values["name"], let version = values["version"] else { return nil }
        var steps: [SeedManifest.Step] = []
        if try db.tableExists(stepsTableName, in: schema) {
            steps = try Row.fetchAll(db, sql: "SELECT id, checksum FROM \(schema).\(stepsTableName) ORDER BY position").map {
                SeedManifest.Step(id: $0["id"], checksum: $0["checksum"])
            }
        }
        return SeedMetadata(format: values["format"].flatMap { Int($0) } ?? 0, name: name, version: version, steps: steps)
    }

    /// The rows of the metadata table of `schema`, each value as stored, by key; nil unless it is an
    /// ordinary table of exactly the columns `(key, value)` whose keys are distinct TEXT: what a
    /// metadata-only delta entry is checked against, by its publisher and by a device.
    package static func storedValues(_ db: Database, schema: String) throws -> [String: DatabaseValue]? {
        let definition = try String.fetchOne(db, sql: "SELECT sql FROM \(schema).sqlite_schema WHERE type = 'table' AND name = ?", arguments: [tableName])
        let columns = try String.fetchAll(db, sql: "SELECT name FROM pragma_table_xinfo(?, ?)", arguments: [tableName, schema])
        guard let definition, !definition.uppercased().hasPrefix("CREATE VIRTUAL"), columns == ["key", "value"] else { return nil }
        var values: [String: DatabaseValue] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT key, value FROM \(schema).\(tableName)") {
            guard case .string(let key) = (row[0] as DatabaseValue).storage, values.updateValue(row[1], forKey: key) == nil else { return nil }
        }
        return values
    }

    /// Reads the metadata of the database file at `path`, opened read-only.
    static func read(path: String) throws -> SeedMetadata? {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = "reseed.metadata"
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { try read($0) }
    }

    /// `PRAGMA quick_check` of the database file at `path`, opened read-only: "ok" when sound.
    static func quickCheck(path: String) throws -> String {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { try String.fetchAll($0, sql: "PRAGMA quick_check").joined(separator: "; ") }
    }
}
