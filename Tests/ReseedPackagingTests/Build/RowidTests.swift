import Foundation
import GRDB
import Reseed
@testable import ReseedPackaging
import ReseedTestSupport
import Testing

/// A seed holds the rowids its steps wrote, in every table that has them: an app, an
/// external-content FTS index or a delta may read a rowid that no column holds.
@Suite struct RowidTests {
    /// Key-less tables of every kind `VACUUM INTO` treats apart (CHECK, UNIQUE, generated columns,
    /// a foreign key), beside a WITHOUT ROWID table and an FTS5 index over a key-less table; rows
    /// inserted out of order, with gaps, some deleted, some added by a CSV and a JSON step.
    static let steps = [
        "0001_schema.sql": """
            CREATE TABLE checked(code TEXT NOT NULL CHECK (length(code) >= 1), name TEXT CHECK (name <> ''));
            CREATE TABLE named(name TEXT UNIQUE, n INTEGER);
            CREATE TABLE summed(a INTEGER, b INTEGER, total INTEGER GENERATED ALWAYS AS (a + b) VIRTUAL);
            CREATE TABLE stored(a INTEGER, b INTEGER, total INTEGER GENERATED ALWAYS AS (a + b) STORED CHECK (total >= 0));
            CREATE TABLE everything(
                code TEXT UNIQUE CHECK (code <> ''), n INTEGER NOT NULL DEFAULT 1 REFERENCES keyed(n),
                twice INTEGER AS (n * 2) STORED, label TEXT AS (upper(code)) VIRTUAL, UNIQUE (n, code));
            CREATE TABLE keyed(n INTEGER PRIMARY KEY, word TEXT) WITHOUT ROWID;
            CREATE TABLE doc(body TEXT NOT NULL CHECK (body <> ''));
            CREATE VIRTUAL TABLE doc_index USING fts5(body, content = 'doc');
            CREATE TRIGGER doc_added AFTER INSERT ON doc BEGIN
                INSERT INTO doc_index(rowid, body) VALUES (new.rowid, new.body);
            END;
            CREATE TRIGGER doc_removed AFTER DELETE ON doc BEGIN
                INSERT INTO doc_index(doc_index, rowid, body) VALUES ('delete', old.rowid, old.body);
            END;
            """,
        "0002_rows.sql": """
            INSERT INTO checked(rowid, code, name) VALUES (90, 'z', 'zed'), (3, 'a', 'ay'), (50, 'm', NULL), (7, 'g', 'gee');
            DELETE FROM checked WHERE code = 'g';
            INSERT INTO named(rowid, name, n) VALUES (1000, 'k', 1), (12, 'b', 2), (4000000000, 'far', 3), (-5, 'below', 4);
            INSERT INTO summed(rowid, a, b) VALUES (8, 1, 2), (2, 3, 4), (30, 5, 6);
            INSERT INTO stored(rowid, a, b) VALUES (8, 1, 2), (2, 3, 4), (30, 5, 6);
            DELETE FROM stored WHERE rowid = 2;
            INSERT INTO keyed(n, word) VALUES (2, 'two'), (1, 'one'), (3, 'three');
            INSERT INTO everything(rowid, code, n) VALUES (77, 'q', 3), (11, 'r', 1), (45, 's', 2);
            INSERT INTO doc(rowid, body) VALUES (40, 'alpha'), (5, 'beta gamma'), (17, 'alpha beta'), (23, 'gone');
            DELETE FROM doc WHERE body = 'gone';
            """,
        "0003_checked.csv": "code,name\nx,ex\ny,\n",
        "0004_doc.json": #"[{"body": "gamma delta"}, {"body": "alpha omega"}]"#,
    ]

    /// Every row of `table` with its rowid (when it has one) and every column, generated ones included.
    static func rows(_ db: Database, _ table: String) throws -> [String] {
        let withoutRowid = try Bool.fetchOne(db, sql: "SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?", arguments: [table]) ?? false
        let columns = try String.fetchAll(db, sql: "SELECT name FROM pragma_table_xinfo(?)", arguments: [table]).map(\.quotedDatabaseIdentifier)
        let values = ((withoutRowid ? [] : ["rowid"]) + columns).map { "quote(\($0))" }.joined(separator: " || ' ' || ")
        return try String.fetchAll(db, sql: "SELECT \(values) FROM \(table) ORDER BY \(withoutRowid ? "1" : "rowid")")
    }

    static let tables = ["checked", "named", "summed", "stored", "everything", "keyed", "doc"]

