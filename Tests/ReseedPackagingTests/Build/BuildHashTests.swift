import Foundation
import GRDB
@testable import Reseed
@testable import ReseedPackaging
import ReseedTestSupport
import Testing

/// The build hashes the database it built while `VACUUM INTO` writes the compact copy it ships:
/// the manifest's hashes must be the shipped file's, and a hash that fails must fail the build.
@Suite struct BuildHashTests {
    /// Every kind of table whose content the compact copy must carry as it was: an external-content
    /// FTS5 index, FTS4, an R-tree, key-less tables whose rowids are content (one with a CHECK,
    /// rowids with gaps), a WITHOUT ROWID table, generated columns, statistics, header fields.
    static let everyKind = AdoptionCorpusTests.externalContentSchema + """
        CREATE VIRTUAL TABLE note USING fts4(body);
        CREATE VIRTUAL TABLE place USING rtree(id, min_x, max_x, min_y, max_y);
        CREATE TABLE spaced (a TEXT CHECK (a <> ''), b);
        CREATE TABLE loose (v);
        CREATE TABLE pair (k TEXT, n INTEGER, v, PRIMARY KEY (k, n)) WITHOUT ROWID;
        CREATE TABLE computed (x INTEGER PRIMARY KEY, y INTEGER, doubled INTEGER GENERATED ALWAYS AS (y * 2) STORED);
        CREATE INDEX loose_v ON loose (v);
        INSERT INTO article VALUES (1, 'Storm', 'heavy rain'), (4, 'Sun', 'no rain');
        INSERT INTO note(docid, body) VALUES (3, 'running water'), (8, 'still lakes');
        INSERT INTO place VALUES (1, 0, 1, 0, 1), (2, -5.5, 5.5, 2, 3);
        INSERT INTO spaced (rowid, a, b) VALUES (5, 'x', 1), (9, 'y', x'00ff'), (40, 'z', NULL);
        INSERT INTO loose (rowid, v) VALUES (2, 'b'), (7, 'a'), (8, 1.5);
        DELETE FROM loose WHERE rowid = 7;
        INSERT INTO pair VALUES ('a', 2, 'two'), ('a', 1, 1);
        INSERT INTO computed (x, y) VALUES (1, 21), (2, NULL);
        ANALYZE;
        PRAGMA user_version = 12;
        PRAGMA application_id = 77;
        """

    /// The build records the content hash and leaves the incremental one to `reseed publish`, the
    /// only place a delta needs it.
    @Test func theManifestHoldsTheShippedFilesContentHash() throws {
        let sandbox = try MigrationsSandbox(["0001_every.sql": Self.everyKind])
        let result = try sandbox.build()
        let manifest = result.manifest
        #expect(manifest.contentHash == (try SeedContentHash.compute(path: result.seedURL.path)))
        #expect(manifest.incrementalContentHash == nil)
        #expect(try sandbox.read(result) { try Int.fetchOne($0, sql: "PRAGMA user_version") } == 12)
        #expect(try sandbox.read(result) { try Int64.fetchAll($0, sql: "SELECT rowid FROM spaced ORDER BY rowid") } == [5, 9, 40])
    }

    /// A table the content hash refuses (its columns hide its rowid) fails the build with the
    /// hash's sentence, on the thread beside the checks, and the folder keeps the previous build.
    @Test func aTableTheContentHashRefusesFailsTheBuildAndKeepsThePreviousSeed() throws {
        let sandbox = try MigrationsSandbox(["0001_fine.sql": "CREATE TABLE fine (a); INSERT INTO fine VALUES (1);"])
        let previous = try sandbox.build()
        let before = try sandbox.outputFiles().map { try Data(contentsOf: sandbox.output.appendingPathComponent($0)) }
        try sandbox.write("0002_hidden.sql", "CREATE TABLE hidden (rowid, _rowid_, oid); INSERT INTO hidden VALUES (1, 2, 3);")
        let error = try #require(buildError(sandbox))
        #expect(error.message.contains("table hidden has no primary key and its columns hide its rowid"))
        #expect(sandbox.outputFiles() == [previous.manifestURL.lastPathComponent, previous.seedURL.lastPathComponent].sorted())
        #expect(try sandbox.outputFiles().map { try Data(contentsOf: sandbox.output.appendingPathComponent($0)) } == before)
    }
}
