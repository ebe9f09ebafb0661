import Foundation
import GRDB
import Reseed
@testable import ReseedPackaging
import ReseedSystem
import ReseedTestSupport
import Testing

/// `reseed init --from` and `reseed package` on every kind of table real apps ship, each alone and
/// all together: the seed answers every query as the source does, passes every integrity check,
/// and its `sqlite3 .dump` (without Reseed's own tables) is the source's, once `VACUUM` has put the
/// source's schema in the order every built seed has (stored tables, then virtual tables, views
/// and triggers).
@Suite struct AdoptionCorpusTests {
    /// One kind of table: the SQL that makes and fills it, and queries whose answers must not change.
    struct Kind: CustomTestStringConvertible, Sendable {
        var name: String
        var sql: String
        var queries: [String]
        var testDescription: String { name }
    }

    /// An FTS5 index of a content table, kept by triggers (the shape SQLite's documentation gives).
    static let externalContentSchema = """
        CREATE TABLE article(id INTEGER PRIMARY KEY, headline TEXT NOT NULL, text TEXT);
        CREATE VIRTUAL TABLE article_fts USING fts5(headline, text, content = 'article', content_rowid = 'id');
        CREATE TRIGGER article_ai AFTER INSERT ON article BEGIN
          INSERT INTO article_fts(rowid, headline, text) VALUES (new.id, new.headline, new.text); END;
        CREATE TRIGGER article_ad AFTER DELETE ON article BEGIN
          INSERT INTO article_fts(article_fts, rowid, headline, text) VALUES ('delete', old.id, old.headline, old.text); END;

        """

