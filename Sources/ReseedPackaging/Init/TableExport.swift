import Foundation
import GRDB
import GRDBSQLite
import Reseed
import ReseedSystem

/// A step file being written, through a buffer of about 1 MiB.
final class StepFile {
    let name: String
    private let directory: Directory
    private let file: OwnedDescriptor
    private var buffer: [UInt8] = []

    init(_ name: String, in directory: Directory) throws {
        self.name = name
        self.directory = directory
        file = try directory.createExclusive(name)
        buffer.reserveCapacity(1 << 20)
    }

    func append(_ bytes: some Sequence<UInt8>) throws {
        buffer.append(contentsOf: bytes)
        if buffer.count >= 1 << 20 { try flush() }
    }

    func append(_ text: String) throws { try append(text.utf8) }

    /// Writes what the buffer holds; call once at the end.
    func flush() throws {
        try directory.write(buffer, to: file, name: name)
        buffer.removeAll(keepingCapacity: true)
    }
}

/// The rows of one table (or one foreign-key cycle of tables) written as a step: a CSV file when
/// CSV carries every value exactly (see ``ValueText/appendCSVField(_:column:affinity:to:)``), else INSERTs.
struct TableExport {
    let db: Database
    let values: ValueText
    let directory: Directory

    /// What was written: the file's name, the rows, and why it is SQL when it is not CSV.
    struct Written {
        var fileName: String
        var rows: Int
        var sqlBecause: String?
    }

    /// Writes step `number` for `tables` (nil when they hold no rows).
    func write(_ tables: [SourceSchema.Table], number: String) throws -> Written? {
        let counts = try tables.map { try Int.fetchOne(db, sql: "SELECT count(*) FROM main.\($0.name.quotedIdentifier)\(Self.filter($0))") ?? 0 }
        let rows = counts.reduce(0, +)
        guard rows > 0 else { return nil }
        let description = Self.description(for: tables.map(\.name))
        if tables.count == 1, let table = tables.first, !table.referencesItself {
            var reason = "its name is not letters, digits and _ (a CSV step's name is its table's)"
            if table.columns.first?.name.unicodeScalars.first == "\u{FEFF}" {
                // The header is the file's first bytes, where a build reads U+FEFF as a byte order mark and drops it.
                reason = "its first column's name starts with U+FEFF, which a CSV file's first bytes cannot carry"
            } else if Self.isStepName(table.name) {
                // Written as CSV until a value CSV cannot carry; then the file goes and SQL is written.
                let file = try StepFile("\(number)_\(table.name).csv", in: directory)
                guard let problem = try writeCSV(table, to: file) else {
                    try file.flush()
                    return Written(fileName: file.name, rows: rows, sqlBecause: nil)
                }
                try directory.remove(file.name)
                reason = problem
            }
            let file = try StepFile("\(number)_\(description).sql", in: directory)
            try writeSQL(table, to: file)
            try file.flush()
            return Written(fileName: file.name, rows: rows, sqlBecause: reason)
        }
        let file = try StepFile("\(number)_\(description).sql", in: directory)
        try file.append("-- Rows may name rows that come later: foreign keys are checked at the end of the step.\n")
        for table in tables { try writeSQL(table, to: file) }
        try file.flush()
        return Written(fileName: file.name, rows: rows, sqlBecause: tables.count == 1 ? "its foreign keys name its own rows" : "their foreign keys name each other")
    }

    /// Writes the `sqlite_stat1` rows about `tables` (lowercased names) as `INSERT`s, in the
    /// order ANALYZE wrote them; returns how many.
    func writeStatistics(to file: StepFile, tables: Set<String>) throws -> Int {
        var rows = 0
        try forEachRow("SELECT tbl, idx, stat FROM main.sqlite_stat1 ORDER BY rowid") { handle in
            guard case .text(let table) = StoredValue(handle, column: 0),
                  tables.contains(String(decoding: table, as: UTF8.self).lowercased()) else { return true }
            let literals = (0..<3).map { values.sqlLiteral(StoredValue(handle, column: Int32($0))) }
            try file.append("INSERT INTO sqlite_stat1(tbl, idx, stat) VALUES(\(literals.joined(separator: ", ")));\n")
            rows += 1
            return true
        }
        return rows
    }

