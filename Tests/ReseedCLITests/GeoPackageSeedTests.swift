import Foundation
import GRDB
import Reseed
import ReseedTestSupport
import Testing

/// GDAL's command-line tools (Debian's `gdal-bin`), found on the `PATH`.
enum GDAL {
    static func tool(_ name: String) -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { URL(fileURLWithPath: String($0)).appendingPathComponent(name) }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    static let isAvailable = ["ogrinfo", "ogr2ogr", "gdalinfo", "gdal_translate", "gdal_create"].allSatisfy { tool($0) != nil }

    /// Runs GDAL tool `name`; its stdout, after checking it exited 0 with nothing on stderr (GDAL
    /// prints its warnings and errors there).
    @discardableResult
    static func run(_ name: String, _ arguments: [String], in directory: URL) throws -> String {
        let executable = try #require(tool(name))
        let result = try ReseedBinary.start(arguments, in: directory, executable: executable).wait()
        #expect(result.status == 0 && result.stderr.isEmpty, "\(name) \(arguments): \(result.stderr)")
        return result.stdout
    }

    /// A link `name` in `directory` to `target`, which GDAL then opens by the link's extension: it
    /// opens a `.sqlite` GeoPackage with a warning about the extension, and no `.sqlite` MBTiles file.
    static func link(_ name: String, to target: URL, in directory: URL) throws -> String {
        try FileManager.default.createSymbolicLink(at: directory.appendingPathComponent(name), withDestinationURL: target)
        return name
    }

    /// What GDAL lists as the layers of `file`, with LIST_ALL_TABLES at `listAllTables`.
    static func layers(_ file: String, listAllTables: String = "AUTO", in directory: URL) throws -> [String] {
        try run("ogrinfo", ["-ro", "-q", "-so", "-oo", "LIST_ALL_TABLES=\(listAllTables)", file], in: directory)
            .split(separator: "\n").map(String.init)
    }

    /// Every feature of every layer of `file`, as `ogrinfo -al` prints them.
    static func features(_ file: String, in directory: URL) throws -> String {
        try run("ogrinfo", ["-ro", "-q", "-al", file], in: directory)
    }
}

/// A GeoPackage or MBTiles file made by GDAL, adopted with `reseed init --from`, packaged, and read
/// by GDAL again: GDAL sees the seed as it saw the source, Reseed's tables nowhere among its layers.
@Suite(.enabled(if: GDAL.isAvailable, "GDAL's tools (Debian's gdal-bin: ogrinfo, ogr2ogr, gdalinfo, gdal_translate, gdal_create) are not on the PATH"),
       .timeLimit(.minutes(10)))
struct GeoPackageSeedTests {
    /// How the source GeoPackage lists its tables to GDAL.
    enum Source: String, CaseIterable, CustomTestStringConvertible {
        /// Feature tables only, and a table `gpkg_contents` does not name: GDAL lists every table
        /// it does not know to be the GeoPackage's own, which is how it listed Reseed's.
        case featuresOnly
        /// An `attributes` table too: GDAL lists only what `gpkg_contents` registers.
        case withAttributes

        var testDescription: String { rawValue }
    }

