import Foundation
import GRDB
import GRDBSQLite
import ReseedTesting
import ReseedTestSupport
import Testing
@testable import ReseedPackaging

/// Draws in plain integer arithmetic. SplitMix64's `int`, `chance` and `pick` go through the
/// standard library's generic `random(in:using:)`, which a debug build runs unspecialised (about a
/// microsecond a draw): drawing every byte of a case that way was most of these tests' time.
extension SplitMix64 {
    /// A uniform integer in `range` (a 64-bit multiply's bias, below 2⁻⁵⁰ for these ranges, is no matter).
    mutating func draw(_ range: Range<Int>) -> Int {
        range.lowerBound + Int(truncatingIfNeeded: next().multipliedFullWidth(by: UInt64(range.count)).high)
    }
    /// True `percent` times in 100.
    mutating func percent(_ percent: UInt64) -> Bool { next() % 100 < percent }
    /// One of `items`, which must not be empty.
    mutating func draw<T>(_ items: [T]) -> T { items[draw(0..<items.count)] }
    /// A uniform byte.
    mutating func byte() -> UInt8 { UInt8(truncatingIfNeeded: next() >> 56) }

    /// Text rich in what CSV and JSON must carry: separators, quotes, CR, LF, non-ASCII, astral scalars.
    mutating func text(maxScalars: Int) -> String {
        let special: [Unicode.Scalar] = [",", "\"", "\n", "\r", " ", "\t", "\\", "/", "é", "\u{2028}", "\u{FEFF}", "𝄞", "\u{0}"]
        var scalars = String.UnicodeScalarView()
        for _ in 0..<draw(0..<maxScalars + 1) {
            if percent(30) {
                scalars.append(draw(special))
            } else if percent(80) {
                scalars.append(Unicode.Scalar(UInt8(draw(0x20..<0x7F))))
            } else if let scalar = Unicode.Scalar(UInt32(draw(0x80..<0x11_0000))) {
                scalars.append(scalar)
            }
        }
        return String(scalars)
    }
}

/// How many LF bytes (and CR bytes, `crToo`) `bytes` holds; a plain loop, which a debug build runs
/// ten times faster than `count(where:)`.
func lineEnds(in bytes: [UInt8], crToo: Bool) -> Int {
    bytes.withUnsafeBufferPointer { buffer in
        var count = 0
        var index = 0
        while index < buffer.count {
            if buffer[index] == 0x0A || (crToo && buffer[index] == 0x0D) { count += 1 }
            index += 1
        }
        return count
    }
}

func summary(_ tally: [String: Int]) -> String {
    tally.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
}

/// A value a data step may carry into a column: NULL or text (CSV), or any JSON value.
enum Cell: Equatable {
    case null, integer(Int64), real(Double), text(String), blob(Data)

    init(_ value: DatabaseValue) {
        switch value.storage {
        case .null: self = .null
        case .int64(let integer): self = .integer(integer)
        case .double(let real): self = .real(real)
        case .string(let text): self = .text(text)
        case .blob(let data): self = .blob(data)
        }
    }

    /// Exact: text compares scalar by scalar (String `==` would equate NFC and NFD), reals bit by bit.
    static func == (lhs: Cell, rhs: Cell) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.integer(let a), .integer(let b)): a == b
        case (.real(let a), .real(let b)): a.bitPattern == b.bitPattern
        case (.text(let a), .text(let b)): a.unicodeScalars.elementsEqual(b.unicodeScalars)
        case (.blob(let a), .blob(let b)): a == b
        default: false
        }
    }
}

/// The five untyped columns every fuzz table has; an untyped column keeps the type a value is bound with.
let fuzzColumns = ["a", "b", "c", "d", "e"]

func fuzzDatabase(table: String) throws -> DatabaseQueue {
    let queue = try DatabaseQueue()
    try queue.write { try $0.execute(sql: "CREATE TABLE \(table) (a, b, c, d, e)") }
    return queue
}

