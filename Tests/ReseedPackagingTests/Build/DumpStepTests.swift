import Foundation
import GRDB
import Reseed
@testable import ReseedPackaging
import ReseedTestSupport
import Testing

/// A `sqlite3 existing.sqlite .dump` file as a `.sql` step.
@Suite struct DumpStepTests {
    /// `sqlite3 <database> .dump`, as the real tool writes it.
    static func dump(_ database: URL) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["sqlite3", database.path, ".dump"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0)
        return String(decoding: data, as: UTF8.self)
    }

    /// A database named `name` in the sandbox's folder, written by `sql` outside any transaction.
    static func database(_ sandbox: MigrationsSandbox, _ name: String, _ sql: String) throws -> URL {
        let url = sandbox.directory.appending(name)
        let queue = try DatabaseQueue(path: url.path)
        try queue.writeWithoutTransaction { try $0.execute(sql: sql) }
        try queue.close()
        return url
    }

    @Test func aDumpBuildsTheSameRows() throws {
        let sandbox = try MigrationsSandbox()
        let source = try Self.database(sandbox, "existing.sqlite", """
            PRAGMA foreign_keys = OFF;
            CREATE TABLE category(id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT, icon BLOB);
            CREATE TABLE item(id INTEGER PRIMARY KEY, category_id INTEGER REFERENCES category(id), weight REAL);
            CREATE TABLE tree(id INTEGER PRIMARY KEY, parent INTEGER REFERENCES tree(id));
            CREATE TABLE tag(name TEXT PRIMARY KEY, uses INTEGER) WITHOUT ROWID;
            CREATE INDEX item_category ON item(category_id);
            CREATE VIEW heavy AS SELECT * FROM item WHERE weight > 1;
            CREATE TRIGGER item_added AFTER INSERT ON item BEGIN UPDATE category SET name = name || '+' WHERE id = new.category_id; END;
            INSERT INTO category(name, icon) VALUES ('first', X'00FF'), ('sec''ond', X''), ('gone', NULL);
            DELETE FROM category WHERE name = 'gone';
            INSERT INTO item VALUES (1, 1, 2.5), (2, 2, 0.5), (3, 1, NULL);
            INSERT INTO tree VALUES (1, 3), (2, 1), (3, NULL);
            INSERT INTO tag VALUES ('a', 1), ('b', 2);
            """)
        let dump = try Self.dump(source)
        #expect(dump.hasPrefix("PRAGMA foreign_keys=OFF;\nBEGIN TRANSACTION;\n"))
        #expect(dump.contains("INSERT INTO sqlite_sequence VALUES('category',3);"))
        try sandbox.write("0001_existing.sql", dump)

        let result = try sandbox.build()

        let diff = try SeedDiff.compare(old: source, new: result.seedURL)
        #expect(diff.isEmpty, "\(diff.renderText())")
        #expect(try ProjectImporterTests.snapshot(result.seedURL) == ProjectImporterTests.snapshot(source))
    }

    /// Chinook's shape: tables created in alphabetical order, so `.dump` writes `Album`'s rows
    /// (which name `Artist`) before `Artist` exists. Foreign keys are unenforced while a step runs.
    @Test func aDumpThatWritesChildrenBeforeTheirParentsBuilds() throws {
        let sandbox = try MigrationsSandbox()
        let source = try Self.database(sandbox, "chinook.sqlite", """
            PRAGMA foreign_keys = OFF;
            CREATE TABLE [Album] ([AlbumId] INTEGER NOT NULL, [Title] NVARCHAR(160) NOT NULL, [ArtistId] INTEGER NOT NULL,
              CONSTRAINT [PK_Album] PRIMARY KEY ([AlbumId]),
              FOREIGN KEY ([ArtistId]) REFERENCES [Artist] ([ArtistId]) ON DELETE NO ACTION ON UPDATE NO ACTION);
            CREATE TABLE [Artist] ([ArtistId] INTEGER NOT NULL, [Name] NVARCHAR(120), CONSTRAINT [PK_Artist] PRIMARY KEY ([ArtistId]));
            CREATE TABLE [Track] ([TrackId] INTEGER NOT NULL, [Name] NVARCHAR(200) NOT NULL, [AlbumId] INTEGER,
              [Milliseconds] INTEGER NOT NULL, [UnitPrice] NUMERIC(10,2) NOT NULL, CONSTRAINT [PK_Track] PRIMARY KEY ([TrackId]),
              FOREIGN KEY ([AlbumId]) REFERENCES [Album] ([AlbumId]) ON DELETE NO ACTION ON UPDATE NO ACTION);
            CREATE INDEX [IFK_AlbumArtistId] ON [Album] ([ArtistId]);
            CREATE INDEX [IFK_TrackAlbumId] ON [Track] ([AlbumId]);
            INSERT INTO [Artist] VALUES (1, 'AC/DC'), (2, 'Accept'), (3, 'Aerosmith');
            INSERT INTO [Album] VALUES (1, 'For Those About To Rock We Salute You', 1), (2, 'Balls to the Wall', 2), (3, 'Restless and Wild', 2);
            INSERT INTO [Track] VALUES (1, 'For Those About To Rock (We Salute You)', 1, 343719, 0.99), (2, 'Balls to the Wall', 2, 342562, 0.99),
              (3, 'Fast As a Shark', 3, 230619, 0.99);
            PRAGMA user_version = 7;
            """)
        let dump = try Self.dump(source)
        let albumRows = try #require(dump.range(of: "INSERT INTO Album VALUES"))
        let artistTable = try #require(dump.range(of: "CREATE TABLE [Artist]"))
        #expect(albumRows.lowerBound < artistTable.lowerBound)
        try sandbox.write("0001_chinook.sql", dump)

        let result = try sandbox.build()

        #expect(try ProjectImporterTests.snapshot(result.seedURL) == ProjectImporterTests.snapshot(source))
        let seed = try DatabaseQueue(path: result.seedURL.path)
        defer { try? seed.close() }
        #expect(try seed.read { try String.fetchAll($0, sql: "SELECT Name FROM Artist JOIN Album USING (ArtistId) WHERE AlbumId = 3") } == ["Accept"])
    }

    /// `.dump` writes a virtual table as a row of `sqlite_schema` under `PRAGMA writable_schema`,
    /// its shadow tables as tables, and the statistics after `ANALYZE sqlite_schema`: all of it builds,
    /// and the later steps see the virtual table.
    @Test func aDumpWithFullTextSearchAnRTreeAndStatisticsBuilds() throws {
        let sandbox = try MigrationsSandbox()
        let source = try Self.database(sandbox, "search.sqlite", """
            CREATE TABLE page(id INTEGER PRIMARY KEY, title TEXT, body TEXT);
            CREATE VIRTUAL TABLE page_fts USING fts5(title, body, content = 'page', content_rowid = 'id');
            CREATE VIRTUAL TABLE area USING rtree(id, x0, x1, y0, y1);
            INSERT INTO page VALUES (1, 'Install', 'how to install the app'), (2, 'Update', 'updates arrive by themselves');
            INSERT INTO page_fts(page_fts) VALUES ('rebuild');
            INSERT INTO area VALUES (1, 0, 1, 0, 1);
            CREATE INDEX page_title ON page(title);
            ANALYZE;
            """)
        let dump = try Self.dump(source)
        #expect(dump.contains("PRAGMA writable_schema=ON;\nINSERT INTO sqlite_schema("))
        #expect(dump.contains("ANALYZE sqlite_schema;"))
        try sandbox.write("0001_search.sql", dump)
        try sandbox.write("0002_more.sql", "INSERT INTO page VALUES (3, 'Search', 'install finds this too'); INSERT INTO page_fts(rowid, title, body) VALUES (3, 'Search', 'install finds this too');")

        let result = try sandbox.build()

        #expect(try AdoptionCorpusTests.answers("SELECT rowid FROM page_fts WHERE page_fts MATCH 'install' ORDER BY rowid", in: result.seedURL) == ["int64(1)", "int64(3)"])
        #expect(try AdoptionCorpusTests.answers("SELECT id FROM area WHERE x0 >= 0", in: result.seedURL) == ["int64(1)"])
        #expect(try AdoptionCorpusTests.answers("SELECT * FROM sqlite_stat1 ORDER BY tbl, idx", in: result.seedURL)
                == AdoptionCorpusTests.answers("SELECT * FROM sqlite_stat1 ORDER BY tbl, idx", in: source))
        #expect(try AdoptionCorpusTests.integrityProblems(result.seedURL).isEmpty)
    }

    @Test func aStepThatWritesASchemaRowSQLiteCannotReadIsNamed() throws {
        let sandbox = try MigrationsSandbox(["0001_bad.sql": """
            PRAGMA writable_schema=ON;
            INSERT INTO sqlite_schema(type,name,tbl_name,rootpage,sql)VALUES('table','broken','broken',0,'CREATE VIRTUAL TABLE broken USING fts5(');
            PRAGMA writable_schema=OFF;
            """])
        let error = try #require(throws: PackagingError.self) { try sandbox.build() }
        #expect(error.code == .sqlFailed)
        #expect(error.path?.hasSuffix("Migrations/0001_bad.sql") == true)
        #expect(error.message.hasPrefix("the schema this step wrote is not one SQLite can read"))
    }

    @Test func theWrapperWithoutThePragmaIsAccepted() throws {
        let sandbox = try MigrationsSandbox(["0001_data.sql": "BEGIN TRANSACTION;\nCREATE TABLE t(a);\nINSERT INTO t VALUES(1);\nCOMMIT;\n"])
        let result = try sandbox.build()
        let queue = try DatabaseQueue(path: result.seedURL.path)
        defer { try? queue.close() }
        #expect(try queue.read { try Int.fetchOne($0, sql: "SELECT a FROM t") } == 1)
    }

    @Test(arguments: [
        ("CREATE TABLE t(a);\nBEGIN;\nINSERT INTO t VALUES(1);\n", 2, "BEGIN"),
        ("PRAGMA foreign_keys=OFF;\nBEGIN TRANSACTION;\nCREATE TABLE t(a);\n", 2, "BEGIN"),
        ("BEGIN TRANSACTION;\nCREATE TABLE t(a);\nCOMMIT;\nINSERT INTO t VALUES(1);\n", 1, "BEGIN"),
        ("PRAGMA foreign_keys=OFF;\nBEGIN TRANSACTION;\nCREATE TABLE t(a);\nROLLBACK; -- due to errors\n", 2, "BEGIN"),
        ("CREATE TABLE t(a);\n  commit ;\n", 2, "COMMIT"),
        ("CREATE TABLE t(a);\nEND TRANSACTION;\n", 2, "END"),
        // Inside a whole wrapper, the statement itself is named (the wrapper shows only at the file's end).
        ("BEGIN TRANSACTION;\nCREATE TABLE t(a);\nBEGIN;\nINSERT INTO t VALUES(1);\nCOMMIT;\n", 3, "BEGIN"),
        ("BEGIN TRANSACTION;\nCREATE TABLE t(a);\nCOMMIT;\nCOMMIT;\n", 3, "COMMIT"),
    ])
    func anyOtherTransactionStatementNamesTheFileAndLine(sql: String, line: Int, keyword: String) throws {
        let sandbox = try MigrationsSandbox(["0001_data.sql": sql])
        let error = try #require(throws: PackagingError.self) { try sandbox.build() }
        #expect(error.code == .sqlFailed)
        #expect(error.path?.hasSuffix("Migrations/0001_data.sql") == true)
        #expect(error.line == line)
        #expect(error.message.hasPrefix("\(keyword) is not allowed in a .sql step"))
    }

    /// What `sqlite3 DATABASE ".read FILE"` leaves: the reference a `.sql` step's meaning is held to.
    static func sqlite3(reading file: URL, into database: URL) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["sqlite3", database.path, ".read '\(file.path)'"]
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0)
    }

    @Test func savepointsRollBackAndReleaseAsInSQLite3() throws {
        let script = """
            CREATE TABLE t(a);
            INSERT INTO t VALUES(1);
            SAVEPOINT outer_one;
            INSERT INTO t VALUES(2);
            CREATE TABLE gone(x);
            SAVEPOINT inner_one;
            INSERT INTO t VALUES(3);
            RELEASE inner_one;
            ROLLBACK TO outer_one;
            INSERT INTO t VALUES(4);
            RELEASE SAVEPOINT outer_one;
            SAVEPOINT kept;
            INSERT INTO t VALUES(5);
            SAVEPOINT undone;
            UPDATE t SET a = a * 100;
            ROLLBACK TRANSACTION TO SAVEPOINT undone;
            RELEASE kept;

            """
        let sandbox = try MigrationsSandbox(["0001_data.sql": script, "0002_more.sql": "SAVEPOINT \"S p\";\nDELETE FROM t;\nROLLBACK TO 's p';\nINSERT INTO t VALUES(6);\nRELEASE [s P];\n"])
        let result = try sandbox.build()
        let reference = sandbox.directory.appending("reference.sqlite")
        try Self.sqlite3(reading: sandbox.migrations.appendingPathComponent("0001_data.sql"), into: reference)
        try Self.sqlite3(reading: sandbox.migrations.appendingPathComponent("0002_more.sql"), into: reference)

        let rows = try sandbox.read(result) { try Int.fetchAll($0, sql: "SELECT a FROM t ORDER BY rowid") }
        #expect(rows == [1, 4, 5, 6])
        #expect(try sandbox.read(result) { try Int.fetchOne($0, sql: "SELECT count(*) FROM sqlite_schema WHERE name = 'gone'") } == 0)
        #expect(try ProjectImporterTests.snapshot(result.seedURL).filter { $0.key == "t" } == ProjectImporterTests.snapshot(reference))
    }

    /// sqlite3 undoes what follows a savepoint never released when the file ends (it ends the
    /// transaction the savepoint began): the build would keep it, so it refuses the step.
    @Test func aSavepointNeverReleasedNamesItsLine() throws {
        let sql = "CREATE TABLE t(a);\nSAVEPOINT a;\nSAVEPOINT b;\nINSERT INTO t VALUES(1);\nRELEASE b;\nSAVEPOINT c;\nRELEASE a;\nSAVEPOINT \"d e\";\nINSERT INTO t VALUES(2);\n"
        let sandbox = try MigrationsSandbox(["0001_data.sql": sql])
        let error = try #require(buildError(sandbox))
        #expect(error.code == .sqlFailed)
        #expect(error.path?.hasSuffix("Migrations/0001_data.sql") == true)
        #expect(error.line == 8)
        #expect(error.message.hasPrefix("SAVEPOINT d e is never released, so sqlite3 would undo everything after it"))
        #expect(sandbox.outputFiles().isEmpty)
        let reference = sandbox.directory.appending("reference.sqlite")
        try Self.sqlite3(reading: sandbox.migrations.appendingPathComponent("0001_data.sql"), into: reference)
        #expect(try ProjectImporterTests.snapshot(reference) == ["t": ["integer 1 | integer 1"]])

        // Inside .dump's wrapper its COMMIT keeps what the savepoint holds, in sqlite3 as in the build.
        try sandbox.write("0001_data.sql", "BEGIN TRANSACTION;\n" + sql + "COMMIT;\n")
        let result = try sandbox.build()
        #expect(try sandbox.read(result) { try Int.fetchAll($0, sql: "SELECT a FROM t ORDER BY a") } == [1, 2])
    }

    /// SQLite reads SQL text up to a NUL: the statements after one were dropped in silence.
    @Test(arguments: [
        ("CREATE TABLE t(a);\nINSERT INTO t VALUES(1);\u{0}INSERT INTO t VALUES(2);\nINSERT INTO t VALUES(3);\n", 2),
        ("CREATE TABLE t(a);\n\nINSERT INTO t VALUES('a\u{0}b');\n", 3),
        ("CREATE TABLE t(a);\nINSERT INTO t VALUES(X'61\u{0}62');\n", 2),
        ("CREATE TABLE t(a); -- a comment\u{0}\nINSERT INTO t VALUES(1);\n", 1),
        ("\u{FEFF}CREATE TABLE t(a);\r\nINSERT INTO t VALUES(1);\r\n\u{0}", 3),
        // Beyond the first chunk the file is read in.
        ("CREATE TABLE t(a);\n" + String(repeating: "INSERT INTO t VALUES('\(String(repeating: "x", count: 200))');\n", count: 8_000) + "\u{0}\n", 8_002),
    ])
    func aNULByteNamesTheFileAndLine(sql: String, line: Int) throws {
        let sandbox = try MigrationsSandbox(["0001_data.sql": sql])
        let error = try #require(buildError(sandbox))
        #expect(error.code == .sqlFailed)
        #expect(error.path?.hasSuffix("Migrations/0001_data.sql") == true)
        #expect(error.line == line)
        #expect(error.message.hasPrefix("a NUL byte, where SQLite would stop reading the step"))
        #expect(sandbox.outputFiles().isEmpty)
    }

    /// `VACUUM INTO` on a read-only connection renumbers such a table's rows (SQLite 3.40.1).
    @Test func rowidsOfATableWithACheckConstraintSurviveTheBuild() throws {
        let sandbox = try MigrationsSandbox(["0001_data.sql": """
            CREATE TABLE checked(x TEXT CHECK (x <> ''), y INTEGER, CONSTRAINT positive CHECK (y > 0));
            INSERT INTO checked(rowid, x, y) VALUES (90, 'z', 1), (3, 'a', 2), (50, 'm', 3);
            CREATE TABLE keyed(x TEXT PRIMARY KEY CHECK (length(x) < 10));
            INSERT INTO keyed(rowid, x) VALUES (7, 'b'), (2, 'a');
            """])
        let result = try sandbox.build()
        let rows = try sandbox.read(result) { db in
            (try String.fetchAll(db, sql: "SELECT rowid || ':' || x FROM checked ORDER BY rowid"),
             try String.fetchAll(db, sql: "SELECT rowid || ':' || x FROM keyed ORDER BY rowid"))
        }
        #expect(rows.0 == ["3:a", "50:m", "90:z"])
        #expect(rows.1 == ["2:a", "7:b"])
    }

    @Test func aDumpWhoseRowsBreakAForeignKeyNamesThem() throws {
        let sandbox = try MigrationsSandbox(["0001_data.sql": """
            PRAGMA foreign_keys=OFF;
            BEGIN TRANSACTION;
            CREATE TABLE p(id INTEGER PRIMARY KEY);
            CREATE TABLE c(id INTEGER PRIMARY KEY, p_id INTEGER REFERENCES p(id));
            INSERT INTO c VALUES(1,7);
            COMMIT;
            """])
        let error = try #require(throws: PackagingError.self) { try sandbox.build() }
        #expect(error.code == .foreignKeyViolation)
        #expect(error.path?.hasSuffix("Migrations/0001_data.sql") == true)
        #expect(error.message.contains("the row with rowid 1 of table 'c' names a row of 'p' that does not exist"))
    }
}
