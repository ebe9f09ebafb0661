import Foundation
import GRDB
import ReseedPackaging
import Testing

@Suite struct CSVStepTests {
    func load(_ csv: String) throws -> (MigrationsSandbox, SeedBuilder.Result) {
        let sandbox = try MigrationsSandbox(["0001_schema.sql": itemSchema, "0002_item.csv": csv])
        return (sandbox, try sandbox.build())
    }

    @Test func quotedFieldsKeepCommasQuotesAndNewlines() throws {
        let (sandbox, result) = try load("id,name,note\n1,\"a, b\",\"she said \"\"hi\"\"\"\n2,plain,\"two\nlines\"\n")
        let rows = try sandbox.read(result) { try Row.fetchAll($0, sql: "SELECT name, note FROM item ORDER BY id") }
        #expect(rows.map { $0["name"] as String } == ["a, b", "plain"])
        #expect(rows.map { $0["note"] as String } == ["she said \"hi\"", "two\nlines"])
    }

    @Test func unquotedEmptyIsNullAndQuotedEmptyIsEmptyText() throws {
        let (sandbox, result) = try load("id,name,note\n1,,\"\"\n")
        let row = try #require(try sandbox.read(result) { try Row.fetchOne($0, sql: "SELECT name, note, typeof(name) AS t FROM item") })
        #expect(row["t"] as String == "null")
        #expect(row["note"] as String? == "")
    }

    /// A line break inside a quoted field is stored as LF whatever the file's line ends: the seed
    /// is the same on every checkout, as the step's checksum is.
    @Test func crlfLineEndingsAndByteOrderMarkAreAcceptedAndLineBreaksInFieldsStoredAsLF() throws {
        let (sandbox, result) = try load("\u{FEFF}id,name\r\n1,one\r\n2,\"two\r\nlines\"\r\n3,\"old\rmac\"\r4,\"\"\"q\"\"\r\n\"\n")
        let names = try sandbox.read(result) { try String.fetchAll($0, sql: "SELECT name FROM item ORDER BY id") }
        #expect(names == ["one", "two\nlines", "old\nmac", "\"q\"\n"])
    }

    @Test func columnAffinityDecidesTheStoredType() throws {
        let (sandbox, result) = try load("id,count,price,name\n1,42,1.5,007\n2,3.0,2,x\n")
        let types = try sandbox.read(result) {
            try Row.fetchAll($0, sql: "SELECT typeof(count) AS c, typeof(price) AS p, typeof(name) AS n, count FROM item ORDER BY id")
        }
        #expect(types.map { $0["c"] as String } == ["integer", "integer"])
        #expect(types.map { $0["p"] as String } == ["real", "real"])
        #expect(types.map { $0["n"] as String } == ["text", "text"])
        #expect(types.map { $0["count"] as Int } == [42, 3])
    }

    @Test func wrongFieldCountNamesThePhysicalLineWhereTheRecordStarts() throws {
        let sandbox = try MigrationsSandbox(["0001_schema.sql": itemSchema, "0002_item.csv": "id,name,note\n1,\"multi\nline\",x\n2,short\n"])
        let error = try #require(buildError(sandbox))
        #expect(error.code == .invalidCSV)
        #expect(error.line == 4)
        #expect(error.path?.hasSuffix("0002_item.csv") == true)
        #expect(error.description.contains("0002_item.csv:4: record has 2 fields, the header has 3"))
    }

    @Test func tooManyFieldsIsAnError() throws {
        let sandbox = try MigrationsSandbox(["0001_schema.sql": itemSchema, "0002_item.csv": "id,name\n1,a,b\n"])
        let error = try #require(buildError(sandbox))
        #expect(error.code == .invalidCSV)
        #expect(error.line == 2)
    }

    @Test func unknownColumnIsNamed() throws {
        let sandbox = try MigrationsSandbox(["0001_schema.sql": itemSchema, "0002_item.csv": "id,colour\n1,red\n"])
        let error = try #require(buildError(sandbox))
        #expect(error.code == .unknownColumn)
        #expect(error.message.contains("'colour'"))
        #expect(error.line == 1)
    }