    /// `source.gpkg` in `directory`, written by GDAL from GeoJSON and CSV: 2,000 places (the first
    /// named `label`), a line, and a table GeoPackage does not register or an attributes table.
    static func makeGeoPackage(_ source: Source, label: String = "a", in directory: URL) throws {
        let places = (1...2000).map { index in
            let name = index == 1 ? label : "place \(index) \(String(index * 2654435761 % 4294967291, radix: 16))"
            return #"{"type": "Feature", "properties": {"name": "\#(name)", "pop": \#(index * 37 % 1000)}, "#
                + #""geometry": {"type": "Point", "coordinates": [\#(Double(index % 360) - 180 + 0.25), \#(Double(index % 170) - 85 + 0.5)]}}"#
        }
        try Data(#"{"type": "FeatureCollection", "features": [\#(places.joined(separator: ",\n"))]}"#.utf8)
            .write(to: directory.appendingPathComponent("places.geojson"))
        try Data("""
            {"type": "FeatureCollection", "features": [
            {"type": "Feature", "properties": {"kind": "river"}, "geometry": {"type": "LineString", "coordinates": [[0, 0], [1, 1], [2, 0]]}}]}
            """.utf8).write(to: directory.appendingPathComponent("lines.geojson"))
        try Data("code,label\n1,one\n2,two\n".utf8).write(to: directory.appendingPathComponent("codes.csv"))
        try? FileManager.default.removeItem(at: directory.appendingPathComponent("source.gpkg"))
        try GDAL.run("ogr2ogr", ["-f", "GPKG", "source.gpkg", "places.geojson", "-nln", "places"], in: directory)
        try GDAL.run("ogr2ogr", ["-f", "GPKG", "-update", "source.gpkg", "lines.geojson", "-nln", "lines"], in: directory)
        switch source {
        case .featuresOnly:
            let queue = try DatabaseQueue(path: directory.appendingPathComponent("source.gpkg").path)
            try queue.write { try $0.execute(sql: "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); INSERT INTO notes VALUES (1, 'kept')") }
            try queue.close()
        case .withAttributes:
            try GDAL.run("ogr2ogr", ["-f", "GPKG", "-update", "source.gpkg", "codes.csv", "-nln", "codes"], in: directory)
        }
    }

    /// `reseed init --from source --name items --version version` into `project/` (replacing what
    /// an earlier one wrote), then `reseed package`; the manifest's URL.
    static func adopt(_ source: String, version: String = "1.0.0", in directory: URL) throws -> URL {
        let initialised = try ReseedBinary.run(
            ["init", "--from", source, "--name", "items", "--version", version, "--directory", "project", "--force"], in: directory)
        #expect(initialised.status == 0, "\(initialised.stderr)")
        let packaged = try ReseedBinary.run(["package"], in: directory.appendingPathComponent("project"))
        #expect(packaged.status == 0, "\(packaged.stderr)")
        return directory.appendingPathComponent("project/SeedData/items.manifest.json")
    }

    static func integrityCheck(_ path: String) throws -> [String] {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { try String.fetchAll($0, sql: "PRAGMA integrity_check") }
    }

    @Test(arguments: Source.allCases)
    func gdalListsAndReadsTheLayersOfTheSourceAndNoOthers(_ source: Source) throws {
        let sandbox = try TemporaryDirectory(prefix: "reseed-gpkg")
        try Self.makeGeoPackage(source, in: sandbox.url)
        _ = try Self.adopt("source.gpkg", in: sandbox.url)
        let seed = try GDAL.link("seed.gpkg", to: sandbox.appending("project/SeedData/items.sqlite"), in: sandbox.url)
        let listed = try GDAL.layers("source.gpkg", in: sandbox.url)
        #expect(listed == (source == .featuresOnly ? ["1: places (Point)", "2: lines (Line String)", "3: notes (None)"]
                                                   : ["1: places (Point)", "2: lines (Line String)", "3: codes (None)"]))
        #expect(try GDAL.layers(seed, in: sandbox.url) == listed)
        #expect(try GDAL.layers(seed, listAllTables: "YES", in: sandbox.url) == GDAL.layers("source.gpkg", listAllTables: "YES", in: sandbox.url))
        #expect(try GDAL.features(seed, in: sandbox.url) == GDAL.features("source.gpkg", in: sandbox.url))
        #expect(try Self.integrityCheck(sandbox.appending("project/SeedData/items.sqlite").path) == ["ok"])
        let verified = try ReseedBinary.run(["verify", "project/SeedData"], in: sandbox.url)
        #expect(verified.status == 0 && verified.stderr.isEmpty, "\(verified.stdout) \(verified.stderr)")
        #expect(verified.stdout.hasPrefix("items 1.0.0 verified: "), "\(verified.stdout)")
    }

    /// Adopting the seed itself (an app whose shipped database was already a seed): the steps
    /// leave Reseed's registration out, and the next build registers the tables once.
    @Test func aGeoPackageSeedAdoptedAgainListsTheSameLayers() throws {
        let sandbox = try TemporaryDirectory(prefix: "reseed-gpkg-again")
        try Self.makeGeoPackage(.featuresOnly, in: sandbox.url)
        _ = try Self.adopt("source.gpkg", in: sandbox.url)
        try FileManager.default.copyItem(at: sandbox.appending("project/SeedData/items.sqlite"), to: sandbox.appending("seed.gpkg"))
        _ = try Self.adopt("seed.gpkg", version: "1.0.1", in: sandbox.url)
        let again = try GDAL.link("again.gpkg", to: sandbox.appending("project/SeedData/items.sqlite"), in: sandbox.url)
        #expect(try GDAL.layers(again, in: sandbox.url) == GDAL.layers("source.gpkg", in: sandbox.url))
    }

    /// An MBTiles file (`metadata` and `tiles`, what MBTiles readers look at): the seed keeps both
    /// untouched beside Reseed's two tables, and GDAL's MBTiles driver describes it as the source.
    @Test func anMBTilesSeedReadsAsItsSource() throws {
        let sandbox = try TemporaryDirectory(prefix: "reseed-mbtiles")
        try GDAL.run("gdal_create", [
            "-of", "GTiff", "-outsize", "256", "256", "-bands", "3", "-burn", "30", "-burn", "120", "-burn", "200",
            "-a_srs", "EPSG:3857", "-a_ullr", "-20037508.34", "20037508.34", "20037508.34", "-20037508.34", "world.tif",
        ], in: sandbox.url)
        try GDAL.run("gdal_translate", ["-q", "-of", "MBTILES", "world.tif", "source.mbtiles"], in: sandbox.url)
        _ = try Self.adopt("source.mbtiles", in: sandbox.url)
        let seed = try GDAL.link("seed.mbtiles", to: sandbox.appending("project/SeedData/items.sqlite"), in: sandbox.url)
        // gdalinfo names the file it describes; the rest must be the same.
        let describe = { (file: String) in try GDAL.run("gdalinfo", ["-nofl", file], in: sandbox.url).replacingOccurrences(of: file, with: "FILE") }
        #expect(try describe(seed) == describe("source.mbtiles"))
        let tables = { (path: String) -> [String] in
            var configuration = Configuration()
            configuration.readonly = true
            let queue = try DatabaseQueue(path: sandbox.appending(path).path, configuration: configuration)
            defer { try? queue.close() }
            return try queue.read { db in
                try String.fetchAll(db, sql: "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
                    + String.fetchAll(db, sql: "SELECT name || '=' || value FROM metadata ORDER BY name")
                    + String.fetchAll(db, sql: "SELECT zoom_level || '/' || tile_column || '/' || tile_row || ' ' || hex(tile_data) FROM tiles ORDER BY 1")
            }
        }
        let source = try tables("source.mbtiles")
        let packaged = try tables("project/SeedData/items.sqlite")
        #expect(packaged.filter { $0 != "reseed_metadata" && $0 != "reseed_steps" } == source)
        #expect(packaged.count == source.count + 2)
        #expect(try Self.integrityCheck(sandbox.appending("project/SeedData/items.sqlite").path) == ["ok"])
    }

    /// A GeoPackage seed built before Reseed registered its tables (GDAL lists both as layers and
    /// cannot read `reseed_metadata`) still launches, and updates by delta to a release GDAL reads
    /// as its source.
    @Test func aSeedBuiltBeforeLaunchesAndUpdatesByDeltaToOneGDALReadsAsTheSource() throws {
        let sandbox = try ChannelSandbox()
        let work = sandbox.directory.url
        try Self.makeGeoPackage(.featuresOnly, in: work)
        let first = try Self.adopt("source.gpkg", in: work)
        let bundled = sandbox.directory.appending("bundled")
        try FileManager.default.copyItem(at: first.deletingLastPathComponent(), to: bundled)
        let bundledManifest = bundled.appendingPathComponent("items.manifest.json")
        try LegacySeed.rewrite(bundledManifest)
        let legacy = try GDAL.link("bundled.gpkg", to: bundled.appendingPathComponent("items.sqlite"), in: work)
        let legacyLayers = try GDAL.layers(legacy, in: work).map { $0.split(separator: " ", maxSplits: 1).last.map(String.init) ?? "" }
        #expect(legacyLayers.sorted() == ["lines (Line String)", "notes (None)", "places (Point)", "reseed_metadata (None)", "reseed_steps (None)"])
        let unreadable = try ReseedBinary.start(["-ro", "-q", legacy, "reseed_metadata"], in: work, executable: #require(GDAL.tool("ogrinfo"))).wait()
        #expect(unreadable.stderr.contains("failed to prepare SQL: SELECT m._rowid_"), "\(unreadable.stderr)")

        let verified = try ReseedBinary.run(["verify", bundled.path])
        #expect(verified.status == 0 && verified.stdout.hasPrefix("items 1.0.0 verified: "), "\(verified.stdout) \(verified.stderr)")
        #expect(verified.stderr == "reseed: note: reseed_metadata and reseed_steps are not registered in gpkg_contents, so GDAL lists them "
            + "as layers of this GeoPackage (a seed built by an earlier Reseed): run reseed package to build it with the registration\n")

        let store = ["--seed", bundledManifest.path, "--data-dir", sandbox.dataDirectory.path]
        let launched = try ReseedBinary.run(["launch"] + store)
        #expect(launched.status == 0, "\(launched.stderr)")
        let status = try ReseedBinary.run(["status"] + store)
        #expect(status.status == 0 && status.stdout.contains("\nup to date\n"), "\(status.stdout) \(status.stderr)")

        try Self.makeGeoPackage(.featuresOnly, label: "renamed", in: work)
        let next = try Self.adopt("source.gpkg", version: "1.1.0", in: work)
        try sandbox.publish(Seed(at: bundledManifest), compressed: true)
        let offered = try Seed(at: next)
        #expect(try sandbox.publish(offered, compressed: true).manifest.deltas.count == 1)
        let publicKey = sandbox.directory.appending("channel.pub")
        try Data((sandbox.key.publicKey.base64 + "\n").utf8).write(to: publicKey)
        let update = try ReseedBinary.run(["update", "--channel", sandbox.server.url.absoluteString, "--public-key", publicKey.path, "--json"] + store)
        #expect(update.status == 0, "\(update.stderr)")
        #expect((try? jsonObject(update.stdout))?["method"] as? String == "delta", "\(update.stdout)")
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash)
        let installed = try GDAL.link("store.gpkg", to: sandbox.storeURL, in: work)
        #expect(try GDAL.layers(installed, in: work) == GDAL.layers("source.gpkg", in: work))
        #expect(try GDAL.features(installed, in: work) == GDAL.features("source.gpkg", in: work))
        #expect(try GDAL.features(installed, in: work).contains("name (String) = renamed"))
    }
}
