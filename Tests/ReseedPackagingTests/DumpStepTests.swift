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

    @Test func aDumpBuildsTheSameRows() throws {
        let sandbox = try MigrationsSandbox()
        let source = sandbox.directory.appending("existing.sqlite")
        let queue = try DatabaseQueue(path: source.path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: """
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
        }
        try queue.close()
        let dump = try Self.dump(source)
        #expect(dump.hasPrefix("PRAGMA foreign_keys=OFF;\nBEGIN TRANSACTION;\n"))
        #expect(dump.contains("INSERT INTO sqlite_sequence VALUES('category',3);"))
        try sandbox.write("0001_existing.sql", dump)

        let result = try sandbox.build()

        let diff = try SeedDiff.compare(old: source, new: result.seedURL)
        #expect(diff.isEmpty, "\(diff.renderText())")
        #expect(try ProjectImporterTests.snapshot(result.seedURL) == ProjectImporterTests.snapshot(source))
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
        #expect(error.message.contains("c rowid 1 → p"))
    }
}
