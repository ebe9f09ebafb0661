import Foundation
import GRDB
import GRDBSQLite
import Testing
@testable import ReseedPackaging

/// Huge values, records and tokens: a clear error naming the file, line (and column), a short
/// message, and nothing left in the output folder; never a NULL stored in silence, a trap, or memory
/// the size of the input. The limits are lowered so that no test needs a gigabyte.
@Suite struct StepLimitsTests {
    /// A 2,000-byte value against a 1,000-byte `SQLITE_LIMIT_LENGTH`, in each form a CSV field takes.
    @Test(arguments: [
        String(repeating: "x", count: 2_000),
        "\"" + String(repeating: "x", count: 2_000) + "\"",
        "\"" + String(repeating: "x\"\"", count: 700) + "\"",
        "\"" + String(repeating: "x\r\n", count: 700) + "\"",
    ])
    func csvValueLongerThanSQLitesLimitFailsNamingLineAndColumn(field: String) throws {
        let sandbox = try MigrationsSandbox(["0001_schema.sql": itemSchema, "0002_item.csv": "id,name,note\n1,short,a\n2,b,\(field)\n"])
        let error = try #require(buildError(sandbox, limits: .init(sqliteLength: 1_000)))
        #expect(error.code == .rowRejected)
        #expect(error.line == 3)
        #expect(error.description.contains("0002_item.csv:3: the value of column 'note' is"))
        #expect(error.message.contains("longer than SQLite's length limit of 1000 bytes"))
        #expect(sandbox.outputFiles().isEmpty)
    }

    /// A step that is a FIFO, or a link to `/dev/zero`, would never end: it is refused at once,
    /// naming the file, and the build leaves nothing.
    @Test(.timeLimit(.minutes(10)), arguments: ["0002_rows.sql", "0002_item.csv"])
    func aStepThatIsNotARegularFileIsRefused(name: String) throws {
        for target in ["fifo", "zero"] {
            let sandbox = try MigrationsSandbox(["0001_schema.sql": itemSchema])
            let step = sandbox.directory.appending("Migrations/\(name)")
            if target == "fifo" {
                try #require(mkfifo(step.path, 0o644) == 0)
            } else {
                try FileManager.default.createSymbolicLink(atPath: step.path, withDestinationPath: "/dev/zero")
            }
            let error = try #require(buildError(sandbox), "\(target)")
            #expect(error.code == .io, "\(target)")
            #expect(error.path?.hasSuffix(name) == true, "\(target)")
            #expect(error.description.contains("not a regular file"), "\(target): \(error.description)")
            #expect(sandbox.outputFiles().isEmpty)
        }
    }

    /// A `.sql` step is read a chunk at a time: a statement that never ends within SQLite's length
    /// limit fails naming its line, without reading the rest of the file into memory.
    @Test func sqlStatementLongerThanSQLitesLimitNamesItsLine() throws {
        let sandbox = try MigrationsSandbox([
            "0001_schema.sql": itemSchema,
            "0002_rows.sql": "INSERT INTO item(id, name) VALUES (1, 'a');\n\nINSERT INTO item(id, name) VALUES (2, '\(String(repeating: "z", count: 3 << 20))');\n",
        ])
        let error = try #require(buildError(sandbox, limits: .init(sqliteLength: 1_000)))
        #expect(error.code == .sqlFailed)
        #expect(error.line == 3)
        #expect(error.message.hasPrefix("a statement longer than 1000 bytes, which SQLite does not run"))
        #expect(sandbox.outputFiles().isEmpty)
    }

    /// Statements and CRLF line ends that straddle the 1 MiB chunks a `.sql` step is read in: every
    /// row arrives, and a failing statement near the end is named at its line.
    @Test func sqlStepReadInChunksKeepsStatementsAndLines() throws {
        let rows = 40_000
        var sql = "-- rows; with a semicolon in a comment\r\n"
        for id in 1...rows {
            sql += "INSERT INTO item(id, name, note) VALUES (\(id), 'name;\(id)', 'line one\r\nline two');\r\n"
        }
        #expect(sql.utf8.count > 3 * SQLScript.chunkSize)
        let sandbox = try MigrationsSandbox(["0001_schema.sql": itemSchema, "0002_rows.sql": sql])
        let result = try sandbox.build()
        let (count, note) = try sandbox.read(result) { db in
            (try Int.fetchOne(db, sql: "SELECT count(*) FROM item WHERE name = 'name;' || id"),
             try String.fetchOne(db, sql: "SELECT note FROM item WHERE id = \(rows)"))
        }
        #expect(count == rows)
        #expect(note == "line one\nline two")

        let failing = try MigrationsSandbox(["0001_schema.sql": itemSchema, "0002_rows.sql": sql + "INSERT INTO nowhere VALUES (1);\r\n"])
        let error = try #require(buildError(failing))
        #expect(error.line == 2 * rows + 2)
        #expect(error.message.contains("no such table: nowhere"))
    }