    /// Whether a name can be a CSV step's table (`NNNN_table.csv`).
    static func isStepName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 200 && name.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "_") }
    }

    /// A step description from table names: letters, digits and `_`, at most 100 bytes.
    static func description(for names: [String]) -> String {
        let joined = names.joined(separator: "_").unicodeScalars.map { $0.isASCII && CharacterSet.alphanumerics.contains($0) ? Character($0) : "_" }
        let text = String(joined.prefix(100))
        return text.isEmpty ? "rows" : text
    }

    /// The rows in rowid (or primary key) order, with the rowid first when the rows do not carry it.
    private func select(_ table: SourceSchema.Table, rowid: String?) -> String {
        let columns = (rowid.map { [$0] } ?? []) + table.columns.map(\.name.quotedIdentifier)
        // By a name that reaches the rowid: a column may be named `_rowid_`.
        let order = (table.rowidColumn?.quotedIdentifier ?? rowid).map { " ORDER BY \($0)" } ?? ""
        return "SELECT \(columns.joined(separator: ", ")) FROM main.\(table.name.quotedIdentifier)\(Self.filter(table))\(order)"
    }

    /// The `WHERE` clause of the table's ``SourceSchema/Table/rowFilter``; empty when every row is carried.
    private static func filter(_ table: SourceSchema.Table) -> String {
        table.rowFilter.map { " WHERE \($0)" } ?? ""
    }

    /// A name that reaches the rowid of a table whose rows do not carry it; nil when none is needed
    /// (`SourceSchema` refuses a table whose columns take all three names).
    private func rowidName(_ table: SourceSchema.Table) -> String? {
        guard table.hasRowid, !table.rowidIsColumn else { return nil }
        let names = Set(table.columns.map { $0.name.lowercased() })
        return ["rowid", "_rowid_", "oid"].first { !names.contains($0) }
    }

    private func forEachRow(_ query: String, _ body: (OpaquePointer) throws -> Bool) throws {
        try ReseedPackaging.forEachRow(db, query, body)
    }

    private static func describe(_ value: StoredValue) -> String {
        switch value {
        case .null: "NULL"
        case .integer: "an INTEGER"
        case .real(let real): "a REAL (\(real))"
        case .text: "TEXT with a CR, a NUL or bytes that are not UTF-8, or in a numeric column"
        case .blob: "a BLOB"
        }
    }

    /// Writes the table as CSV; stops at the first value CSV cannot carry exactly and says why
    /// (the file is then incomplete); nil when every row was written.
    private func writeCSV(_ table: SourceSchema.Table, to file: StepFile) throws -> String? {
        try file.append(table.columns.map { Self.csvHeaderField($0.name) }.joined(separator: ",") + "\n")
        let rowid = rowidName(table)
        let first = rowid == nil ? 0 : 1
        var line: [UInt8] = []
        var problem: String?
        var expected: Int64 = 1
        try forEachRow(select(table, rowid: rowid)) { handle in
            // A CSV step's rows get rowids 1, 2, 3…: the table's must be those.
            if rowid != nil {
                guard sqlite3_column_int64(handle, 0) == expected else {
                    problem = "its rowids are not 1, 2, 3… and it has no INTEGER PRIMARY KEY to carry them"
                    return false
                }
                expected += 1
            }
            line.removeAll(keepingCapacity: true)
            for (index, column) in table.columns.enumerated() {
                if index > 0 { line.append(UInt8(ascii: ",")) }
                guard values.appendCSVField(handle, column: Int32(first + index), affinity: column.affinity, to: &line) else {
                    let value = StoredValue(handle, column: Int32(first + index))
                    problem = "column '\(excerpt(column.name))' holds \(Self.describe(value)), which CSV cannot carry exactly there"
                    return false
                }
            }
            line.append(0x0A)
            try file.append(line)
            return true
        }
        return problem
    }

    private static func csvHeaderField(_ name: String) -> String {
        guard name.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" || $0 == " " }) || name.isEmpty else { return name }
        return "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// The most rows, and about the most bytes, of one `INSERT` a SQL step writes: a statement per
    /// row cost more to run than the row itself, and a statement stays far below SQLite's length limit.
    static let rowsPerInsert = 200
    static let bytesPerInsert = 1 << 18

    /// One multi-row `INSERT` per group of rows, a row a line.
    private func writeSQL(_ table: SourceSchema.Table, to file: StepFile) throws {
        let rowid = rowidName(table)
        let names = (rowid.map { [$0] } ?? []) + table.columns.map(\.name.quotedIdentifier)
        let insert = "INSERT INTO \(table.name.quotedIdentifier)(\(names.joined(separator: ","))) VALUES\n("
        var rows = 0
        var bytes = 0
        try forEachRow(select(table, rowid: rowid)) { handle in
            var literals: [String] = []
            literals.reserveCapacity(names.count)
            for index in names.indices {
                literals.append(values.sqlLiteral(StoredValue(handle, column: Int32(index))))
            }
            let row = literals.joined(separator: ",")
            let start = rows == 0 ? insert : "),\n("
            try file.append(start + row)
            rows += 1
            bytes += row.utf8.count
            if rows == Self.rowsPerInsert || bytes >= Self.bytesPerInsert {
                try file.append(");\n")
                (rows, bytes) = (0, 0)
            }
            return true
        }
        if rows > 0 { try file.append(");\n") }
    }
}

/// Runs `query` and hands each row's statement to `body`, which returns false to stop.
///
/// - Throws: the `DatabaseError` of a failed step, or what `body` throws.
func forEachRow(_ db: Database, _ query: String, _ body: (OpaquePointer) throws -> Bool) throws {
    let statement = try db.makeStatement(sql: query)
    let handle = statement.sqliteStatement
    defer { _ = sqlite3_reset(handle) }
    while true {
        let code = sqlite3_step(handle)
        if code == SQLITE_DONE { return }
        guard code == SQLITE_ROW else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)), sql: query)
        }
        guard try body(handle) else { return }
    }
}
