import Foundation
import GRDB
import GRDBSQLite
import ReseedSystem

/// Loads a `.csv` step (RFC 4180) into its table, parsing bytes and reusing prepared statements.
///
/// - A header row names the columns; each must be a column of the table.
/// - Fields may be quoted; inside quotes, commas, line breaks and doubled quotes (`""`) are data.
/// - Records end with LF, CRLF or CR; a UTF-8 BOM at the start is skipped.
/// - A line break inside a quoted field is stored as LF, whether the file has LF, CRLF or CR:
///   a checkout with other line endings (Git's `core.autocrlf`) gives the same seed, as it gives
///   the same step checksum (``MigrationStep/checksum(of:)``). A value that needs a CR comes from
///   a `.json` step (`"\r"`) or a `.sql` step (`char(13)`).
/// - An unquoted empty field is NULL; a quoted empty field (`""`) is the empty string,
///   as PostgreSQL's `COPY … CSV` reads them.
/// - Values are bound as text, so the column's affinity decides their type:
///   an INTEGER column stores `42` as an integer, a REAL column `1.5` as a real.
/// - A header or record longer than 64 MiB (``CSVParser/maxRecordBytes``) is an error, so a step
///   takes bounded memory whatever its content; a value longer than SQLite's length limit
///   (`SQLITE_LIMIT_LENGTH`, 1 GiB unless lowered) is an error too, never a NULL.
/// - Errors name the file and the physical line where the record starts (and the column, for a
///   value SQLite cannot take); they quote at most a few hundred bytes of the input.
///
/// Rows go in ``rowsPerStatement`` at a time through one multi-row `INSERT`: SQLite's work per
/// statement (begin, halt, reset) is paid once per group instead of once per row. A group
/// SQLite refuses is rolled back whole (the builder runs CSV steps with a rollback journal),
/// then its rows are inserted one by one, so the error names the record's line.
/// Groups are used only where a group does exactly what its rows one by one would
/// (``groupsRows(in:)``); any other table gets one row per statement.
struct CSVLoader {
    /// How often, in rows, progress is reported.
    static let progressInterval = 100_000
    /// Rows one `INSERT` carries (fewer for very wide tables: SQLite allows 32,766 parameters).
    static let rowsPerStatement = 32

    let path: String
    let table: String
    /// ``CSVParser/maxRecordBytes`` unless a test lowers it.
    var maxRecordBytes = CSVParser.maxRecordBytes

    /// Inserts every record of `bytes` into the table; returns the number of rows.
    func load(_ bytes: UnsafeRawBufferPointer, into db: Database, progress: ((Int) -> Void)?) throws(PackagingError) -> Int {
        var parser = CSVParser(bytes: bytes, path: path, maxRecordBytes: maxRecordBytes)
        guard let header = try parser.nextRecord(expecting: nil) else {
            throw PackagingError(.invalidCSV, step: .build, path: path, line: 1, message: "the file is empty: a header row of column names is required")
        }
        let columns = try checkedColumns(header: header, parser: parser, db: db)
        let group = try groupsRows(in: db)
            ? max(1, min(Self.rowsPerStatement, Int(sqlite3_limit(db.sqliteConnection, SQLITE_LIMIT_VARIABLE_NUMBER, -1)) / columns.count))
            : 1
        let row = "(" + Array(repeating: "?", count: columns.count).joined(separator: ", ") + ")"
        let insert = "INSERT INTO \(table.quotedIdentifier) (\(columns.map(\.quotedIdentifier).joined(separator: ", "))) VALUES "
        var inserter: Inserter
        do {
            inserter = Inserter(
                db: db, bytes: bytes, path: path, columns: columns, group: group,
                single: try db.makeStatement(sql: insert + row),
                grouped: group > 1 ? try db.makeStatement(sql: insert + Array(repeating: row, count: group).joined(separator: ", ")) : nil)
        } catch {
            throw PackagingError.wrapping(error, step: .build, path: path, line: 1)
        }
        let readAhead = CSVReadAhead(parser, columns: columns.count)
        defer { readAhead.stop() }
        var rows = 0
        while true {
            let batch = readAhead.next()
            try inserter.insert(batch)
            let before = rows
            rows += batch.lines.count
            if before / Self.progressInterval != rows / Self.progressInterval { progress?(rows) }
            if let error = batch.error { throw error }
            if batch.isLast { return rows }
        }
    }