    @Test func missingTableIsNamed() throws {
        let sandbox = try MigrationsSandbox(["0001_schema.sql": itemSchema, "0002_widget.csv": "id\n1\n"])
        let error = try #require(buildError(sandbox))
        #expect(error.code == .unknownTable)
        #expect(error.message.contains("'widget'"))
    }

    @Test(arguments: [
        ("id,name\n1,\"never closed\n", 2, "never closed"),
        ("id,name\n1,ab\"c\n", 2, "quote inside an unquoted field"),
        ("id,name\n1,\"ab\"c\n", 2, "after a closing quote"),
        ("", 1, "empty"),
        ("id,id\n1,2\n", 1, "twice"),
    ])
    func malformedCSVIsRejectedWithItsLine(csv: String, line: Int, message: String) throws {
        let sandbox = try MigrationsSandbox(["0001_schema.sql": itemSchema, "0002_item.csv": csv])
        let error = try #require(buildError(sandbox))
        #expect(error.line == line)
        #expect(error.message.contains(message))
    }

    @Test func rowRefusedBySQLiteNamesItsLine() throws {
        let sandbox = try MigrationsSandbox(["0001_schema.sql": itemSchema, "0002_item.csv": "id,name\n1,a\n1,b\n"])
        let error = try #require(buildError(sandbox))
        #expect(error.code == .rowRejected)
        #expect(error.line == 3)
        #expect(error.message.contains("UNIQUE"))
    }

    /// Rows go in groups of `CSVLoader.rowsPerStatement` (32): a refused row at the start, inside,
    /// at the end of a group, or among the rows after the last whole group, is still named by its line,
    /// whether it is refused on its own (NOT NULL) or for a row before it in the same group (UNIQUE).
    @Test(arguments: [1, 2, 31, 32, 33, 50, 64, 65, 193, 200])
    func rowRefusedInsideAGroupNamesItsLine(record: Int) throws {
        let schema = "CREATE TABLE entry (id INTEGER PRIMARY KEY, name TEXT NOT NULL);"
        func csv(_ refused: (Int) -> String) -> String {
            "id,name\n" + (1...200).map { $0 == record ? refused($0) : "\($0),n\($0)\n" }.joined()
        }
        var cases = [(csv { "\($0),\n" }, "NOT NULL")]
        if record > 1 { cases.append((csv { "\($0 - 1),again\n" }, "UNIQUE")) }
        for (rows, message) in cases {
            let sandbox = try MigrationsSandbox(["0001_schema.sql": schema, "0002_entry.csv": rows])
            let error = try #require(buildError(sandbox))
            #expect(error.code == .rowRejected)
            #expect(error.line == record + 1, "\(message) at record \(record)")
            #expect(error.message.contains(message))
        }
    }

    /// Foreign keys are checked when the step ends, as for every step: a row may refer to a row
    /// that comes later in the file; a reference to a row that never comes names the table, the
    /// row and the parent.
    @Test func aRowMayReferToALaterRowAndAMissingOneIsNamedAfterTheStep() throws {
        let schema = "CREATE TABLE node (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES node(id));"
        let forward = "id,parent\n" + (1...100).map { $0 == 10 ? "10,20\n" : "\($0),\($0 == 1 ? "" : "\($0 - 1)")\n" }.joined()
        let sandbox = try MigrationsSandbox(["0001_schema.sql": schema, "0002_node.csv": forward])
        let result = try sandbox.build()
        #expect(try sandbox.read(result) { try Int.fetchOne($0, sql: "SELECT parent FROM node WHERE id = 10") } == 20)

        let missing = "id,parent\n" + (1...100).map { $0 == 10 ? "10,200\n" : "\($0),\($0 == 1 ? "" : "\($0 - 1)")\n" }.joined()
        let error = try #require(buildError(try MigrationsSandbox(["0001_schema.sql": schema, "0002_node.csv": missing])))
        #expect(error.code == .foreignKeyViolation)
        #expect(error.path?.hasSuffix("0002_node.csv") == true)
        #expect(error.message.hasPrefix("after this step, the row with rowid 10 of table 'node' names a row of 'node' that does not exist"))
    }

