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
    /// The statements a step runs, and whether they write the schema table directly.
    struct Runnable {
        var statements: ArraySlice<Statement>
        /// A statement sets `PRAGMA writable_schema`: `.dump` writes a virtual table as a row of
        /// `sqlite_schema` (its shadow tables follow as ordinary tables), which the connection sees
        /// only once its schema is read again (see `SeedBuilder`).
        var writesSchema: Bool
    }

    /// The statements to run, without the wrapper `sqlite3`'s `.dump` writes around its output.
    ///
    /// The wrapper is recognised only where `.dump` puts it: an optional `PRAGMA foreign_keys=OFF;`
    /// then `BEGIN TRANSACTION;` as the first statements, and `COMMIT;` as the last (letter case and
    /// spaces aside). Everything between runs as written: `DELETE FROM sqlite_sequence;` and
    /// `INSERT INTO sqlite_sequence …`, `ANALYZE sqlite_schema;` and `INSERT INTO sqlite_stat1 …`, and
    /// the `PRAGMA writable_schema=ON;` … `INSERT INTO sqlite_schema …` of a virtual table. Any other `BEGIN`, `COMMIT`, `END` or `ROLLBACK`
    /// (but `ROLLBACK TO` a savepoint) is an error naming the file and line: a step runs inside
    /// the build's own transaction.
    ///
    /// - Throws: ``PackagingError/Code/sqlFailed`` naming `path` and the statement's line.
    func runnable(path: String) throws(PackagingError) -> Runnable {
        var body = statements[...]
        let shape = body.prefix(2).map { Self.compact($0.sql) }
        let start = shape.first == "PRAGMAFOREIGN_KEYS=OFF;" && shape.dropFirst().first == "BEGINTRANSACTION;" ? 2
            : shape.first == "BEGINTRANSACTION;" ? 1 : 0
        if start > 0, body.count > start, let last = body.last, Self.compact(last.sql) == "COMMIT;" {
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
        let writesSchema = body.contains { Self.leadingWords($0.sql, 2) == ["PRAGMA", "WRITABLE_SCHEMA"] }
        return Runnable(statements: body, writesSchema: writesSchema)
    }

    /// The statement upper-cased without whitespace: how the wrapper's statements are recognised.
    private static func compact(_ sql: String) -> String {
        guard sql.utf8.count <= 64 else { return "" }
        return String(sql.uppercased().unicodeScalars.filter { !$0.properties.isWhitespace }.map(Character.init))
    }

    /// `BEGIN`, `COMMIT`, `END` or `ROLLBACK` when the statement starts a transaction or ends one; nil otherwise.
    private static func transactionKeyword(_ sql: String) -> String? {
        let words = leadingWords(sql, 3)
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

    /// The first `count` words of the statement's first 64 bytes, upper-cased: runs of ASCII
    /// letters and `_`. Read byte by byte (a dump has a statement per row: Unicode properties
    /// per character were a tenth of a large build).
    private static func leadingWords(_ sql: String, _ count: Int) -> [String] {
        var words: [String] = []
        var word: [UInt8] = []
        for byte in sql.utf8.prefix(64) {
            let upper = byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") ? byte - 32 : byte
            if (upper >= UInt8(ascii: "A") && upper <= UInt8(ascii: "Z")) || upper == UInt8(ascii: "_") {
                word.append(upper)
            } else if !word.isEmpty {
                words.append(String(decoding: word, as: UTF8.self))
                word.removeAll(keepingCapacity: true)
                if words.count == count { return words }
            }
        }
        if !word.isEmpty && words.count < count { words.append(String(decoding: word, as: UTF8.self)) }
        return words
    }
}
