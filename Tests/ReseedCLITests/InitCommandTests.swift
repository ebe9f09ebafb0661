import Foundation
import GRDB
import ReseedTestSupport
import Testing

/// `reseed init --from`, through the built binary.
@Suite struct InitCommandTests {
    /// A folder holding `App.sqlite`, written by `sql`.
    func folder(_ sql: String) throws -> TemporaryDirectory {
        let sandbox = try TemporaryDirectory(prefix: "reseed-init-cli")
        let queue = try DatabaseQueue(path: sandbox.appending("App.sqlite").path)
        try queue.writeWithoutTransaction { try $0.execute(sql: sql) }
        try queue.close()
        return sandbox
    }

    static let schema = """
        CREATE TABLE category(id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, icon BLOB);
        CREATE TABLE item(id INTEGER PRIMARY KEY, category_id INTEGER REFERENCES category(id), weight REAL);
        CREATE INDEX item_category ON item(category_id);
        CREATE TRIGGER item_added AFTER INSERT ON item BEGIN UPDATE category SET name = name || '+' WHERE id = new.category_id; END;
        INSERT INTO category(name, icon) VALUES ('a, "b"', X'00FF'), ('', NULL);
        INSERT INTO item VALUES (1, 1, 0.1), (2, 2, -0.0), (3, NULL, 1e308);
        PRAGMA user_version = 3;
        """

    @Test func initThenPackageBuildsASeedDiffFindsIdentical() throws {
        let sandbox = try folder(Self.schema)
        let initialised = try ReseedBinary.run(["init", "--from", "App.sqlite"], in: sandbox.url)
        #expect(initialised.status == 0, "\(initialised.stderr)")
        #expect(initialised.stdout.contains("0001_schema.sql"))
        #expect(initialised.stdout.contains("0002_category.sql: 2 rows (SQL: column 'icon' holds a BLOB"))
        #expect(initialised.stdout.contains("0003_item.csv: 3 rows"))
        #expect(initialised.stderr == "")
        let configuration = try jsonObject(String(contentsOf: sandbox.appending("reseed.json"), encoding: .utf8))
        #expect(configuration as NSDictionary == ["name": "App", "version": "1.0.0", "migrations": "Migrations", "output": "SeedData", "userVersion": 3] as NSDictionary)

        let packaged = try ReseedBinary.run(["package"], in: sandbox.url)
        #expect(packaged.status == 0, "\(packaged.stderr)")
        let diff = try ReseedBinary.run(["diff", "App.sqlite", "SeedData/App.sqlite", "--json"], in: sandbox.url)
        #expect(diff.status == 0, "\(diff.stderr)")
        let report = try jsonObject(diff.stdout)
        #expect((report["schema"] as? [Any])?.isEmpty == true)
        #expect((report["tables"] as? [Any])?.isEmpty == true)
        // The header value reseed.json carries reaches the seed through `reseed package`.
        let seed = try DatabaseQueue(path: sandbox.appending("SeedData/App.sqlite").path)
        defer { try? seed.close() }
        #expect(try seed.read { try Int.fetchOne($0, sql: "PRAGMA user_version") } == 3)
    }

