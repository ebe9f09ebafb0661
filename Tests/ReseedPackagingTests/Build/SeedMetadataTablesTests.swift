import Foundation
import GRDB
import Reseed
@testable import ReseedPackaging
import ReseedSystem
import ReseedTestSupport
import Testing

/// Reseed's own tables in a seed: registered in a GeoPackage so GDAL does not list them as layers,
/// and the seeds built before that stay readable. (GDAL itself
/// reads the seeds in `ReseedCLITests`' `GeoPackageSeedTests`.)
@Suite struct SeedMetadataTablesTests {
    /// The GeoPackage core tables, as the standard's Annex C defines them, and one attributes table.
    static let geoPackage = [
        "0001_geopackage.sql": """
            CREATE TABLE gpkg_spatial_ref_sys (srs_name TEXT NOT NULL, srs_id INTEGER PRIMARY KEY, organization TEXT NOT NULL,
              organization_coordsys_id INTEGER NOT NULL, definition TEXT NOT NULL, description TEXT);
            INSERT INTO gpkg_spatial_ref_sys VALUES ('Undefined geographic SRS', 0, 'NONE', 0, 'undefined', NULL);
            CREATE TABLE gpkg_contents (table_name TEXT NOT NULL PRIMARY KEY, data_type TEXT NOT NULL, identifier TEXT UNIQUE,
              description TEXT DEFAULT '', last_change DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
              min_x DOUBLE, min_y DOUBLE, max_x DOUBLE, max_y DOUBLE, srs_id INTEGER,
              CONSTRAINT fk_gc_r_srs_id FOREIGN KEY (srs_id) REFERENCES gpkg_spatial_ref_sys(srs_id));
            CREATE TABLE codes (fid INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL, code TEXT);
            INSERT INTO codes (code) VALUES ('a'), ('b');
            INSERT INTO gpkg_contents (table_name, data_type, identifier, last_change) VALUES ('codes', 'attributes', 'codes', '2024-01-01T00:00:00.000Z');
            PRAGMA application_id = 1196444487;
            """,
    ]

    static func registrations(_ db: Database) throws -> (contents: [String], extensions: [String]) {
        let contents = try String.fetchAll(db, sql: "SELECT table_name || ' ' || data_type || ' ' || last_change FROM gpkg_contents WHERE data_type <> 'attributes' ORDER BY table_name")
        let extensions = try db.tableExists("gpkg_extensions")
            ? String.fetchAll(db, sql: "SELECT table_name || ' ' || extension_name || ' ' || scope FROM gpkg_extensions ORDER BY table_name") : []
        return (contents, extensions)
    }

    @Test func aGeoPackageSeedRegistersReseedsTablesUnderADataTypeOfTheirOwn() throws {
        let sandbox = try MigrationsSandbox(Self.geoPackage)
        let result = try sandbox.build(name: "map", version: "1.0.0")
        let registered = try sandbox.read(result) { try Self.registrations($0) }
        #expect(registered.contents == [
            "reseed_metadata reseed-metadata 1970-01-01T00:00:00.000Z", "reseed_steps reseed-metadata 1970-01-01T00:00:00.000Z",
        ])
        // The GeoPackage had no gpkg_extensions: the build created it, as the standard defines it.
        #expect(registered.extensions == ["reseed_metadata reseed_seed_metadata write-only", "reseed_steps reseed_seed_metadata write-only"])
        let read = try sandbox.read(result) { try SeedMetadata.read($0) }
        #expect(read?.name == "map" && read?.version == "1.0.0" && read?.steps.count == 1)
        let report = try SeedVerifier(seed: result.manifestURL).verify()
        #expect(report.isClean && report.notes.isEmpty, "\(report.findings) \(report.notes)")
    }

    @Test func aDatabaseThatIsNoGeoPackageGetsNoGeoPackageTables() throws {
        let sandbox = try MigrationsSandbox(["0001_tiles.sql": """
            CREATE TABLE metadata (name TEXT, value TEXT);
            CREATE TABLE tiles (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB);
            CREATE UNIQUE INDEX tile_index ON tiles (zoom_level, tile_column, tile_row);
            INSERT INTO metadata VALUES ('name', 'tiny'), ('format', 'png');
            """])
        let result = try sandbox.build(name: "tiles", version: "1.0.0")
        let tables = try sandbox.read(result) { try String.fetchAll($0, sql: "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name") }
        #expect(tables == ["metadata", "reseed_metadata", "reseed_steps", "tiles"])
    }

    @Test func aStepThatRegistersReseedsNameFailsTheBuildNamingIt() throws {
        var steps = Self.geoPackage
        steps["0002_register.sql"] = "INSERT INTO gpkg_contents (table_name, data_type, last_change) VALUES ('reseed_metadata', 'attributes', '2024-01-01T00:00:00.000Z');"
        let error = try #require(buildError(try MigrationsSandbox(steps)))
        #expect(error.code == .database && error.step == .build)
        #expect(error.message == "gpkg_contents refused the row that registers Reseed's table reseed_metadata under the data type 'reseed-metadata' "
            + "(UNIQUE constraint failed: gpkg_contents.table_name): the steps must leave that name to Reseed and accept that data type")
    }

    /// `reseed init --from` a GeoPackage seed: its steps leave out the rows that register Reseed's
    /// tables, so the next build registers them once, as if the database had never been a seed.
    @Test func adoptingAGeoPackageSeedCarriesNoRegistrationRows() throws {
        let sandbox = try MigrationsSandbox(Self.geoPackage)
        let first = try sandbox.build(name: "map", version: "1.0.0")
        let project = try TemporaryDirectory(prefix: "reseed-adopt-gpkg")
        _ = try ProjectImporter(source: first.seedURL, directory: project.url, name: "map", version: "1.1.0").run()
        let steps = try FileManager.default.contentsOfDirectory(atPath: project.appending("Migrations").path)
        let text = try steps.map { try String(contentsOf: project.appending("Migrations/\($0)"), encoding: .utf8) }.joined()
        #expect(!text.contains("reseed-metadata") && !text.contains("reseed_seed_metadata"), "\(text)")
        let second = try SeedBuilder(migrations: project.appending("Migrations"), output: project.appending("SeedData"), name: "map", version: "1.1.0").build()
        let registered = try DatabaseQueue(path: second.seedURL.path).read { try Self.registrations($0) }
        #expect(registered.contents.count == 2 && registered.extensions.count == 2, "\(registered)")
    }

    /// A GeoPackage seed as Reseed built them before it registered its tables: its metadata reads
    /// as before; `verify` passes it with a note saying GDAL lists its tables and how to change that.
    @Test func aSeedBuiltBeforeStaysReadableAndVerifiesWithANote() throws {
        let sandbox = try MigrationsSandbox(Self.geoPackage)
        let result = try sandbox.build(name: "map", version: "1.0.0")
        try LegacySeed.rewrite(result.manifestURL)
        let read = try sandbox.read(result) { db in (try SeedMetadata.read(db), try Self.registrations(db)) }
        #expect(read.1.contents.isEmpty && read.1.extensions.isEmpty)
        #expect(read.0?.name == "map" && read.0?.version == "1.0.0" && read.0?.steps.count == 1)
        let report = try SeedVerifier(seed: result.manifestURL).verify()
        #expect(report.isClean, "\(report.findings)")
        #expect(report.notes == [
            "reseed_metadata and reseed_steps are not registered in gpkg_contents, so GDAL lists them as layers of this GeoPackage "
                + "(a seed built by an earlier Reseed): run reseed package to build it with the registration",
        ])
    }
}
