import GRDB
import Reseed
import ReseedSystem

/// How a GeoPackage seed tells GeoPackage tools what Reseed's own tables are, so that GDAL (and
/// QGIS, pyogrio, fiona, geopandas: everything that lists layers through it) sees the layers the
/// steps made and nothing else.
///
/// GDAL's GeoPackage driver lists as layers the tables `gpkg_contents` registers as `features` or
/// `attributes`, and, in a GeoPackage without an `attributes` table, every other table whose name
/// `gpkg_contents` does not hold (and that does not start `gpkg_`, `rtree_` or `sqlite_`). So
/// ``SeedMetadata/tableName`` and ``SeedMetadata/stepsTableName`` are registered in
/// `gpkg_contents` under a data type of their own, which the GeoPackage standard leaves to
/// extensions: no GDAL listing shows them, and their names stay the ones every Reseed reads. The
/// extension is declared in `gpkg_extensions` (created, as the standard defines it, when the
/// GeoPackage has none), as the standard asks of an Extended GeoPackage.
///
/// A database is a GeoPackage here when its `gpkg_contents` is a table: the one table every
/// GeoPackage has. Other databases (MBTiles, plain SQLite) get nothing beyond the two tables.
enum GeoPackageRegistration {
    /// The `data_type` of Reseed's tables in `gpkg_contents`.
    static let dataType = "reseed-metadata"
    /// The extension's name in `gpkg_extensions`: `<author>_<extension>`, as the standard spells them.
    static let extensionName = "reseed_seed_metadata"
    /// `write-only`: a reader needs nothing to read the GeoPackage; a writer should know that a seed
    /// is replaced whole, so an edit in place breaks its content hash.
    static let scope = "write-only"
    static let definition = """
        Reseed seed metadata: reseed_metadata holds the seed's format, name and version, reseed_steps \
        the migration steps that built it (gpkg_contents data_type 'reseed-metadata'); a Reseed seed \
        is replaced whole on update, never edited
        """
    /// `last_change` must be an ISO 8601 time; a build writes no clock time, so builds stay byte-reproducible.
    static let lastChange = "1970-01-01T00:00:00.000Z"

    /// Reseed's tables, with what each holds (their `gpkg_contents` description).
    static let tables = [
        (name: SeedMetadata.tableName, description: "Reseed: the seed's format, name and version"),
        (name: SeedMetadata.stepsTableName, description: "Reseed: the migration steps that built the seed"),
    ]

    /// Whether the database `db` is connected to is a GeoPackage: its `gpkg_contents` is a table.
    static func isGeoPackage(_ db: Database) throws -> Bool {
        try kind(of: "gpkg_contents", db) == "table"
    }

    /// Registers Reseed's tables in a GeoPackage; does nothing in another database.
    ///
    /// - Throws: ``PackagingError/Code/database`` when `gpkg_contents` refuses a row (a step
    ///   registered a table under one of Reseed's names, or a constraint of its own refuses the
    ///   data type), naming the table and SQLite's reason.
    static func register(_ db: Database) throws {
        guard try isGeoPackage(db) else { return }
        for table in tables {
            do {
                try db.execute(
                    sql: """
                        INSERT INTO main.gpkg_contents (table_name, data_type, identifier, description, last_change)
                        VALUES (?, ?, NULL, ?, ?)
                        """,
                    arguments: [table.name, dataType, table.description, lastChange])
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                throw PackagingError(.database, step: .build, message: """
                    gpkg_contents refused the row that registers Reseed's table \(table.name) under the data type '\(dataType)' \
                    (\(error.message ?? "a constraint failed")): the steps must leave that name to Reseed and accept that data type
                    """, databaseError: error)
            }
        }
        // A view named gpkg_extensions (the standard allows one) takes no rows: the data type alone hides the tables.
        switch try kind(of: "gpkg_extensions", db) {
        case nil:
            try db.execute(sql: """
                CREATE TABLE gpkg_extensions (table_name TEXT, column_name TEXT, extension_name TEXT NOT NULL, \
                definition TEXT NOT NULL, scope TEXT NOT NULL, CONSTRAINT ge_tce UNIQUE (table_name, column_name, extension_name))
                """)
        case "table":
            break
        default:
            return
        }
        for table in tables {
            try db.execute(
                sql: "INSERT INTO main.gpkg_extensions (table_name, column_name, extension_name, definition, scope) VALUES (?, NULL, ?, ?, ?)",
                arguments: [table.name, extensionName, definition, scope])
        }
    }

    /// Reseed's tables that a GeoPackage seed holds but `gpkg_contents` does not register under
    /// ``dataType`` (a seed built before Reseed registered them), so GDAL lists them as layers;
    /// empty for a database that is not a GeoPackage.
    static func unregistered(_ db: Database) throws -> [String] {
        guard try isGeoPackage(db) else { return [] }
        return try tables.map(\.name).filter { name in
            let present = try db.tableExists(name)
            let registered = try Bool.fetchOne(
                db, sql: "SELECT EXISTS (SELECT 1 FROM main.gpkg_contents WHERE lower(table_name) = lower(?) AND data_type = ?)",
                arguments: [name, dataType]) ?? false
            return present && !registered
        }
    }

    /// The condition that keeps the rows of `table` other than Reseed's registration, for
    /// `reseed init --from` a seed (whose build registers its tables anew); nil when `table` holds none.
    static func userRows(of table: String) -> String? {
        guard ["gpkg_contents", "gpkg_extensions"].contains(table.sqlFolded) else { return nil }
        let names = tables.map { "'\($0.name)'" }.joined(separator: ", ")
        return "coalesce(lower(table_name), '') NOT IN (\(names))"
    }

    /// `table` or `view` for the schema object `name` of the main database; nil when there is none.
    private static func kind(of name: String, _ db: Database) throws -> String? {
        try String.fetchOne(db, sql: "SELECT type FROM main.sqlite_schema WHERE lower(name) = lower(?) AND type IN ('table', 'view')", arguments: [name])
    }
}