    @Test func jsonListsTheStepsWritten() throws {
        let sandbox = try folder(Self.schema)
        try FileManager.default.createDirectory(at: sandbox.appending("project"), withIntermediateDirectories: false)
        let result = try ReseedBinary.run(["init", "--from", "App.sqlite", "--name", "triage", "--version", "2.0.0", "--directory", "project", "--json"], in: sandbox.url)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.split(separator: "\n").count == 1)
        let report = try jsonObject(result.stdout)
        #expect(report["configuration"] as? String == sandbox.appending("project/reseed.json").path)
        let steps = try #require(report["steps"] as? [[String: Any]])
        #expect(steps.map { $0["file"] as? String } == ["0001_schema.sql", "0002_category.sql", "0003_item.csv", "0004_sqlite_sequence.sql", "0005_indexes_views_triggers.sql"])
        #expect(steps[2]["sqlBecause"] is NSNull)
        #expect(steps[1]["rows"] as? Int == 2)
        #expect((report["notCarried"] as? [String])?.isEmpty == true)
        let configuration = try jsonObject(String(contentsOf: sandbox.appending("project/reseed.json"), encoding: .utf8))
        #expect(configuration["name"] as? String == "triage")
        #expect(configuration["version"] as? String == "2.0.0")
    }

    @Test func refusesToOverwriteNamingTheFile() throws {
        let sandbox = try folder("CREATE TABLE t(a); INSERT INTO t VALUES (1);")
        try Data("{\"name\": \"mine\"}".utf8).write(to: sandbox.appending("reseed.json"))
        let result = try ReseedBinary.run(["init", "--from", "App.sqlite"], in: sandbox.url)
        #expect(result.status == 1)
        #expect(result.stderrLines == ["reseed: \(sandbox.appending("reseed.json").path): already exists, and reseed init replaces a project only when forced; pass --force to replace it"])
        #expect(try String(contentsOf: sandbox.appending("reseed.json"), encoding: .utf8) == "{\"name\": \"mine\"}")
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.url.path).sorted() == ["App.sqlite", "reseed.json"])
    }

    @Test func createsTheDirectoryAndItsMissingParents() throws {
        let sandbox = try folder("CREATE TABLE t(a); INSERT INTO t VALUES (1);")
        let result = try ReseedBinary.run(["init", "--from", "App.sqlite", "--directory", "new/deep/project"], in: sandbox.url)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr == "")
        let project = sandbox.appending("new/deep/project")
        #expect(try FileManager.default.contentsOfDirectory(atPath: project.path).sorted() == ["Migrations", "reseed.json"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: project.appendingPathComponent("Migrations").path).sorted() == ["0001_schema.sql", "0002_t.sql"])
        let packaged = try ReseedBinary.run(["package"], in: project)
        #expect(packaged.status == 0, "\(packaged.stderr)")
    }

    @Test func forceReplacesTheProjectAndAFailedForceKeepsTheOldOne() throws {
        let sandbox = try folder("CREATE TABLE t(a); INSERT INTO t VALUES (1);")
        let migrations = sandbox.appending("Migrations")
        try FileManager.default.createDirectory(at: migrations, withIntermediateDirectories: false)
        try Data("CREATE TABLE old(a);\n".utf8).write(to: migrations.appendingPathComponent("0001_old.sql"))
        try Data("{\"name\": \"mine\"}".utf8).write(to: sandbox.appending("reseed.json"))

        // A source that cannot be imported: the failure leaves the old project as it was.
        let broken = sandbox.appending("Broken.sqlite")
        let queue = try DatabaseQueue(path: broken.path)
        try queue.writeWithoutTransaction { try $0.execute(sql: "PRAGMA foreign_keys = OFF; CREATE TABLE parent(id INTEGER PRIMARY KEY); CREATE TABLE child(p REFERENCES parent(id)); INSERT INTO child VALUES (9);") }
        try queue.close()
        let failed = try ReseedBinary.run(["init", "--from", "Broken.sqlite", "--force"], in: sandbox.url)
        #expect(failed.status == 1)
        #expect(failed.stderrLines.count == 1, "\(failed.stderr)")
        #expect(try String(contentsOf: sandbox.appending("reseed.json"), encoding: .utf8) == "{\"name\": \"mine\"}")
        #expect(try FileManager.default.contentsOfDirectory(atPath: migrations.path) == ["0001_old.sql"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.url.path).sorted() == ["App.sqlite", "Broken.sqlite", "Migrations", "reseed.json"])

        let replaced = try ReseedBinary.run(["init", "--from", "App.sqlite", "--force"], in: sandbox.url)
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: migrations.path).sorted() == ["0001_schema.sql", "0002_t.sql"])
        #expect(try jsonObject(String(contentsOf: sandbox.appending("reseed.json"), encoding: .utf8))["name"] as? String == "App")
        // Nothing left aside: no temp folder holding the old project.
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.url.path).sorted() == ["App.sqlite", "Broken.sqlite", "Migrations", "reseed.json"])
    }

    @Test func refusesAMissingDatabase() throws {
        let sandbox = try TemporaryDirectory(prefix: "reseed-init-cli")
        let result = try ReseedBinary.run(["init", "--from", "Missing.sqlite"], in: sandbox.url)
        #expect(result.status == 1)
        #expect(result.stderrLines.count == 1)
        #expect(result.stderr.contains("Missing.sqlite: cannot read the database"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.url.path).isEmpty)
    }
}
