import GRDB
import Reseed

extension SeedMetadata {
    /// Creates the metadata tables and fills them; used when building a seed. In a GeoPackage it
    /// also registers them, so GDAL lists neither as a layer (see ``GeoPackageRegistration``).
    public func write(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE \(Self.tableName) (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID;
            CREATE TABLE \(Self.stepsTableName) (position INTEGER PRIMARY KEY, id TEXT NOT NULL, checksum TEXT NOT NULL);
            """)
        for (key, value) in [("format", String(format)), ("name", name), ("version", version)] {
            try db.execute(sql: "INSERT INTO \(Self.tableName) (key, value) VALUES (?, ?)", arguments: [key, value])
        }
        for (position, step) in steps.enumerated() {
            try db.execute(
                sql: "INSERT INTO \(Self.stepsTableName) (position, id, checksum) VALUES (?, ?, ?)",
                arguments: [position + 1, step.id, step.checksum])
        }
        try GeoPackageRegistration.register(db)
    }
}