    /// Binds parsed records to the prepared statements and runs them; every SQLite call's result is checked.
    private struct Inserter {
        let db: Database
        let bytes: UnsafeRawBufferPointer
        let path: String
        /// The header's names, for errors.
        let columns: [String]
        var width: Int { columns.count }
        let group: Int
        let single: Statement
        /// The `group`-row INSERT; nil when the table takes one row per statement.
        let grouped: Statement?
        /// The longest text SQLite takes on this connection (`SQLITE_LIMIT_LENGTH`).
        let maxLength: Int
        /// A field with doubled quotes or CRs, rewritten; SQLite copies it when bound.
        var unescaped: [UInt8] = []

        init(db: Database, bytes: UnsafeRawBufferPointer, path: String, columns: [String], group: Int, single: Statement, grouped: Statement?) {
            self.db = db
            self.bytes = bytes
            self.path = path
            self.columns = columns
            self.group = group
            self.single = single
            self.grouped = grouped
            maxLength = Int(sqlite3_limit(db.sqliteConnection, SQLITE_LIMIT_LENGTH, -1))
        }

        /// Inserts every record of `batch`: whole groups, then the rest one by one.
        mutating func insert(_ batch: CSVReadAhead.Batch) throws(PackagingError) {
            var record = 0
            if let grouped {
                while batch.lines.count - record >= group {
                    try insertGroup(grouped.sqliteStatement, of: batch, from: record)
                    record += group
                }
            }
            for rest in record..<batch.lines.count {
                try insertOne(of: batch, at: rest)
            }
        }

        /// Inserts `group` records from `first` with one statement; if SQLite refuses them,
        /// one by one, so the error names the record.
        private mutating func insertGroup(_ handle: OpaquePointer, of batch: CSVReadAhead.Batch, from first: Int) throws(PackagingError) {
            for offset in 0..<group {
                try bind(batch, record: first + offset, to: handle, parameterOffset: offset * width)
            }
            let code = sqlite3_step(handle)
            // After a failed step, reset returns the same error; after SQLITE_DONE, any error is new.
            let reset = sqlite3_reset(handle)
            if code == SQLITE_DONE {
                guard reset == SQLITE_OK else { throw rejected(line: batch.lines[first]) }
                return
            }
            // SQLite ended the whole transaction (I/O error, disk full): nothing to retry in.
            guard sqlite3_get_autocommit(db.sqliteConnection) == 0 else { throw rejected(line: batch.lines[first]) }
            // The statement was rolled back whole: the same rows one at a time find the one refused.
            for record in first..<first + group {
                try insertOne(of: batch, at: record)
            }
        }

        private mutating func insertOne(of batch: CSVReadAhead.Batch, at record: Int) throws(PackagingError) {
            let handle = single.sqliteStatement
            try bind(batch, record: record, to: handle, parameterOffset: 0)
            let code = sqlite3_step(handle)
            let reset = sqlite3_reset(handle)
            guard code == SQLITE_DONE, reset == SQLITE_OK else { throw rejected(line: batch.lines[record]) }
        }

        private mutating func bind(_ batch: CSVReadAhead.Batch, record: Int, to handle: OpaquePointer, parameterOffset: Int) throws(PackagingError) {
            guard let base = bytes.baseAddress else { return }
            for column in 0..<width {
                let field = batch.fields[record * width + column]
                let start = base + field.start
                let length = field.end - field.start
                // At most `group` × 32,767 parameters (the header's field limit): always an Int32.
                let parameter = Int32(truncatingIfNeeded: parameterOffset + column + 1)
                let code: Int32
                switch field.kind {
                case .unquoted where length == 0:
                    code = sqlite3_bind_null(handle, parameter)
                case .unquoted, .quoted:
                    guard length <= maxLength else { throw tooLong(batch, record: record, column: column, length: length) }
                    code = bindText(handle, parameter, start, count: length, copy: false)
                case .rewritten:
                    CSVParser.unescape(UnsafeRawBufferPointer(start: start, count: length), into: &unescaped)
                    guard unescaped.count <= maxLength else { throw tooLong(batch, record: record, column: column, length: unescaped.count) }
                    code = unescaped.withUnsafeBytes { bindText(handle, parameter, $0.baseAddress, count: $0.count, copy: true) }
                }
                guard code == SQLITE_OK else {
                    throw PackagingError(.rowRejected, step: .build, path: path, line: batch.lines[record],
                                         message: "SQLite cannot take the value of column '\(excerpt(columns[column]))': \(String(cString: sqlite3_errstr(code)))")
                }
            }
        }

        private func tooLong(_ batch: CSVReadAhead.Batch, record: Int, column: Int, length: Int) -> PackagingError {
            PackagingError(.rowRejected, step: .build, path: path, line: batch.lines[record],
                           message: "the value of column '\(excerpt(columns[column]))' is \(length) bytes, longer than SQLite's length limit of \(maxLength) bytes (SQLITE_LIMIT_LENGTH)")
        }

