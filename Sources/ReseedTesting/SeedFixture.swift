import Foundation
import Reseed
import ReseedPackaging

/// Real seeds built in a few lines, for tests: SQL in, a packaged seed (database and manifest) out.
///
/// ```swift
/// let seed = try SeedFixture(name: "triage", version: "1.0.0", sql: [
///     "CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT)",
///     "INSERT INTO item (label) VALUES ('one'), ('two')",
/// ]).build(in: sandbox.appending("seed-1.0.0"))
/// ```
public struct SeedFixture: Sendable {
    public var name: String
    public var version: String
    /// Statements of the fixture's one SQL step, in order.
    public var sql: [String]
    /// Extra data steps: file name (`0002_item.csv`) and content.
    public var files: [(name: String, content: String)]
    /// Random bytes to add (as 1 MiB blobs in a `padding` table) so the seed reaches a size. Default 0.
    public var paddingBytes: Int
    /// How the seed file is compressed, as `reseed package --compress` does it; nil (the default)
    /// builds `<name>.sqlite` itself.
    public var compression: SeedManifest.Compression?

    public init(name: String, version: String, sql: [String], files: [(name: String, content: String)] = [], paddingBytes: Int = 0) {
        self.name = name
        self.version = version
        self.sql = sql
        self.files = files
        self.paddingBytes = paddingBytes
    }

    /// This fixture with rows added to `table` by a JSON step (keys are columns; values are
    /// strings, numbers, booleans or `NSNull()`).
    ///
    /// ```swift
    /// let fixture = SeedFixture(name: "triage", version: "1.0.0", sql: ["CREATE TABLE level (id INTEGER PRIMARY KEY, name TEXT)"])
    ///     .adding(rows: [["id": 1, "name": "Immediate"], ["id": 2, "name": "Urgent"]], to: "level")
    /// ```
    public func adding(rows: [[String: any Sendable]], to table: String) throws -> SeedFixture {
        let json = try JSONSerialization.data(withJSONObject: rows, options: [.sortedKeys])
        var copy = self
        copy.files.append((name: String(format: "%04d_%@.json", files.count + 2, table), content: String(decoding: json, as: UTF8.self)))
        return copy
    }

    /// Writes the steps to `folder/Migrations`, builds into `folder`, and returns the seed.
    ///
    /// - Throws: ``PackagingError`` when the SQL or the data do not build.
    public func build(in folder: URL) throws -> Seed {
        let migrations = folder.appendingPathComponent("Migrations")
        try FileManager.default.createDirectory(at: migrations, withIntermediateDirectories: true)
        var statements = sql
        if paddingBytes > 0 {
            let blob = 1 << 20
            let count = (paddingBytes + blob - 1) / blob
            statements.append("CREATE TABLE padding (id INTEGER PRIMARY KEY, bytes BLOB NOT NULL)")
            statements.append("""
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(count))
                INSERT INTO padding (bytes) SELECT randomblob(\(blob)) FROM n
                """)
        }
        let script = statements.map { $0.hasSuffix(";") ? $0 : $0 + ";" }.joined(separator: "\n")
        try Data(script.utf8).write(to: migrations.appendingPathComponent("0001_fixture.sql"))
        for file in files {
            try Data(file.content.utf8).write(to: migrations.appendingPathComponent(file.name))
        }
        var builder = SeedBuilder(migrations: migrations, output: folder, name: name, version: version)
        builder.compression = compression
        let result = try builder.build()
        return Seed(manifestURL: result.manifestURL, manifest: result.manifest)
    }
}
