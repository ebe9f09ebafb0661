import Foundation
import GRDB
import GRDBSQLite
import Reseed
import ReseedSystem

/// Loads a `.json` step, an array of objects keyed by column, into its table.
///
/// `null` → NULL; `true`/`false` → 1/0; a number without fraction or exponent
/// that fits 64 bits → INTEGER, any other number → REAL; a string → TEXT;
/// a nested object or array → its JSON text as written in the file. A key that
/// is not a column is an error naming it and the element's index. A string longer than
/// SQLite's length limit (`SQLITE_LIMIT_LENGTH`) is an error naming the element and its key.
/// Errors quote at most a few hundred bytes of the input.
///
/// The builder hands it the step as ``MigrationStep/normalized(_:)`` gives it (line ends LF),
/// so the text kept for a nested value is the same on every checkout.
struct JSONLoader {
    let path: String
    let table: String

    func load(_ bytes: [UInt8], into db: Database) throws(PackagingError) -> Int {
        let lines = LineIndex(bytes)
        let root: JSONNode
        do {
            root = try JSONNode.parse(bytes, maxDepth: 512)
        } catch {
            throw PackagingError(.invalidJSON, step: .build, path: path, line: error.line, message: "not valid JSON: \(error.message) (column \(error.column))")
        }
        guard case .array(let elements) = root.value else {
            throw PackagingError(.invalidJSON, step: .build, path: path, line: lines.line(at: root.range.lowerBound), message: "expected an array of objects, found \(root.kindName)")
        }
        let columns = try existingColumns(db)
        var statements: [[String]: Statement] = [:]
        for (index, element) in elements.enumerated() {
            let elementLine = lines.line(at: element.range.lowerBound)
            guard case .object(let members) = element.value else {
                throw PackagingError(.invalidJSON, step: .build, path: path, line: elementLine, message: "element \(index) is \(element.kindName), not an object")
            }
            var keys: [String] = []
            var values: [DatabaseValue] = []
            for member in members {
                guard let column = columns[member.key.lowercased()] else {
                    throw PackagingError(.unknownColumn, step: .build, path: path, line: elementLine,
                                         message: "element \(index) has key '\(excerpt(member.key))', which is not a column of table '\(table)'")
                }
                if let earlier = keys.firstIndex(of: column) {
                    keys.remove(at: earlier)
                    values.remove(at: earlier)
                }
                keys.append(column)
                values.append(try value(of: member.value, in: bytes, index: index, line: elementLine))
            }
            let statement: Statement
            if let cached = statements[keys] {
                statement = cached
            } else {
                let sql = keys.isEmpty
                    ? "INSERT INTO \(table.quotedIdentifier) DEFAULT VALUES"
                    : "INSERT INTO \(table.quotedIdentifier) (\(keys.map(\.quotedIdentifier).joined(separator: ", "))) VALUES (\(Array(repeating: "?", count: keys.count).joined(separator: ", ")))"
                do {
                    // Bound with copies (SQLITE_TRANSIENT): nothing of this step outlives it in the cache.
                    statement = try db.cachedStatement(sql: sql)
                } catch {
                    throw PackagingError.wrapping(error, step: .build, path: path, line: elementLine)
                }
                statements[keys] = statement
            }
            try insert(values, keys: keys, with: statement.sqliteStatement, db: db, index: index, line: elementLine)
        }
        return elements.count
    }

    private func value(of node: JSONNode, in bytes: [UInt8], index: Int, line: Int) throws(PackagingError) -> DatabaseValue {
        switch node.value {
        case .null: return .null
        case .bool(let flag): return (flag ? 1 : 0).databaseValue
        case .string(let text): return text.databaseValue
        case .array, .object, .opaque: return String(decoding: bytes[node.range], as: UTF8.self).databaseValue
        case .number(let text):
            if !text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }), let integer = Int64(text) {
                return integer.databaseValue
            }
            guard let real = Double(text), real.isFinite else {
                throw PackagingError(.invalidJSON, step: .build, path: path, line: line, message: "element \(index): number \(excerpt(text)) does not fit a 64-bit float")
            }
            return real.databaseValue
        }
    }

    /// Binds `values` and runs the statement, checking every SQLite result. Not GRDB's
    /// `setArguments`, which stops the process when SQLite refuses a binding (a string over the
    /// length limit) and binds a string only up to its first NUL (a JSON string may hold `"\u0000"`).
    private func insert(_ values: [DatabaseValue], keys: [String], with handle: OpaquePointer, db: Database, index: Int, line: Int) throws(PackagingError) {
        for (offset, value) in values.enumerated() {
            // As many parameters as the table has columns, at most 32,767: always an Int32.
            let parameter = Int32(truncatingIfNeeded: offset + 1)
            let code: Int32
            switch value.storage {
            case .null: code = sqlite3_bind_null(handle, parameter)
            case .int64(let integer): code = sqlite3_bind_int64(handle, parameter, integer)
            case .double(let real): code = sqlite3_bind_double(handle, parameter, real)
            case .string(var text): code = text.withUTF8 { bindText(handle, parameter, $0.baseAddress, count: $0.count, copy: true) }
            case .blob(let data):
                // Not made from JSON; bound as a blob all the same.
                code = data.withUnsafeBytes {
                    sqlite3_bind_blob64(handle, parameter, $0.baseAddress ?? UnsafeRawPointer(("" as StaticString).utf8Start), UInt64($0.count), SQLITE_TRANSIENT)
                }
            }
            guard code == SQLITE_OK else {
                let limit = sqlite3_limit(db.sqliteConnection, SQLITE_LIMIT_LENGTH, -1)
                let why = code == SQLITE_TOOBIG
                    ? "is longer than SQLite's length limit of \(limit) bytes (SQLITE_LIMIT_LENGTH)"
                    : "cannot be bound: \(String(cString: sqlite3_errstr(code)))"
                throw PackagingError(.rowRejected, step: .build, path: path, line: line,
                                     message: "element \(index): the value of key '\(excerpt(keys[offset]))' \(why)")
            }
        }
        let code = sqlite3_step(handle)
        // After a failed step, reset returns the same error; after SQLITE_DONE, any error is new.
        let reset = sqlite3_reset(handle)
        guard code == SQLITE_DONE, reset == SQLITE_OK else {
            let message = String(cString: sqlite3_errmsg(db.sqliteConnection))
            throw PackagingError(.rowRejected, step: .build, path: path, line: line,
                                 message: "SQLite refused element \(index): \(excerpt(message, limit: 400))",
                                 databaseError: DatabaseError(resultCode: ResultCode(rawValue: code == SQLITE_DONE ? reset : code), message: message))
        }
    }

    /// Lowercased column name → the name as declared.
    private func existingColumns(_ db: Database) throws(PackagingError) -> [String: String] {
        let names = try tableColumns(table, in: db, step: path)
        return Dictionary(names.map { ($0.lowercased(), $0) }, uniquingKeysWith: { first, _ in first })
    }
}

/// Byte offset → 1-based line number, by binary search over the line starts.
struct LineIndex {
    private var starts: [Int] = [0]

    init(_ bytes: [UInt8]) {
        // memchr: the search runs at memory speed, in a debug build too.
        bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            while offset < buffer.count, let found = memchr(base + offset, 0x0A, buffer.count - offset) {
                offset = base.distance(to: UnsafeRawPointer(found)) + 1
                starts.append(offset)
            }
        }
    }

    func line(at offset: Int) -> Int {
        var low = 0
        var high = starts.count
        while low < high {
            let middle = (low + high) / 2
            if starts[middle] <= offset { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