    /// Where a refused multi-row INSERT would keep some of its rows (`ON CONFLICT FAIL`, a trigger's
    /// `RAISE(FAIL)`) or end the transaction (`ON CONFLICT ROLLBACK`), rows go one by one: the
    /// error names the record's line and says what SQLite said, as for any table.
    @Test(arguments: [
        ("CREATE TABLE entry (id INTEGER PRIMARY KEY, name TEXT NOT NULL ON CONFLICT FAIL);", "NOT NULL"),
        ("CREATE TABLE entry (name TEXT NOT NULL ON CONFLICT FAIL, id INTEGER);", "NOT NULL"),
        ("CREATE TABLE entry (id INTEGER PRIMARY KEY, name TEXT NOT NULL ON CONFLICT ROLLBACK);", "NOT NULL"),
        ("""
         CREATE TABLE entry (id INTEGER PRIMARY KEY, name TEXT);
         CREATE TRIGGER entry_name BEFORE INSERT ON entry WHEN NEW.name IS NULL BEGIN SELECT RAISE(FAIL, 'a name is required'); END;
         """, "a name is required"),
    ])
    func tablesWhereAGroupWouldKeepRowsLoadRowByRow(schema: String, message: String) throws {
        let csv = "id,name\n" + (1...100).map { $0 == 50 ? "50,\n" : "\($0),n\($0)\n" }.joined()
        let error = try #require(buildError(try MigrationsSandbox(["0001_schema.sql": schema, "0002_entry.csv": csv])))
        #expect(error.code == .rowRejected)
        #expect(error.line == 51)
        #expect(error.message.contains(message), "\(error.message)")
    }

    @Test func aFullTextTableLoadsEveryRow() throws {
        let schema = "CREATE VIRTUAL TABLE note USING fts5(title, body);"
        let csv = "title,body\n" + (1...500).map { "t\($0),\"word\($0 % 7) common, text\"\n" }.joined()
        let sandbox = try MigrationsSandbox(["0001_schema.sql": schema, "0002_note.csv": csv])
        let result = try sandbox.build()
        #expect(try sandbox.read(result) { try Int.fetchOne($0, sql: "SELECT count(*) FROM note WHERE note MATCH 'common'") } == 500)
        #expect(try sandbox.read(result) { try Int.fetchOne($0, sql: "SELECT count(*) FROM note WHERE note MATCH 'word3'") } == 72)
    }

    @Test func rowCountsAroundGroupAndBatchSizesLoadEveryRowOnce() throws {
        for count in [31, 32, 33, 4095, 4096, 4097, 2 * 4096 + 33] {
            let csv = "id,name,count\n" + (1...count).map { "\($0),\"n,\($0)\",\($0 * 2)\n" }.joined()
            let (sandbox, result) = try load(csv)
            let totals = try sandbox.read(result) { db in
                try Row.fetchOne(db, sql: "SELECT count(*), sum(id), sum(count), count(DISTINCT name), min(name) FROM item")!
            }
            #expect(totals[0] as Int == count)
            #expect(totals[1] as Int == count * (count + 1) / 2)
            #expect(totals[2] as Int == count * (count + 1))
            #expect(totals[3] as Int == count)
            #expect(totals[4] as String == "n,1")
        }
    }

    @Test func lastRecordWithoutNewlineIsLoaded() throws {
        let (sandbox, result) = try load("id,name\n1,a\n2,b")
        #expect(try sandbox.read(result) { try Int.fetchOne($0, sql: "SELECT count(*) FROM item") } == 2)
    }
}
