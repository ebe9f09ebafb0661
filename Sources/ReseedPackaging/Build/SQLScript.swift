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

extension SQLScript {
    /// The statements a step runs, and whether it is a `sqlite3 … .dump` file.
    struct Runnable {
        var statements: ArraySlice<Statement>
        /// The dump began with `PRAGMA foreign_keys=OFF;`: its rows come table by table, so a row
        /// may name one that comes later. The builder then checks foreign keys at the step's end.
        var defersForeignKeys: Bool
    }

    /// The statements to run, without the wrapper `sqlite3`'s `.dump` writes around its output.
    ///
    /// The wrapper is recognised only where `.dump` puts it: an optional `PRAGMA foreign_keys=OFF;`
    /// then `BEGIN TRANSACTION;` as the first statements, and `COMMIT;` as the last (letter case and
    /// spaces aside). Everything between runs as written, `DELETE FROM sqlite_sequence;` and
    /// `INSERT INTO sqlite_sequence …` included. Any other `BEGIN`, `COMMIT`, `END` or `ROLLBACK`
    /// (but `ROLLBACK TO` a savepoint) is an error naming the file and line: a step runs inside
    /// the build's own transaction.
    ///
    /// - Throws: ``PackagingError/Code/sqlFailed`` naming `path` and the statement's line.
    func runnable(path: String) throws(PackagingError) -> Runnable {
        var body = statements[...]
        var defers = false
        let shape = body.prefix(2).map { Self.compact($0.sql) }
        let start = shape.first == "PRAGMAFOREIGN_KEYS=OFF;" && shape.dropFirst().first == "BEGINTRANSACTION;" ? 2
            : shape.first == "BEGINTRANSACTION;" ? 1 : 0
        if start > 0, body.count > start, let last = body.last, Self.compact(last.sql) == "COMMIT;" {
            defers = start == 2
            body = body.dropFirst(start).dropLast()
        }
        for statement in body {
            if let keyword = Self.transactionKeyword(statement.sql) {
                throw PackagingError(.sqlFailed, path: path, line: statement.line, message: """
                    \(keyword) is not allowed in a .sql step: each step runs inside the build's own transaction \
                    (only the BEGIN TRANSACTION; … COMMIT; that sqlite3's .dump writes around a whole file is accepted)
                    """)
            }
        }
        return Runnable(statements: body, defersForeignKeys: defers)
    }

    /// The statement upper-cased without whitespace: how the wrapper's statements are recognised.
    private static func compact(_ sql: String) -> String {
        guard sql.utf8.count <= 64 else { return "" }
        return String(sql.uppercased().unicodeScalars.filter { !$0.properties.isWhitespace }.map(Character.init))
    }

    /// `BEGIN`, `COMMIT`, `END` or `ROLLBACK` when the statement starts a transaction or ends one; nil otherwise.
    private static func transactionKeyword(_ sql: String) -> String? {
        let words = sql.prefix(64).uppercased().split(whereSeparator: { !($0.isLetter || $0 == "_") }).prefix(3).map(String.init)
        guard let first = words.first else { return nil }
        switch first {
        case "BEGIN", "COMMIT", "END":
            return first
        case "ROLLBACK":
            // ROLLBACK [TRANSACTION] TO savepoint stays inside the transaction.
            let next = words.dropFirst().first == "TRANSACTION" ? words.dropFirst(2).first : words.dropFirst().first
            return next == "TO" ? nil : first
        default:
            return nil
        }
    }
}
