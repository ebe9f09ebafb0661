import Foundation
import GRDB
import GRDBSQLite

/// Loads a `.csv` step (RFC 4180) into its table, parsing bytes and reusing one prepared statement.
///
/// - A header row names the columns; each must be a column of the table.
/// - Fields may be quoted; inside quotes, commas, newlines and doubled quotes (`""`) are data.
/// - Records end with LF or CRLF; a UTF-8 BOM at the start is skipped.
/// - An unquoted empty field is NULL; a quoted empty field (`""`) is the empty string,
///   as PostgreSQL's `COPY … CSV` reads them.
/// - Values are bound as text, so the column's affinity decides their type:
///   an INTEGER column stores `42` as an integer, a REAL column `1.5` as a real.
/// - Errors name the file and the physical line where the record starts.
struct CSVLoader {
    /// How often, in rows, progress is reported.
    static let progressInterval = 100_000

    let path: String
    let table: String

    /// Inserts every record of `bytes` into the table; returns the number of rows.
    func load(_ bytes: UnsafeRawBufferPointer, into db: Database, progress: ((Int) -> Void)?) throws(PackagingError) -> Int {
        var parser = CSVParser(bytes: bytes, path: path)
        guard let header = try parser.nextRecord(expecting: nil) else {
            throw PackagingError(.invalidCSV, path: path, line: 1, message: "the file is empty: a header row of column names is required")
        }
        let columns = try checkedColumns(header: header, parser: parser, db: db)
        let placeholders = Array(repeating: "?", count: columns.count).joined(separator: ", ")
        let sql = "INSERT INTO \(quoteIdentifier(table)) (\(columns.map(quoteIdentifier).joined(separator: ", "))) VALUES (\(placeholders))"
        let statement: Statement
        do {
            statement = try db.makeStatement(sql: sql)
        } catch {
            throw PackagingError.wrapping(error, path: path, line: 1)
        }
        let handle = statement.sqliteStatement
        let readAhead = CSVReadAhead(parser, columns: columns.count)
        defer { readAhead.stop() }
        var unescaped = [[UInt8]](repeating: [], count: columns.count)
        var rows = 0
        while true {
            let batch = readAhead.next()
            for (record, line) in batch.lines.enumerated() {
                for index in 0..<columns.count {
                    let field = batch.fields[record * columns.count + index]
                    let start = bytes.baseAddress! + field.start
                    let length = Int32(field.end - field.start)
                    switch field.kind {
                    case .unquoted where length == 0:
                        sqlite3_bind_null(handle, Int32(index + 1))
                    case .unquoted, .quoted:
                        sqlite3_bind_text(handle, Int32(index + 1), start.assumingMemoryBound(to: CChar.self), length, nil)
                    case .quotedWithEscapes:
                        CSVParser.unescape(UnsafeRawBufferPointer(start: start, count: Int(length)), into: &unescaped[index])
                        unescaped[index].withUnsafeBufferPointer { buffer in
                            buffer.withMemoryRebound(to: CChar.self) {
                                _ = sqlite3_bind_text(handle, Int32(index + 1), $0.baseAddress, Int32($0.count), SQLITE_TRANSIENT)
                            }
                        }
                    }
                }
                let code = sqlite3_step(handle)
                sqlite3_reset(handle)
                guard code == SQLITE_DONE else {
                    let message = String(cString: sqlite3_errmsg(db.sqliteConnection))
                    throw PackagingError(.rowRejected, path: path, line: line, message: "SQLite refused the row: \(message)")
                }
                rows += 1
                if rows % Self.progressInterval == 0 { progress?(rows) }
            }
            if let error = batch.error { throw error }
            if batch.isLast { return rows }
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
                throw PackagingError(.unknownColumn, path: path, line: header.line,
                                     message: "header names column '\(name)', which table '\(table)' does not have (it has \(existing.joined(separator: ", ")))")
            }
            guard seen.insert(name.lowercased()).inserted else {
                throw PackagingError(.invalidCSV, path: path, line: header.line, message: "header names column '\(name)' twice")
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
        names = try Row.fetchAll(db, sql: "SELECT name FROM pragma_table_xinfo(?)", arguments: [table]).map { $0["name"] }
    } catch {
        throw PackagingError.wrapping(error, path: path)
    }
    guard !names.isEmpty else {
        throw PackagingError(.unknownTable, path: path, message: "table '\(table)' does not exist (a data step loads into the table its name gives)")
    }
    return names
}

/// SQLite's "copy the bytes now" destructor.
let SQLITE_TRANSIENT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// `"name"` with inner quotes doubled.
func quoteIdentifier(_ name: String) -> String {
    "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}