/// The table's rows in insertion order, and the table emptied for the next case.
///
/// Read with SQLite's own calls on cached statements: text as the bytes stored (GRDB reads a
/// string only up to its first NUL), and none of GRDB's per-query work, which a debug build
/// makes the larger part of a fuzz case.
func takeRows(_ db: Database, table: String) throws -> [[Cell]] {
    let select = try db.cachedStatement(sql: "SELECT \(fuzzColumns.joined(separator: ", ")) FROM \(table) ORDER BY rowid")
    let handle = select.sqliteStatement
    var rows: [[Cell]] = []
    while true {
        let code = sqlite3_step(handle)
        if code == SQLITE_DONE { break }
        guard code == SQLITE_ROW else {
            sqlite3_reset(handle)
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
        }
        rows.append(fuzzColumns.indices.map { Cell(handle, column: Int32($0)) })
    }
    sqlite3_reset(handle)
    try db.cachedStatement(sql: "DELETE FROM \(table)").execute()
    return rows
}

extension Cell {
    /// The value in `column` of the row `statement` is on.
    init(_ statement: OpaquePointer, column: Int32) {
        switch sqlite3_column_type(statement, column) {
        case SQLITE_INTEGER: self = .integer(sqlite3_column_int64(statement, column))
        case SQLITE_FLOAT: self = .real(sqlite3_column_double(statement, column))
        case SQLITE_TEXT:
            let text = sqlite3_column_text(statement, column)
            let count = Int(sqlite3_column_bytes(statement, column))
            self = .text(text.map { String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self) } ?? "")
        case SQLITE_BLOB:
            let blob = sqlite3_column_blob(statement, column)
            self = .blob(blob.map { Data(bytes: $0, count: Int(sqlite3_column_bytes(statement, column))) } ?? Data())
        default: self = .null
        }
    }
}

/// `text` as a CSV step stores it: each CRLF and each lone CR made LF.
func lineEndsMadeLF(_ text: String) -> String {
    var scalars = String.UnicodeScalarView()
    var afterCR = false
    for scalar in text.unicodeScalars {
        if scalar == "\n", afterCR {
            afterCR = false
            continue
        }
        afterCR = scalar == "\r"
        scalars.append(afterCR ? "\n" : scalar)
    }
    return String(scalars)
}

@Suite struct CSVFuzzTests {
    static let path = "/Migrations/0002_thing.csv"

    /// A CSV document with known fields: nil is NULL (an unquoted empty field), "" the empty string.
    /// Line ends are LF, CRLF or CR, between records and inside quoted fields alike.
    static func generated(_ rng: inout SplitMix64) -> (bytes: [UInt8], header: [String], records: [[String?]]) {
        let header = Array(fuzzColumns.shuffled(using: &rng).prefix(rng.draw(1..<6))).map { rng.percent(20) ? $0.uppercased() : $0 }
        let records: [[String?]] = (0..<rng.draw(0..<8)).map { _ in
            header.map { _ in rng.percent(20) ? nil : rng.percent(10) ? "" : rng.text(maxScalars: 12) }
        }
        var text = rng.percent(10) ? "\u{FEFF}" : ""
        let lines = [header.map { Optional($0) }] + records
        var endedWithCR = false
        for (index, fields) in lines.enumerated() {
            let content = fields.map { field -> String in
                guard let field else { return "" }
                let needsQuotes = field.isEmpty || field.unicodeScalars.contains { ",\"\r\n".unicodeScalars.contains($0) }
                guard needsQuotes || rng.percent(20) else { return field }
                var quoted = "\""
                for scalar in field.unicodeScalars { quoted += scalar == "\"" ? "\"\"" : String(scalar) }
                return quoted + "\""
            }.joined(separator: ",")
            text += content
            let last = index == lines.count - 1
            // A last record that is an empty line is there only if a line end follows it.
            if !last || rng.percent(50) || fields == [nil] {
                // After a CR, an empty line ending in LF would make one CRLF of the two line ends.
                let end = rng.draw(endedWithCR && content.isEmpty ? ["\r\n", "\r"] : ["\r\n", "\n", "\r"])
                endedWithCR = end == "\r"
                text += end
            }
        }
        return (Array(text.utf8), header, records)
    }