        private func rejected(line: Int) -> PackagingError {
            let message = String(cString: sqlite3_errmsg(db.sqliteConnection))
            return PackagingError(.rowRejected, step: .build, path: path, line: line, message: "SQLite refused the row: \(excerpt(message, limit: 400))")
        }
    }

    /// Whether a multi-row INSERT into the table does what its rows inserted one by one would,
    /// and a refused one leaves nothing behind. Not when the table has:
    /// - foreign keys: SQLite checks them at the end of a statement, so in a group a row could
    ///   refer to a later one, which alone it cannot;
    /// - triggers: one could `RAISE(FAIL)`, keeping the group's earlier rows, or write rows with
    ///   foreign keys of their own;
    /// - an `ON CONFLICT` clause in its definition: `FAIL` keeps earlier rows, `ROLLBACK` ends the
    ///   transaction (the text is searched, so a mere mention is enough to play safe);
    /// - a virtual table's module (FTS flushes its pending terms at every statement savepoint).
    private func groupsRows(in db: Database) throws(PackagingError) -> Bool {
        try packaging(.build, path: path) {
            let sql = """
                SELECT NOT EXISTS (SELECT 1 FROM pragma_foreign_key_list(:table))
                   AND NOT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = :table COLLATE NOCASE)
                   AND NOT EXISTS (SELECT 1 FROM sqlite_temp_schema WHERE type = 'trigger' AND tbl_name = :table COLLATE NOCASE)
                   AND NOT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = :table COLLATE NOCASE
                                   AND (instr(upper(sql), 'CONFLICT') > 0 OR upper(sql) LIKE 'CREATE VIRTUAL%'))
                """
            return try Bool.fetchOne(db.cachedStatement(sql: sql), arguments: ["table": table]) ?? false
        }
    }

    /// The header names, each checked to be a column of the table, once.
    private func checkedColumns(header: CSVParser.Record, parser: CSVParser, db: Database) throws(PackagingError) -> [String] {
        let existing = try tableColumns(table, in: db, step: path)
        let known = Set(existing.map { $0.lowercased() })
        var seen = Set<String>()
        var columns: [String] = []
        for field in header.fields {
            let name = parser.text(field)
            guard known.contains(name.lowercased()) else {
                throw PackagingError(.unknownColumn, step: .build, path: path, line: header.line,
                                     message: "header names column '\(excerpt(name))', which table '\(table)' does not have (it has \(excerpt(existing.joined(separator: ", "), limit: 400)))")
            }
            guard seen.insert(name.lowercased()).inserted else {
                throw PackagingError(.invalidCSV, step: .build, path: path, line: header.line, message: "header names column '\(excerpt(name))' twice")
            }
            columns.append(name)
        }
        return columns
    }
}

/// The columns of the table a data step loads into, as declared.
///
/// - Throws: ``PackagingError/Code/unknownTable`` naming the step when the table does not exist.
func tableColumns(_ table: String, in db: Database, step path: String) throws(PackagingError) -> [String] {
    let names: [String]
    do {
        names = try String.fetchAll(db.cachedStatement(sql: "SELECT name FROM pragma_table_xinfo(?)"), arguments: [table])
    } catch {
        throw PackagingError.wrapping(error, step: .build, path: path)
    }
    guard !names.isEmpty else {
        throw PackagingError(.unknownTable, step: .build, path: path, message: "table '\(table)' does not exist (a data step loads into the table its name gives)")
    }
    return names
}

/// SQLite's "copy the bytes now" destructor.
let SQLITE_TRANSIENT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// Binds `count` bytes at `text` as UTF-8 text, copied by SQLite when `copy`, else read in place
/// until the statement is reset; returns SQLite's result code (`SQLITE_TOOBIG` over the length limit).
///
/// `sqlite3_bind_text64` takes the length as 64 bits: no length is ever narrowed to an `Int32`.
func bindText(_ statement: OpaquePointer, _ parameter: Int32, _ text: UnsafeRawPointer?, count: Int, copy: Bool) -> Int32 {
    guard let length = UInt64(exactly: count) else { return SQLITE_TOOBIG }
    // A NULL pointer would bind NULL: empty text points at a static empty string.
    let pointer = text ?? UnsafeRawPointer(("" as StaticString).utf8Start)
    return sqlite3_bind_text64(statement, parameter, pointer.assumingMemoryBound(to: CChar.self), length,
                               copy ? SQLITE_TRANSIENT : nil, UInt8(SQLITE_UTF8))
}
