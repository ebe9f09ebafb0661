import Crypto
import Foundation
import GRDB
import Reseed
import ReseedPackaging
import ReseedSystem
import Testing

@Suite struct BuildTests {
    static let steps = [
        "0001_schema.sql": """
            CREATE TABLE parent (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
            CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL REFERENCES parent(id), label TEXT);
            CREATE TRIGGER child_label AFTER INSERT ON child WHEN NEW.label IS NULL BEGIN
                UPDATE child SET label = 'unnamed; default' WHERE id = NEW.id;
            END;
            """,
        "0002_parent.csv": "id,name\n1,one\n2,two\n",
        "0003_child.json": "[{\"id\": 1, \"parent_id\": 1}, {\"id\": 2, \"parent_id\": 2, \"label\": \"x\"}]",
        "0004_index.sql": "CREATE INDEX child_by_parent ON child(parent_id);",
    ]

    @Test func buildRecordsStepsVersionAndPragmas() throws {
        let sandbox = try MigrationsSandbox(Self.steps)
        let result = try sandbox.build(name: "family", version: "3.1.0")
        #expect(result.manifest.steps.map(\.id) == ["0001_schema.sql", "0002_parent.csv", "0003_child.json", "0004_index.sql"])
        // The database's own header values: none of the steps sets them.
        #expect(result.manifest.userVersion == 0)
        #expect(result.manifest.applicationID == 0)
        #expect(result.manifest.pageSize == 4096)
        let (metadata, mode, label) = try sandbox.read(result) { db in
            (try SeedMetadata.read(db), try String.fetchOne(db, sql: "PRAGMA journal_mode"),
             try String.fetchOne(db, sql: "SELECT label FROM child WHERE id = 1"))
        }
        #expect(metadata?.name == "family")
        #expect(metadata?.version == "3.1.0")
        #expect(metadata?.steps == result.manifest.steps)
        #expect(mode == "delete")
        #expect(label == "unnamed; default")
        let bytes = try Data(contentsOf: result.seedURL)
        #expect(Int64(bytes.count) == result.manifest.size)
        #expect(SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() == result.manifest.sha256)
        #expect(try Data(contentsOf: result.manifestURL) == result.manifest.encoded())
    }