    static let kinds: [Kind] = [
        Kind(name: "fts3", sql: """
            CREATE VIRTUAL TABLE note3 USING fts3(title, body, tokenize=porter);
            INSERT INTO note3(docid, title, body) VALUES (3, 'Running water', 'rivers run fast'), (8, 'Still lakes', 'water that runs not');
            DELETE FROM note3 WHERE docid = 3; INSERT INTO note3(docid, title, body) VALUES (3, 'Running again', 'rivers ran');
            """, queries: [
                "SELECT docid, title, snippet(note3) FROM note3 WHERE note3 MATCH 'run*' ORDER BY docid",
                "SELECT docid, offsets(note3) FROM note3 WHERE note3 MATCH 'water'",
            ]),
        Kind(name: "fts4 with options", sql: """
            CREATE VIRTUAL TABLE note4 USING fts4(title, body, kind, notindexed=kind, prefix="2,3", order=desc, tokenize=unicode61 "remove_diacritics=2");
            INSERT INTO note4(docid, title, body, kind) VALUES (1, 'Café crème', 'équipe naïve', 'a'), (2, 'Cafe', 'equipe', 'b'), (40, 'Thé', 'noir', 'a');
            INSERT INTO note4(note4) VALUES ('optimize');
            """, queries: [
                "SELECT docid, title, kind FROM note4 WHERE note4 MATCH 'cafe' ORDER BY docid",
                "SELECT docid, hex(matchinfo(note4, 'pcnalx')) FROM note4 WHERE note4 MATCH 'eq*'",
            ]),
        Kind(name: "fts5 with a tokenizer, prefixes and a rank", sql: """
            CREATE VIRTUAL TABLE doc USING fts5(title, body, tag UNINDEXED, tokenize = 'porter unicode61 remove_diacritics 2', prefix = '2 3');
            INSERT INTO doc(rowid, title, body, tag) VALUES (1, 'Sorting things', 'a quick sort sorts quickly', 'x'),
              (7, 'Naïve résumé', 'searching the résumés of naive people', 'y'), (9, 'Sorts', 'sorting sorted sorts', NULL);
            INSERT INTO doc(doc, rank) VALUES ('rank', 'bm25(10.0, 1.0)');
            UPDATE doc SET body = 'quick sorts of things' WHERE rowid = 1;
            """, queries: [
                "SELECT rowid, bm25(doc), highlight(doc, 1, '[', ']') FROM doc WHERE doc MATCH 'sort' ORDER BY rank",
                "SELECT rowid, snippet(doc, 1, '<', '>', '…', 3), tag FROM doc WHERE doc MATCH 'resu*' ORDER BY rowid",
                "SELECT rowid FROM doc WHERE doc MATCH 'naive OR quick' ORDER BY rank",
            ]),
        Kind(name: "fts5 external content with its triggers", sql: externalContentSchema + """
            INSERT INTO article VALUES (1, 'Storm warning', 'heavy rain expected'), (2, 'Sunny days', 'no rain at all'), (3, 'Gone', 'deleted text');
            DELETE FROM article WHERE id = 3;
            """, queries: [
                "SELECT rowid, headline, bm25(article_fts) FROM article_fts WHERE article_fts MATCH 'rain' ORDER BY rank",
                "SELECT a.id FROM article a JOIN article_fts f ON f.rowid = a.id WHERE article_fts MATCH 'storm'",
            ]),
        Kind(name: "fts5 contentless", sql: """
            CREATE VIRTUAL TABLE seen USING fts5(words, content = '', columnsize = 0);
            INSERT INTO seen(rowid, words) VALUES (10, 'alpha beta'), (20, 'beta gamma'), (30, 'gamma delta epsilon');
            """, queries: [
                "SELECT rowid, bm25(seen) FROM seen WHERE seen MATCH 'beta OR gamma' ORDER BY rank",
                "SELECT rowid, words FROM seen WHERE seen MATCH 'delta'",
            ]),
        Kind(name: "r-tree with auxiliary columns, and rtree_i32", sql: """
            CREATE VIRTUAL TABLE place USING rtree(id, min_x, max_x, min_y, max_y, +label TEXT, +kind);
            INSERT INTO place VALUES (1, 0.1, 1.7, 2.0, 3.25, 'one', 1), (2, -5, 6, 7, 8, 'two', NULL), (30, 10, 11, 10, 11, 'far', X'00');
            CREATE VIRTUAL TABLE tile USING rtree_i32(id, x0, x1, y0, y1);
            INSERT INTO tile VALUES (1, 0, 10, 0, 10), (2, 5, 50, -3, 3);
            """, queries: [
                "SELECT id, min_x, max_x, label, kind FROM place WHERE min_x >= -10 AND max_x <= 7 ORDER BY id",
                "SELECT id FROM tile WHERE x1 >= 8 AND x0 <= 20 ORDER BY id",
            ]),
        Kind(name: "without rowid, strict, generated columns", sql: """
            CREATE TABLE code(system TEXT NOT NULL, code TEXT NOT NULL, label TEXT, PRIMARY KEY (system, code)) WITHOUT ROWID;
            CREATE TABLE measure(id INTEGER PRIMARY KEY, value REAL NOT NULL, unit TEXT NOT NULL, anything ANY) STRICT;
            CREATE TABLE box(w REAL, h REAL, area REAL GENERATED ALWAYS AS (w * h) STORED, label TEXT AS (printf('%gx%g', w, h)) VIRTUAL);
            INSERT INTO code VALUES ('icd', 'A01', 'Typhoid'), ('icd', 'A00', 'Cholera'), ('loinc', '8310-5', NULL);
            INSERT INTO measure VALUES (1, 36.6, 'C', 1), (2, 98.1, 'F', 'x'), (3, 0.5, 'l', X'01');
            INSERT INTO box(w, h) VALUES (2, 3), (1.5, 4);
            """, queries: [
                "SELECT * FROM code ORDER BY system, code",
                "SELECT id, typeof(anything), anything FROM measure",
                "SELECT rowid, w, h, area, label FROM box",
            ]),
        Kind(name: "autoincrement, partial and expression indexes, views, triggers", sql: """
            CREATE TABLE event(id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, at INTEGER, cancelled INTEGER DEFAULT 0);
            CREATE INDEX event_live ON event(at) WHERE cancelled = 0;
            CREATE INDEX event_lower ON event(lower(name));
            CREATE VIEW upcoming AS SELECT name, at FROM event WHERE cancelled = 0 ORDER BY at;
            CREATE TABLE audit(event_id INTEGER, what TEXT);
            CREATE TRIGGER event_cancel AFTER UPDATE OF cancelled ON event BEGIN INSERT INTO audit VALUES (new.id, 'cancelled'); END;
            INSERT INTO event(name, at) VALUES ('Opening', 10), ('Talk', 20), ('Party', 30), ('Dropped', 5);
            DELETE FROM event WHERE name = 'Dropped';
            UPDATE event SET cancelled = 1 WHERE name = 'Talk';
            CREATE VIEW audit_count AS SELECT count(*) AS n FROM audit;
            """, queries: [
                "SELECT * FROM upcoming",
                "SELECT * FROM audit",
                "SELECT seq FROM sqlite_sequence WHERE name = 'event'",
                "SELECT name FROM event WHERE lower(name) = 'party'",
            ]),
        Kind(name: "names with any characters", sql: #"""
            CREATE TABLE "col ""q""" ("x ""y""" TEXT, "semi;colon" INTEGER, "ünï cödé" TEXT, [brackets] TEXT, `back` TEXT);
            INSERT INTO "col ""q""" VALUES ('a', 1, 'é', 'b', 'c'), ('it''s', 2, NULL, '', 'x');
            CREATE TABLE "select" ("from" INTEGER PRIMARY KEY, "where" TEXT);
            INSERT INTO "select" VALUES (1, 'keyword');
            CREATE INDEX "index ""of"" select" ON "select"("where");
            CREATE VIRTUAL TABLE "fts ""q""" USING fts5("body text");
            INSERT INTO "fts ""q""" VALUES ('quoted names work');
            """#, queries: [
                #"SELECT * FROM "col ""q""" ORDER BY rowid"#,
                #"SELECT "where" FROM "select""#,
                #"SELECT rowid FROM "fts ""q""" WHERE "fts ""q""" MATCH 'names'"#,
            ]),
        Kind(name: "statistics and header values", sql: """
            CREATE TABLE reading(id INTEGER PRIMARY KEY, station TEXT, value REAL);
            CREATE INDEX reading_station ON reading(station);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
              INSERT INTO reading SELECT i, 'S' || (i % 7), i * 0.5 FROM n;
            ANALYZE;
            PRAGMA user_version = 7;
            PRAGMA application_id = 1129270338;
            """, queries: [
                "SELECT tbl, idx, stat FROM sqlite_stat1 ORDER BY tbl, idx",
                "PRAGMA user_version",
                "PRAGMA application_id",
                "EXPLAIN QUERY PLAN SELECT * FROM reading WHERE station = 'S1'",
            ]),
    ]

    @Test(arguments: kinds)
    func eachKindIsCarriedExactly(kind: Kind) throws {
        try Self.expectCarriedExactly(sql: kind.sql, queries: kind.queries)
    }

    @Test func allKindsTogetherAreCarriedExactly() throws {
        try Self.expectCarriedExactly(sql: Self.kinds.map(\.sql).joined(separator: "\n"), queries: Self.kinds.flatMap(\.queries))
    }

    /// Writes the source, adopts and packages it, and checks answers, integrity and the dump.
    static func expectCarriedExactly(sql: String, queries: [String]) throws {
        let project = try ProjectImporterTests.Project(sql)
        let result = try project.importer().run()
        var builder = SeedBuilder(migrations: project.directory.appending("Migrations"), output: project.directory.appending("SeedData"),
                                  name: "source", version: "1.0.0")
        (builder.userVersion, builder.applicationID) = try configuredHeader(project.directory.appending("reseed.json"))
        _ = try builder.build()
        #expect(result.notCarried.isEmpty, "\(result.notCarried)")

        for query in queries {
            #expect(try answers(query, in: project.seed) == answers(query, in: project.source), "\(query)")
        }
        #expect(try integrityProblems(project.seed).isEmpty)
        let vacuumed = project.directory.appending("vacuumed.sqlite")
        let queue = try DatabaseQueue(path: project.source.path)
        try queue.writeWithoutTransaction { try $0.execute(sql: "VACUUM INTO ?", arguments: [vacuumed.path]) }
        try queue.close()
        let seedDump = try DumpStepTests.dump(project.seed).split(separator: "\n").filter { !isReseedLine($0) }
        let sourceDump = try DumpStepTests.dump(vacuumed).split(separator: "\n")
        #expect(seedDump == sourceDump)
    }

    /// The `userVersion` and `applicationID` that `reseed init` wrote into `reseed.json` (what `reseed package` reads).
    static func configuredHeader(_ url: URL) throws -> (Int32?, Int32?) {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        return ((object["userVersion"] as? Int).map(Int32.init), (object["applicationID"] as? Int).map(Int32.init))
    }

    static func isReseedLine(_ line: Substring) -> Bool {
        ["reseed_metadata", "reseed_steps"].contains { line.hasPrefix("CREATE TABLE \($0)") || line.hasPrefix("INSERT INTO \($0)") }
    }

    /// Every row `query` returns, each value with its storage type.
    static func answers(_ query: String, in url: URL) throws -> [String] {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: url.path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in
            try Row.fetchAll(db, sql: query).map { row in
                row.databaseValues.map { "\($0.storage)" }.joined(separator: "|")
            }
        }
    }

    /// What `integrity_check`, each FTS table's `integrity-check` and each R-tree's `rtreecheck()` say
    /// is wrong with the database (run on a copy: the FTS check is an INSERT).
    static func integrityProblems(_ url: URL) throws -> [String] {
        let copy = url.deletingLastPathComponent().appendingPathComponent("integrity-\(UUID().uuidString).sqlite")
        try FileManager.default.copyItem(at: url, to: copy)
        defer { try? FileManager.default.removeItem(at: copy) }
        let queue = try DatabaseQueue(path: copy.path)
        defer { try? queue.close() }
        return try queue.writeWithoutTransaction { db in
            var problems = try String.fetchAll(db, sql: "PRAGMA integrity_check").filter { $0 != "ok" }
            let virtual = try Row.fetchAll(db, sql: "SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%'")
            for row in virtual {
                let name: String = row["name"]
                let sql: String = row["sql"]
                let module = sql.lowercased()
                if module.contains("using fts") {
                    do {
                        try db.execute(sql: "INSERT INTO \(name.quotedIdentifier)(\(name.quotedIdentifier)) VALUES ('integrity-check')")
                    } catch {
                        problems.append("\(name): \(error)")
                    }
                } else if module.contains("using rtree") {
                    let answer = try String.fetchOne(db, sql: "SELECT rtreecheck(?)", arguments: [name])
                    if answer != "ok" { problems.append("\(name): \(answer ?? "nil")") }
                }
            }
            return problems
        }
    }
}
