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

    @Test func rollbackToASavepointStaysAllowed() throws {
        let sandbox = try MigrationsSandbox(["0001_data.sql": "CREATE TABLE t(a);\nSAVEPOINT s;\nINSERT INTO t VALUES(1);\nROLLBACK TO s;\nRELEASE s;\n"])
        let result = try sandbox.build()
        let queue = try DatabaseQueue(path: result.seedURL.path)
        defer { try? queue.close() }
        // Accepted and run (what ROLLBACK TO undoes without a journal is SQLite's business).
        #expect(try queue.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM sqlite_schema WHERE name = 't'") } == 1)
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