    /// What the steps leave in a database that is never compacted: the rows the seed must hold.
    static func expected() throws -> [String: [String]] {
        let queue = try DatabaseQueue()
        return try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA foreign_keys = OFF")
            try db.execute(sql: try #require(steps["0001_schema.sql"]))
            try db.execute(sql: try #require(steps["0002_rows.sql"]))
            try db.execute(sql: "INSERT INTO checked(code, name) VALUES ('x', 'ex'), ('y', NULL)")
            try db.execute(sql: "INSERT INTO doc(body) VALUES ('gamma delta'), ('alpha omega')")
            return try Dictionary(uniqueKeysWithValues: tables.map { ($0, try rows(db, $0)) })
        }
    }

    @Test func theSeedHoldsEveryRowidTheStepsWrote() throws {
        let sandbox = try MigrationsSandbox(Self.steps)
        let result = try sandbox.build()
        let expected = try Self.expected()
        // The steps' rowids, written out where a renumbering would show at a glance.
        #expect(expected["checked"]?.map { $0.prefix(while: { $0 != " " }) } == ["3", "50", "90", "91", "92"])
        #expect(expected["doc"]?.map { $0.prefix(while: { $0 != " " }) } == ["5", "17", "40", "41", "42"])
        let built = try sandbox.read(result) { db in
            try Dictionary(uniqueKeysWithValues: Self.tables.map { ($0, try Self.rows(db, $0)) })
        }
        for table in Self.tables {
            #expect(built[table] == expected[table], "table \(table)")
        }
        // The index finds the content's rows by their rowids: with the content renumbered, SQLite
        // reads the database as malformed.
        let matches = try sandbox.read(result) { db in
            try String.fetchAll(db, sql: "SELECT rowid || ':' || body FROM doc_index WHERE doc_index MATCH 'alpha' ORDER BY rowid")
        }
        #expect(matches == ["17:alpha beta", "40:alpha", "42:alpha omega"])
        #expect(try SeedVerifier(seed: result.manifestURL).verify(migrations: sandbox.migrations).isClean)
    }

    @Test func theSameStepsGiveTheSameBytesWithEveryRowidKept() throws {
        let (one, two) = (try MigrationsSandbox(Self.steps), try MigrationsSandbox(Self.steps))
        let (first, second) = (try one.build(), try two.build())
        #expect(first.manifest == second.manifest)
        #expect(try Data(contentsOf: first.seedURL) == Data(contentsOf: second.seedURL))
    }

    /// The check after `VACUUM INTO`, given the copy a read-only connection writes (rows numbered
    /// 1, 2, 3…) and the one a read-write connection writes (rowids kept).
    @Test func aCopyWithRenumberedRowsFailsTheBuildNamingTheTable() throws {
        let directory = try TemporaryDirectory(prefix: "reseed-rowids")
        let work = directory.appending("work.sqlite").path
        let (renumbered, kept) = (directory.appending("renumbered.sqlite").path, directory.appending("kept.sqlite").path)
        let queue = try DatabaseQueue(path: work)
        defer { try? queue.close() }
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: """
                CREATE TABLE aliased(id INTEGER PRIMARY KEY, a TEXT CHECK (a <> ''));
                INSERT INTO aliased VALUES (40, 'x'), (7, 'y');
                CREATE TABLE numbered(a TEXT CHECK (a <> ''));
                INSERT INTO numbered(rowid, a) VALUES (2, 'y'), (1, 'x');
                CREATE TABLE spaced(a TEXT CHECK (a <> ''));
                INSERT INTO spaced(rowid, a) VALUES (5, 'x'), (9, 'y');
                """)
            try db.execute(sql: "VACUUM INTO ?", arguments: [kept])
        }
        var readOnly = Configuration()
        readOnly.readonly = true
        let reader = try DatabaseQueue(path: work, configuration: readOnly)
        try reader.writeWithoutTransaction { try $0.execute(sql: "VACUUM INTO ?", arguments: [renumbered]) }
        try reader.close()
        try queue.writeWithoutTransaction { db in
            try SeedBuilder.checkRowidsKept(db, copy: kept, path: work)
            let error = try #require(throws: PackagingError.self) { try SeedBuilder.checkRowidsKept(db, copy: renumbered, path: work) }
            #expect(error.code == .integrityCheckFailed)
            #expect(error.path == work)
            #expect(error.message.hasPrefix("compacting the built database renumbered the rows of table 'spaced' (rowids 5…9 became 1…2), which SQLite 3."))
        }
    }
}
