import Foundation
import GRDB
import GRDBSQLite
import Reseed

/// Loads a `.json` step, an array of objects keyed by column, into its table.
///
/// `null` → NULL; `true`/`false` → 1/0; a number without fraction or exponent
/// that fits 64 bits → INTEGER, any other number → REAL; a string → TEXT;
/// a nested object or array → its JSON text as written in the file. A key that
/// is not a column is an error naming it and the element's index.
struct JSONLoader {
    let path: String
    let table: String

    func load(_ bytes: [UInt8], into db: Database) throws(PackagingError) -> Int {
        let lines = LineIndex(bytes)
        let root: JSONNode
        do {
            root = try JSONNode.parse(bytes, maxDepth: 512)
        } catch {
            throw PackagingError(.invalidJSON, path: path, line: error.line, message: "not valid JSON: \(error.message) (column \(error.column))")
        }
        guard case .array(let elements) = root.value else {
            throw PackagingError(.invalidJSON, path: path, line: lines.line(at: root.range.lowerBound), message: "expected an array of objects, found \(root.kindName)")
        }
        let columns = try existingColumns(db)
        var statements: [[String]: Statement] = [:]
        for (index, element) in elements.enumerated() {
            let elementLine = lines.line(at: element.range.lowerBound)
            guard case .object(let members) = element.value else {
                throw PackagingError(.invalidJSON, path: path, line: elementLine, message: "element \(index) is \(element.kindName), not an object")
            }
            var keys: [String] = []
            var values: [DatabaseValue] = []
            for member in members {
                guard let column = columns[member.key.lowercased()] else {
                    throw PackagingError(.unknownColumn, path: path, line: elementLine,
                                         message: "element \(index) has key '\(member.key)', which is not a column of table '\(table)'")
                }
                if let earlier = keys.firstIndex(of: column) {
                    keys.remove(at: earlier)
                    values.remove(at: earlier)
                }
                keys.append(column)
                values.append(try value(of: member.value, in: bytes, index: index, line: elementLine))
            }
            do {
                let statement: Statement
                if let cached = statements[keys] {
                    statement = cached
                } else {
                    let sql = keys.isEmpty
                        ? "INSERT INTO \(quoteIdentifier(table)) DEFAULT VALUES"
                        : "INSERT INTO \(quoteIdentifier(table)) (\(keys.map(quoteIdentifier).joined(separator: ", "))) VALUES (\(Array(repeating: "?", count: keys.count).joined(separator: ", ")))"
                    statement = try db.makeStatement(sql: sql)
                    statements[keys] = statement
                }
                try statement.setArguments(StatementArguments(values))
                bindTextWithNUL(values, to: statement)
                try statement.execute()
            } catch let error as DatabaseError {
                throw PackagingError(.rowRejected, path: path, line: elementLine,
                                     message: "SQLite refused element \(index): \(error.message ?? "\(error.resultCode)")", databaseError: error)
            } catch {
                throw PackagingError.wrapping(error, path: path, line: elementLine)
            }
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
                throw PackagingError(.invalidJSON, path: path, line: line, message: "element \(index): number \(text) does not fit a 64-bit float")
            }
            return real.databaseValue
        }
    }

    /// Binds again, with its length, each string holding a NUL (a JSON string may: `"\u0000"`):
    /// GRDB binds a string only up to its first NUL. `execute()` then runs with these bindings.
    private func bindTextWithNUL(_ values: [DatabaseValue], to statement: Statement) {
        for (index, value) in values.enumerated() {
            guard case .string(let text) = value.storage, text.utf8.contains(0) else { continue }
            let bytes = Array(text.utf8)
            bytes.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) {
                    _ = sqlite3_bind_text(statement.sqliteStatement, Int32(index + 1), $0.baseAddress, Int32($0.count), SQLITE_TRANSIENT)
                }
            }
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
        for (offset, byte) in bytes.enumerated() where byte == 0x0A { starts.append(offset + 1) }
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