    @Test func sameStepsGiveTheSameBytesInAnotherFolderAtAnotherTime() throws {
        let first = try MigrationsSandbox(Self.steps)
        let a = try first.build(name: "family", version: "3.1.0")
        Thread.sleep(forTimeInterval: 1.1)
        let second = try MigrationsSandbox(Self.steps)
        for name in Self.steps.keys {
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_000_000)],
                                                  ofItemAtPath: second.migrations.appendingPathComponent(name).path)
        }
        let b = try second.build(name: "family", version: "3.1.0")
        #expect(a.manifest == b.manifest)
        #expect(try Data(contentsOf: a.seedURL) == Data(contentsOf: b.seedURL))
        #expect(try Data(contentsOf: a.manifestURL) == Data(contentsOf: b.manifestURL))
    }

    @Test func failingStatementReportsTheLineItStartsOn() throws {
        let sandbox = try MigrationsSandbox([
            "0001_schema.sql": "CREATE TABLE a (id INTEGER PRIMARY KEY);\n\n-- a comment\nINSERT INTO a VALUES (1);\n\nINSERT INTO\n  missing VALUES (2);\n",
        ])
        let error = try #require(buildError(sandbox))
        #expect(error.code == .sqlFailed)
        #expect(error.line == 6)
        #expect(error.message.contains("no such table: missing"))
        #expect(error.description.hasSuffix("0001_schema.sql:6: no such table: missing"))
    }

    @Test func aMissingMigrationsFolderKeepsItsErrno() throws {
        let sandbox = try MigrationsSandbox()
        try FileManager.default.removeItem(at: sandbox.migrations)
        let error = try #require(buildError(sandbox))
        #expect(error.code == .io)
        #expect(error.path == sandbox.migrations.path)
        #expect(error.errno?.rawValue == ENOENT)
    }

    @Test func foreignKeyViolationAfterAStepFailsTheBuild() throws {
        var steps = Self.steps
        steps["0003_child.json"] = "[{\"id\": 1, \"parent_id\": 99}]"
        let sandbox = try MigrationsSandbox(steps)
        let error = try #require(buildError(sandbox))
        #expect(error.path?.hasSuffix("0003_child.json") == true)
        #expect(error.message.hasPrefix("after this step, the row with rowid 1 of table 'child' names a row of 'parent' that does not exist"))
    }

    /// What a killed build left (its work files, a journal, a manifest's temp file) goes at the
    /// next build; files of other names stay.
    @Test func aBuildRemovesWhatAnInterruptedOneLeft() throws {
        let sandbox = try MigrationsSandbox(Self.steps)
        try FileManager.default.createDirectory(at: sandbox.output, withIntermediateDirectories: true)
        let leftovers = [".test.sqlite.reseed-tmp-0123456789abcdef", ".test.sqlite.reseed-tmp-0123456789abcdef-journal",
                         ".test.sqlite.reseed-tmp-fedcba9876543210", ".test.manifest.json.reseed-tmp-00000000000000ff"]
        for name in leftovers + ["notes.txt"] {
            try Data("x".utf8).write(to: sandbox.output.appendingPathComponent(name))
        }
        _ = try sandbox.build(name: "test", version: "1.0.0")
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.output.path).sorted() == ["notes.txt", "test.manifest.json", "test.sqlite"])
    }

    /// Two builds into one folder take turns; one that waits too long says so.
    @Test func aBuildWaitsForAnotherInTheSameFolder() throws {
        let sandbox = try MigrationsSandbox(Self.steps)
        let folder = try FileSystem().openDirectory(sandbox.output, create: true)
        let held = try #require(try StoreLock.acquireFolder(folder, timeout: .seconds(1)))
        var builder = SeedBuilder(migrations: sandbox.migrations, output: sandbox.output, name: "test", version: "1.0.0")
        builder.lockTimeout = .milliseconds(100)
        let error = try #require(throws: PackagingError.self) { try builder.build() }
        #expect(error.code == .busy)
        #expect(error.path == sandbox.output.path)
        #expect(error.message.hasPrefix("another build is writing into this folder"))
        held.release()
        #expect(try builder.build().manifest.version == "1.0.0")
    }

    @Test func failedBuildLeavesTheEarlierArtifactUntouched() throws {
        let sandbox = try MigrationsSandbox(Self.steps)
        let good = try sandbox.build(name: "test", version: "1.0.0")
        let seedBefore = try Data(contentsOf: good.seedURL)
        let manifestBefore = try Data(contentsOf: good.manifestURL)
        try sandbox.write("0005_broken.sql", "CREATE TABLE oops (;")
        #expect(buildError(sandbox)?.code == .sqlFailed)
        #expect(try Data(contentsOf: good.seedURL) == seedBefore)
        #expect(try Data(contentsOf: good.manifestURL) == manifestBefore)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: sandbox.output.path).filter { $0.hasPrefix(".") }
        #expect(leftovers.isEmpty)
    }

    @Test(arguments: [
        ("0001_schema.sql", "0001_other.sql", PackagingError.Code.duplicateStepNumber),
        ("0001_schema.sql", "12_short.sql", .invalidStepName),
        ("0001_schema.sql", "0002_notes.txt", .invalidStepName),
        ("0001_schema.sql", "0002 spaced.sql", .invalidStepName),
    ])
    func badStepNamesAreRejectedNamingTheFile(first: String, second: String, code: PackagingError.Code) throws {
        let sandbox = try MigrationsSandbox([first: "CREATE TABLE a (id INTEGER);", second: "SELECT 1;"])
        let error = try #require(buildError(sandbox))
        #expect(error.code == code)
        #expect(error.path?.hasSuffix(second) == true || error.message.contains(second))
    }

    @Test func dotfilesAndReadmeAreIgnored() throws {
        let sandbox = try MigrationsSandbox(["0001_schema.sql": "CREATE TABLE a (id INTEGER);", "README.md": "# notes", ".DS_Store": "x"])
        #expect(try sandbox.build().manifest.steps.map(\.id) == ["0001_schema.sql"])
    }

    @Test func checksumIgnoresLineEndingsAndByteOrderMark() {
        let unix = MigrationStep.checksum(of: Array("a\nb\n".utf8))
        #expect(MigrationStep.checksum(of: Array("a\r\nb\r\n".utf8)) == unix)
        #expect(MigrationStep.checksum(of: Array("\u{FEFF}a\rb\r".utf8)) == unix)
        #expect(MigrationStep.checksum(of: Array("a\nb".utf8)) != unix)
    }

    @Test func committedExampleSeedMatchesAFreshBuild() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let committed = try Seed(at: root.appendingPathComponent("SeedData"))
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("reseed-example-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: output) }
        let rebuilt = try SeedBuilder(migrations: root.appendingPathComponent("Migrations"), output: output,
                                      name: committed.manifest.name, version: committed.manifest.version).build()
        #expect(rebuilt.manifest == committed.manifest, "SeedData/ is stale: run `swift run reseed package` and commit SeedData/")
        #expect(try Data(contentsOf: rebuilt.seedURL) == Data(contentsOf: committed.fileURL))
    }
}