    /// What the parser makes of `bytes`: each record's line and fields (nil for an unquoted empty
    /// field, else the text stored), then the error that ended it, if any.
    static func parsed(_ bytes: [UInt8], expecting: Int?, adoptingHeaderWidth: Bool) -> (records: [(line: Int, fields: [String?])], error: PackagingError?) {
        bytes.withUnsafeBytes { buffer in
            var parser = CSVParser(bytes: buffer, path: path)
            var expecting = expecting
            var records: [(line: Int, fields: [String?])] = []
            do throws(PackagingError) {
                while let record = try parser.nextRecord(expecting: expecting) {
                    if expecting == nil, adoptingHeaderWidth { expecting = record.fields.count }
                    records.append((record.line, record.fields.map { $0.kind == .unquoted && $0.start == $0.end ? nil : parser.text($0) }))
                    // Every record consumes at least one byte: more records than bytes would be a loop.
                    guard records.count <= bytes.count + 1 else { break }
                }
                return (records, nil)
            } catch {
                return (records, error)
            }
        }
    }

    /// Random bytes parse into records whose fields are what they claim, or fail with `invalidCSV` on
    /// a line of the file; and they parse exactly as their normalised form (line ends LF), which is
    /// what the step checksum covers: equal checksums, equal records.
    @Test(.timeLimit(.minutes(10)))
    func randomBuffersEndOrFailWithInvalidCSV() {
        var rng = SplitMix64(seed: 0x5EED_0C01)
        var failures = FuzzFailures()
        var tally: [String: Int] = [:]
        let alphabet: [UInt8] = Array("ab1 ,,\"\"\n\r".utf8) + [0x00, 0xFF, 0xC3, 0xA9, 0xEF, 0xBB, 0xBF]
        let cases = 12_000
        for _ in 0..<cases {
            var bytes = (0..<rng.draw(0..<300)).map { _ in rng.percent(90) ? rng.draw(alphabet) : rng.byte() }
            if rng.percent(10) { bytes.insert(contentsOf: [0xEF, 0xBB, 0xBF], at: 0) }
            let lineEnds = lineEnds(in: bytes, crToo: true)
            let expecting: Int? = rng.percent(30) ? nil : rng.draw(1..<4)
            let adopting = rng.percent(50)
            bytes.withUnsafeBytes { buffer in
                var parser = CSVParser(bytes: buffer, path: Self.path)
                var expecting = expecting
                var records = 0
                do throws(PackagingError) {
                    while let record = try parser.nextRecord(expecting: expecting) {
                        records += 1
                        if expecting == nil, adopting { expecting = record.fields.count }
                        for field in record.fields {
                            failures.check(0 <= field.start && field.start <= field.end && field.end <= bytes.count, "field out of bounds in \(FuzzFailures.shown(bytes))")
                            let content = buffer[field.start..<field.end]
                            switch field.kind {
                            case .unquoted:
                                failures.check(!content.contains { $0 == 0x2C || $0 == 0x22 || $0 == 0x0D || $0 == 0x0A }, "unquoted field holds a separator or quote: \(FuzzFailures.shown(bytes))")
                            case .quoted:
                                failures.check(!content.contains { $0 == 0x22 || $0 == 0x0D }, "quoted field holds an undoubled quote or a CR: \(FuzzFailures.shown(bytes))")
                            case .rewritten:
                                failures.check(content.contains { $0 == 0x22 || $0 == 0x0D }, "rewritten field holds no quote and no CR: \(FuzzFailures.shown(bytes))")
                            }
                        }
                        guard records <= bytes.count + 1 else {
                            failures.check(false, "the parser does not advance: \(FuzzFailures.shown(bytes))")
                            break
                        }
                    }
                    tally["parsed", default: 0] += 1
                } catch {
                    tally[error.message.split(separator: "(").first.map { String($0) } ?? error.message, default: 0] += 1
                    failures.check(error.code == .invalidCSV && error.path == Self.path, "unexpected \(error.code) \(error) for \(FuzzFailures.shown(bytes))")
                    failures.check((1...lineEnds + 1).contains(error.line ?? 0), "line \(error.line ?? 0) outside 1...\(lineEnds + 1) in \(FuzzFailures.shown(bytes))")
                }
            }
            // The parser skips one BOM, the normalisation removes one: put it back to compare.
            let normalized = [0xEF, 0xBB, 0xBF] + MigrationStep.normalized(bytes)
            let raw = Self.parsed(bytes, expecting: expecting, adoptingHeaderWidth: adopting)
            let asNormalized = Self.parsed(normalized, expecting: expecting, adoptingHeaderWidth: adopting)
            failures.check(raw.records.elementsEqual(asNormalized.records) { $0.line == $1.line && $0.fields == $1.fields }
                           && raw.error?.line == asNormalized.error?.line && raw.error?.message == asNormalized.error?.message,
                           "parsed otherwise than its normalised form: \(FuzzFailures.shown(bytes))")
        }
        print("CSV fuzz: \(cases) random buffers: \(summary(tally))")
        #expect(failures.count == 0, "\(failures.summary)")
    }