    /// The same value in a group of 32 rows (one multi-row INSERT) is found at its own line.
    @Test func csvValueLongerThanSQLitesLimitInsideAGroupNamesItsLine() throws {
        let csv = "id,name\n" + (1...100).map { "\($0),\($0 == 40 ? String(repeating: "y", count: 1_500) : "n")\n" }.joined()
        let sandbox = try MigrationsSandbox(["0001_schema.sql": itemSchema, "0002_item.csv": csv])
        let error = try #require(buildError(sandbox, limits: .init(sqliteLength: 1_000)))
        #expect(error.line == 41)
        #expect(error.message.contains("column 'name' is 1500 bytes"))
    }

    @Test func csvValuesUpToSQLitesLimitAreStoredWhole() throws {
        let value = String(repeating: "z", count: 900)
        let sandbox = try MigrationsSandbox(["0001_schema.sql": itemSchema, "0002_item.csv": "id,name\n1,\(value)\n2,\"\(value)\"\n"])
        let result = try sandbox.build(limits: .init(sqliteLength: 1_000))
        #expect(try sandbox.read(result) { try String.fetchAll($0, sql: "SELECT name FROM item ORDER BY id") } == [value, value])
    }

    /// GRDB's own binding would stop the process here (it treats a refused binding as a bug).
    @Test func jsonStringLongerThanSQLitesLimitFailsNamingElementAndKey() throws {
        let long = String(repeating: "j", count: 2_000)
        let sandbox = try MigrationsSandbox(["0001_schema.sql": itemSchema, "0002_item.json": "[{\"id\": 1},\n {\"id\": 2, \"note\": \"\(long)\"}]"])
        let error = try #require(buildError(sandbox, limits: .init(sqliteLength: 1_000)))
        #expect(error.code == .rowRejected)
        #expect(error.line == 2)
        #expect(error.description.contains("0002_item.json:2: element 1: the value of key 'note' is longer than SQLite's length limit of 1000 bytes"))
        #expect(sandbox.outputFiles().isEmpty)
    }

    /// A length over 2 GiB is SQLite's SQLITE_TOOBIG, not a trap in a conversion to 32 bits; SQLite
    /// refuses it before reading a byte, so a small buffer stands in for the huge field.
    @Test func bindingTextOver2GiBIsRefusedNotTrapped() throws {
        let queue = try DatabaseQueue()
        try queue.inDatabase { db in
            let statement = try db.makeStatement(sql: "SELECT ?")
            let small: [UInt8] = Array("abc".utf8)
            let code = small.withUnsafeBytes { bindText(statement.sqliteStatement, 1, $0.baseAddress, count: 3 << 30, copy: false) }
            #expect(code == SQLITE_TOOBIG)
            let fits = small.withUnsafeBytes { bindText(statement.sqliteStatement, 1, $0.baseAddress, count: 3, copy: true) }
            #expect(fits == SQLITE_OK)
            #expect(sqlite3_step(statement.sqliteStatement) == SQLITE_ROW)
            #expect(sqlite3_column_text(statement.sqliteStatement, 0).map { String(cString: $0) } == "abc")
            #expect(sqlite3_reset(statement.sqliteStatement) == SQLITE_OK)
        }
    }

    /// A header or record over the record limit (lowered here to 1 KiB, 64 MiB by default) is an error
    /// found after reading that much of it, not after reading the rest of the file.
    @Test(arguments: [
        ("id,name" + String(repeating: ",name", count: 300), 1, "the header is longer than 1 KiB"),
        ("id,name\n1,a\n2," + String(repeating: "b", count: 2_000) + "\n3,c\n", 3, "a record is longer than 1 KiB"),
        ("id,name\n1,\"never closed " + String(repeating: "b\n", count: 2_000), 2, "a record is longer than 1 KiB"),
    ])
    func csvRecordOverTheLimitFailsNamingItsLine(csv: String, line: Int, message: String) throws {
        let sandbox = try MigrationsSandbox(["0001_schema.sql": itemSchema, "0002_item.csv": csv])
        let error = try #require(buildError(sandbox, limits: .init(csvRecordBytes: 1_024)))
        #expect(error.code == .invalidCSV)
        #expect(error.line == line)
        #expect(error.message.hasPrefix(message), "\(error.message)")
        #expect(sandbox.outputFiles().isEmpty)
    }

    /// Exactly at the limit loads; one byte more does not (line end not counted).
    @Test func csvRecordOfExactlyTheLimitLoads() throws {
        let prefix = "2,"
        let fits = prefix + String(repeating: "v", count: 1_024 - prefix.utf8.count)
        let sandbox = try MigrationsSandbox(["0001_schema.sql": itemSchema, "0002_item.csv": "id,name\r\n" + fits + "\r\n"])
        let result = try sandbox.build(limits: .init(csvRecordBytes: 1_024))
        #expect(try sandbox.read(result) { try String.fetchOne($0, sql: "SELECT name FROM item") }?.utf8.count == 1_022)

        try sandbox.write("0002_item.csv", "id,name\r\n" + fits + "v\r\n")
        let error = try #require(buildError(sandbox, limits: .init(csvRecordBytes: 1_024)))
        #expect(error.line == 2)
    }

