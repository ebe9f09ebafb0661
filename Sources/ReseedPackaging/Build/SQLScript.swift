import GRDB
import GRDBSQLite

/// A `.sql` step cut into statements, each with the line it starts on.
///
/// Statement ends are found with `sqlite3_complete()`, SQLite's own test
/// for "this text is one or more whole statements", so semicolons inside
/// strings, comments and `CREATE TRIGGER … BEGIN … END` bodies are handled
/// as SQLite handles them. The builder hands it the step as ``MigrationStep/normalized(_:)``
/// gives it (BOM removed, line ends LF).
struct SQLScript {
    struct Statement {
        var sql: String
        /// 1-based line of the statement's first token.
        var line: Int
    }

    var statements: [Statement] = []

    init(_ body: [UInt8]) {
        let lines = LineIndex(body)
        var start = 0
        var candidate: [CChar] = []
        for index in body.indices where body[index] == UInt8(ascii: ";") {
            candidate.removeAll(keepingCapacity: true)
            candidate.append(contentsOf: body[start...index].map { CChar(bitPattern: $0) })
            candidate.append(0)
            if sqlite3_complete(candidate) != 0 {
                append(body, start..<index + 1, lines)
                start = index + 1
            }
        }
        append(body, start..<body.count, lines)
    }

    private mutating func append(_ bytes: [UInt8], _ range: Range<Int>, _ lines: LineIndex) {
        guard let first = Self.firstToken(bytes, range) else { return }
        statements.append(Statement(sql: String(decoding: bytes[first..<range.upperBound], as: UTF8.self), line: lines.line(at: first)))
    }

    /// The offset of the first byte that is neither whitespace nor inside a comment; nil when there is none.
    private static func firstToken(_ bytes: [UInt8], _ range: Range<Int>) -> Int? {
        var index = range.lowerBound
        while index < range.upperBound {
            let byte = bytes[index]
            if byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == 0x0C {
                index += 1
            } else if byte == UInt8(ascii: "-"), index + 1 < range.upperBound, bytes[index + 1] == UInt8(ascii: "-") {
                while index < range.upperBound, bytes[index] != 0x0A { index += 1 }
            } else if byte == UInt8(ascii: "/"), index + 1 < range.upperBound, bytes[index + 1] == UInt8(ascii: "*") {
                index += 2
                while index + 1 < range.upperBound, !(bytes[index] == UInt8(ascii: "*") && bytes[index + 1] == UInt8(ascii: "/")) { index += 1 }
                index += 2
            } else if byte == UInt8(ascii: ";") {
                index += 1
            } else {
                return index
            }
        }
        return nil
    }
}