    @Test(.timeLimit(.minutes(10)))
    func generatedCSVGivesBackItsFields() {
        var rng = SplitMix64(seed: 0x5EED_0C02)
        var failures = FuzzFailures()
        let cases = 10_000
        var fields = 0
        for _ in 0..<cases {
            let (bytes, header, records) = Self.generated(&rng)
            let (parsed, error) = Self.parsed(bytes, expecting: nil, adoptingHeaderWidth: true)
            let expected = [header.map { Optional($0) }] + records.map { $0.map { $0.map(lineEndsMadeLF) } }
            fields += expected.reduce(0) { $0 + $1.count }
            failures.check(error == nil, "valid CSV rejected: \(error.map { "\($0)" } ?? "") in \(FuzzFailures.shown(bytes))")
            failures.check(parsed.map { $0.fields.map { $0.map(Cell.text) ?? .null } } == expected.map { $0.map { $0.map(Cell.text) ?? .null } },
                           "parsed \(parsed), expected \(expected) from \(FuzzFailures.shown(bytes))")
        }
        print("CSV fuzz: \(cases) generated documents (\(fields) fields) round-tripped through CSVParser")
        #expect(failures.count == 0, "\(failures.summary)")
    }

    @Test(.timeLimit(.minutes(10)))
    func generatedCSVLoadsItsRows() throws {
        let queue = try fuzzDatabase(table: "thing")
        var rng = SplitMix64(seed: 0x5EED_0C03)
        var failures = FuzzFailures()
        let cases = 3_000
        var rows = 0
        try queue.inDatabase { db in
            for _ in 0..<cases {
                let (bytes, header, records) = Self.generated(&rng)
                let result = bytes.withUnsafeBytes { buffer in
                    Result { () throws(PackagingError) in try CSVLoader(path: Self.path, table: "thing").load(buffer, into: db, progress: nil) }
                }
                let expected = records.map { record -> [Cell] in
                    fuzzColumns.map { column -> Cell in
                        guard let index = header.firstIndex(where: { $0.lowercased() == column }), let text = record[index] else { return .null }
                        return .text(lineEndsMadeLF(text))
                    }
                }
                let loaded = try takeRows(db, table: "thing")
                rows += loaded.count
                failures.check((try? result.get()) == records.count && loaded == expected, "loaded \(result) \(loaded), expected \(expected) from \(FuzzFailures.shown(bytes))")
            }
        }
        print("CSV fuzz: \(cases) generated documents loaded by CSVLoader (\(rows) rows compared)")
        #expect(failures.count == 0, "\(failures.summary)")
    }
}