    /// The documented limit itself: a 65 MiB header line without a newline (the case that took
    /// 4.3 GB of memory for 1.1 GB) fails at 64 MiB with a one-line message.
    @Test func csvHeaderOf65MiBFailsAtTheDocumentedLimitWithAShortMessage() throws {
        let sandbox = try MigrationsSandbox(["0001_schema.sql": itemSchema])
        try Data(repeating: UInt8(ascii: "h"), count: 65 << 20).write(to: sandbox.migrations.appendingPathComponent("0002_item.csv"))
        let error = try #require(buildError(sandbox))
        #expect(error.code == .invalidCSV)
        #expect(error.line == 1)
        #expect(error.message.hasPrefix("the header is longer than 64 MiB"))
        #expect(error.description.utf8.count < 400)
        #expect(sandbox.outputFiles().isEmpty)
    }

    @Test func csvHeaderWithMoreFieldsThanAnyTableHasColumnsFails() throws {
        let sandbox = try MigrationsSandbox(["0001_schema.sql": itemSchema, "0002_item.csv": "id" + String(repeating: ",", count: 40_000) + "\n"])
        let error = try #require(buildError(sandbox))
        #expect(error.line == 1)
        #expect(error.message.contains("more than 32767 fields"))
    }

    /// Each step kind, with an error that quotes a 100 KB piece of the input: the message keeps the
    /// piece's start and end, and stays short and on one line.
    @Test(arguments: [
        ("0002_item.csv", "id," + String(repeating: "c", count: 100_000) + "\n1,2\n", 1, "header names column 'ccc"),
        ("0002_item.json", "[\n{\"" + String(repeating: "k", count: 100_000) + "\": 1}]", 2, "element 0 has key 'kkk"),
        ("0002_item.json", "[\n{\"price\": 1" + String(repeating: "0", count: 100_000) + "}]", 2, "element 0: number 1000"),
        ("0002_more.sql", "SELECT 1;\nSELECT '" + String(repeating: "s", count: 100_000), 2, "unrecognized token: \"'sss"),
        ("0002_more.sql", "SELECT 1;\n\nSELECT " + String(repeating: "q", count: 100_000) + ";", 3, "no such column: qqq"),
        ("0002_more.sql", "SELECT 1;\nSELECT 'a\n" + String(repeating: "line\n", count: 20_000), 2, "unrecognized token: \"'a\\nline\\n"),
    ])
    func errorsQuoteAtMostAFewHundredBytesOfTheInput(file: String, content: String, line: Int, start: String) throws {
        let sandbox = try MigrationsSandbox(["0001_schema.sql": itemSchema, file: content])
        let error = try #require(buildError(sandbox))
        #expect(error.path?.hasSuffix(file) == true)
        #expect(error.line == line)
        #expect(error.message.hasPrefix(start) || error.message.contains(start), "\(error.message)")
        #expect(error.message.contains("bytes]…"), "\(error.message)")
        #expect(error.description.utf8.count < 600, "\(error.description.utf8.count) bytes")
        #expect(!error.description.contains("\n"), "one line: \(error.description)")
    }

    /// The cut keeps whole characters and writes control characters escaped, on one line.
    @Test func excerptsCutBetweenCharactersAndStayOnOneLine() {
        let text = String(repeating: "é", count: 300) + "\n" + String(repeating: "𝄞", count: 300)
        let cut = excerpt(text, limit: 200)
        #expect(cut.utf8.count < 260)
        #expect(cut.hasPrefix("ééé") && cut.hasSuffix("𝄞𝄞𝄞"))
        #expect(cut.contains("…[1801 bytes]…"))
        #expect(!cut.unicodeScalars.contains("\u{FFFD}"))
        #expect(excerpt("a\nb\tc\u{1}") == "a\\nb\\tc\\u{1}")
        #expect(excerpt("short") == "short")
    }
}

extension StepLimitsTests {
    /// A wide table's batches hold fewer records (memory is bounded by fields, not records): every row
    /// still loads once, across batch and group ends.
    @Test func wideTableLoadsEveryRowAcrossSmallerBatches() throws {
        let columns = 1_000
        let perBatch = CSVReadAhead.records(perBatchFor: columns)
        #expect(perBatch * columns <= CSVReadAhead.fieldsPerBatch && perBatch < CSVReadAhead.batchSize)
        let schema = "CREATE TABLE wide (" + (0..<columns).map { "c\($0) INTEGER" }.joined(separator: ", ") + ");"
        let rows = 2 * perBatch + 7
        let csv = (0..<columns).map { "c\($0)" }.joined(separator: ",") + "\n"
            + (1...rows).map { row in "\(row)," + Array(repeating: "1", count: columns - 1).joined(separator: ",") + "\n" }.joined()
        let sandbox = try MigrationsSandbox(["0001_schema.sql": schema, "0002_wide.csv": csv])
        let result = try sandbox.build()
        let totals = try sandbox.read(result) { try Row.fetchOne($0, sql: "SELECT count(*), sum(c0), sum(c999) FROM wide") }
        #expect(totals?[0] as Int? == rows)
        #expect(totals?[1] as Int? == rows * (rows + 1) / 2)
        #expect(totals?[2] as Int? == rows)
    }
}
