import Foundation
import GRDB
import Reseed
import GRDBSQLite
import ReseedSystem

/// A `.sql` step read a chunk at a time and cut into statements, each with the line it starts on.
///
/// Statement ends are found with `sqlite3_complete()`, SQLite's own test for "this text is one or
/// more whole statements", so semicolons inside strings, comments and `CREATE TRIGGER … BEGIN … END`
/// bodies are handled as SQLite handles them. The text is normalised as ``MigrationStep/checksum(of:)``
/// reads it (BOM removed, line ends LF). Memory holds one statement and one chunk, never the file:
/// a `sqlite3 .dump` of a large database is one statement per row.
struct SQLScript: ~Copyable {
    struct Statement {
        var sql: String
        /// 1-based line of the statement's first token.
        var line: Int
    }

    /// The bytes read at a time.
    static let chunkSize = 1 << 20

    private let step: MigrationStep
    private let file: OwnedDescriptor
    private let path: String
    private let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: SQLScript.chunkSize, alignment: 16)
    /// The longest statement: SQLite's `SQLITE_LIMIT_LENGTH` on the build's connection.
    private let maxStatementBytes: Int
    private var normalizer = LineEndNormalizer()
    /// Normalised bytes; those before `start` were handed out already.
    private var buffer: [UInt8] = []
    private var start = 0
    /// How far from `start` the semicolons were tried already.
    private var scanned = 0
    /// The line `buffer[start]` is on.
    private var line = 1
    private var atEnd = false

    /// Opens `step`'s file, which must be a regular file.
    ///
    /// - Throws: ``PackagingError/Code/io`` naming the file when it cannot be opened.
    init(step: MigrationStep, maxStatementBytes: Int) throws(PackagingError) {
        self.step = step
        path = step.url.path
        self.maxStatementBytes = maxStatementBytes
        file = try step.open()
    }

    deinit {
        chunk.deallocate()
    }

    /// The next statement; nil at the end of the file.
    ///
    /// - Throws: ``PackagingError/Code/io`` when the file cannot be read, ``PackagingError/Code/sqlFailed``
    ///   naming the line of a statement longer than SQLite runs.
    mutating func next() throws(PackagingError) -> Statement? {
        while true {
            if let end = completeStatementEnd() {
                let range = start..<end
                let first = Self.firstToken(buffer, range)
                let statement = first.map { Statement(sql: String(decoding: buffer[$0..<end], as: UTF8.self), line: line + newlines(start..<$0)) }
                line += newlines(range)
                start = end
                scanned = 0
                if start >= Self.chunkSize && start * 2 >= buffer.count {
                    buffer.removeFirst(start)
                    start = 0
                }
                if let statement { return statement }
                continue
            }
            if atEnd {
                // A last statement without its semicolon runs as it is (SQLite reports what is wrong with it).
                let range = start..<buffer.count
                let first = Self.firstToken(buffer, range)
                let statement = first.map { Statement(sql: String(decoding: buffer[$0..<range.upperBound], as: UTF8.self), line: line + newlines(start..<$0)) }
                line += newlines(range)
                start = buffer.count
                return statement
            }
            if buffer.count - start > maxStatementBytes {
                let first = Self.firstToken(buffer, start..<buffer.count) ?? start
                throw PackagingError(.sqlFailed, step: .build, path: path, line: line + newlines(start..<first), message: """
                    a statement longer than \(maxStatementBytes) bytes, which SQLite does not run: split it, \
                    or load its values from a CSV or JSON step
                    """)
            }
            try read()
        }
    }

    /// The end (after its `;`) of the first whole statement from `start`; nil when the buffer has none.
    private mutating func completeStatementEnd() -> Int? {
        var candidate: [CChar] = []
        while start + scanned < buffer.count {
            let from = start + scanned
            let found: Int? = buffer.withUnsafeBytes { bytes in
                guard let base = bytes.baseAddress, let hit = memchr(base + from, Int32(UInt8(ascii: ";")), bytes.count - from) else { return nil }
                return base.distance(to: UnsafeRawPointer(hit))
            }
            guard let semicolon = found else {
                scanned = buffer.count - start
                return nil
            }
            scanned = semicolon + 1 - start
            candidate.removeAll(keepingCapacity: true)
            candidate.append(contentsOf: buffer[start...semicolon].map { CChar(bitPattern: $0) })
            candidate.append(0)
            if sqlite3_complete(candidate) != 0 { return semicolon + 1 }
        }
        return nil
    }

    /// Reads the next chunk into the buffer, normalised; at the end of the file, what the normaliser still holds.
    ///
    /// - Throws: ``PackagingError/Code/sqlFailed`` naming the line of a NUL byte.
    private mutating func read() throws(PackagingError) {
        let count = try step.read(file, into: chunk)
        let before = buffer.count
        if count > 0 {
            normalizer.feed(UnsafeRawBufferPointer(rebasing: chunk[0..<count])) { buffer.append(contentsOf: $0) }
        } else {
            normalizer.finish { buffer.append(contentsOf: $0) }
            atEnd = true
        }
        // SQLite reads SQL text up to its first NUL: whatever follows would be dropped without a word
        // (sqlite3's shell drops the rest of the line). Refused wherever it is, before a statement of the chunk runs.
        let nul: Int? = buffer.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress, bytes.count > before, let hit = memchr(base + before, 0, bytes.count - before) else { return nil }
            return base.distance(to: UnsafeRawPointer(hit))
        }
        if let nul {
            throw PackagingError(.sqlFailed, step: .build, path: path, line: line + newlines(start..<nul), message: """
                a NUL byte, where SQLite would stop reading the step: remove it, or write the character \
                in a value as char(0) or in a blob literal such as X'00'
                """)
        }
    }

    /// The line ends in `range` of the buffer.
    private func newlines(_ range: Range<Int>) -> Int {
        buffer.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress else { return 0 }
            var count = 0
            var offset = range.lowerBound
            while offset < range.upperBound, let hit = memchr(base + offset, 0x0A, range.upperBound - offset) {
                count += 1
                offset = base.distance(to: UnsafeRawPointer(hit)) + 1
            }
            return count
        }
    }

    /// The offset of the first byte that is neither whitespace nor inside a comment; nil when there is none.
    static func firstToken(_ bytes: [UInt8], _ range: Range<Int>) -> Int? {
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
    /// Runs every statement of the step through `execute`, without the wrapper `sqlite3`'s `.dump`
    /// writes around its output; returns whether a statement set `PRAGMA writable_schema` (`.dump`
    /// writes a virtual table as a row of `sqlite_schema`, which the connection sees only once its
    /// schema is read again: see `SeedBuilder`).
    ///
    /// The wrapper is recognised only where `.dump` puts it: an optional `PRAGMA foreign_keys=OFF;`
    /// then `BEGIN TRANSACTION;` as the first statements, and `COMMIT;` as the last (letter case and
    /// spaces aside). Everything between runs as written: `DELETE FROM sqlite_sequence;` and
    /// `INSERT INTO sqlite_sequence …`, `ANALYZE sqlite_schema;` and `INSERT INTO sqlite_stat1 …`, and
    /// the `PRAGMA writable_schema=ON;` … `INSERT INTO sqlite_schema …` of a virtual table. Any other
    /// `BEGIN`, `COMMIT`, `END` or `ROLLBACK` (but `ROLLBACK TO` a savepoint) is an error naming the
    /// file and line: a step runs inside the build's own transaction. `SAVEPOINT`, `RELEASE` and
    /// `ROLLBACK TO` run as in `sqlite3` (the build keeps a rollback journal); a savepoint still open
    /// at the end of a file without the wrapper is an error naming its line, since `sqlite3` would
    /// undo what followed it where the build would keep it. Statements run as they are
    /// read, so one that breaks these rules after others ran fails the step, whose transaction the
    /// caller rolls back.
    ///
    /// - Throws: ``PackagingError/Code/sqlFailed`` naming `path` and the statement's line; what `execute` throws.
    mutating func run(_ execute: (Statement) throws -> Void) throws -> Bool {
        var index = 0
        var writesSchema = false
        // A leading `PRAGMA foreign_keys=OFF;`, run as a statement unless `BEGIN TRANSACTION;` follows it.
        var heldPragma: Statement?
        var wrapperBegin: Statement?
        // A `COMMIT;` after the wrapper's BEGIN: the wrapper's end if nothing follows it.
        var heldCommit: Statement?
        var savepoints = OpenSavepoints()
        func notAllowed(_ statement: Statement, _ keyword: String) -> PackagingError {
            PackagingError(.sqlFailed, step: .build, path: path, line: statement.line, message: """
                \(keyword) is not allowed in a .sql step: each step runs inside the build's own transaction \
                (only the BEGIN TRANSACTION; … COMMIT; that sqlite3's .dump writes around a whole file is accepted)
                """)
        }
        /// `following`: a statement after this one that was read already.
        func perform(_ statement: Statement, followedBy following: Statement? = nil) throws {
            let words = Self.leadingWords(statement.sql, 3)
            if let keyword = Self.transactionKeyword(words) {
                guard let begin = wrapperBegin else { throw notAllowed(statement, keyword) }
                // Whether the wrapper is one shows only at the end: when the file does not end with its
                // COMMIT, the wrapper's BEGIN is the first statement not allowed.
                var last = following
                while let more = try next() { last = more }
                throw last.map { Self.compact($0.sql) == "COMMIT;" } == true ? notAllowed(statement, keyword) : notAllowed(begin, "BEGIN")
            }
            if words.prefix(2) == ["PRAGMA", "WRITABLE_SCHEMA"] { writesSchema = true }
            try execute(statement)
            savepoints.record(statement, words: words)
        }
        while let statement = try next() {
            defer { index += 1 }
            let shape = Self.compact(statement.sql)
            if index == 0 && shape == "PRAGMAFOREIGN_KEYS=OFF;" {
                heldPragma = statement
                continue
            }
            if (index == 0 || (index == 1 && heldPragma != nil)) && shape == "BEGINTRANSACTION;" {
                wrapperBegin = statement
                heldPragma = nil
                continue
            }
            if let pragma = heldPragma {
                heldPragma = nil
                try perform(pragma)
            }
            if let commit = heldCommit {
                heldCommit = nil
                try perform(commit, followedBy: statement)
            }
            if wrapperBegin != nil && shape == "COMMIT;" {
                heldCommit = statement
                continue
            }
            try perform(statement)
        }
        if let pragma = heldPragma { try perform(pragma) }
        if let begin = wrapperBegin, heldCommit == nil { try perform(begin) }
        // Inside the wrapper its COMMIT keeps what an open savepoint holds, in sqlite3 as here.
        if wrapperBegin == nil, let open = savepoints.outermost {
            throw PackagingError(.sqlFailed, step: .build, path: path, line: open.line, message: """
                SAVEPOINT \(excerpt(open.name)) is never released, so sqlite3 would undo everything after it when the \
                file ends where the build would keep it: add RELEASE \(excerpt(open.name)) after the statements it guards
                """)
        }
        return writesSchema
    }

    /// The statement upper-cased without whitespace: how the wrapper's statements are recognised.
    private static func compact(_ sql: String) -> String {
        guard sql.utf8.count <= 64 else { return "" }
        return String(sql.uppercased().unicodeScalars.filter { !$0.properties.isWhitespace }.map(Character.init))
    }

    /// `BEGIN`, `COMMIT`, `END` or `ROLLBACK` when the statement (its ``leadingWords(_:_:)``)
    /// starts a transaction or ends one; nil otherwise.
    private static func transactionKeyword(_ words: [String]) -> String? {
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
    static func leadingWords(_ sql: String, _ count: Int) -> [String] {
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
