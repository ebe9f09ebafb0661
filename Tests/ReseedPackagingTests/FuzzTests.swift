import Foundation
import GRDB
import ReseedTesting
import Testing
@testable import ReseedPackaging

extension SplitMix64 {
    /// Text rich in what CSV and JSON must carry: separators, quotes, CR, LF, non-ASCII, astral scalars.
    mutating func text(maxScalars: Int) -> String {
        let special: [Unicode.Scalar] = [",", "\"", "\n", "\r", " ", "\t", "\\", "/", "é", "\u{2028}", "\u{FEFF}", "𝄞", "\u{0}"]
        var text = ""
        for _ in 0..<int(0..<maxScalars + 1) {
            if chance(0.3) {
                text.unicodeScalars.append(pick(special))
            } else if chance(0.8) {
                text.unicodeScalars.append(Unicode.Scalar(UInt8.random(in: 0x20...0x7E, using: &self)))
            } else if let scalar = Unicode.Scalar(UInt32.random(in: 0x80...0x10_FFFF, using: &self)) {
                text.unicodeScalars.append(scalar)
            }
        }
        return text
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
/// Text is read as the bytes stored (GRDB reads a string only up to its first NUL).
func takeRows(_ db: Database, table: String) throws -> [[Cell]] {
    let columns = fuzzColumns.map { "\($0), typeof(\($0)) = 'text', CAST(\($0) AS BLOB)" }.joined(separator: ", ")
    let rows = try Row.fetchAll(db, sql: "SELECT \(columns) FROM \(table) ORDER BY rowid").map { row in
        fuzzColumns.indices.map { column -> Cell in
            guard row[column * 3 + 1] as Bool else { return Cell(row[column * 3] as DatabaseValue) }
            return .text(String(decoding: row[column * 3 + 2] as Data? ?? Data(), as: UTF8.self))
        }
    }
    try db.execute(sql: "DELETE FROM \(table)")
    return rows
}

@Suite struct CSVFuzzTests {
    static let path = "/Migrations/0002_thing.csv"

    /// A CSV document with known fields: nil is NULL (an unquoted empty field), "" the empty string.
    static func generated(_ rng: inout SplitMix64) -> (bytes: [UInt8], header: [String], records: [[String?]]) {
        let header = Array(fuzzColumns.shuffled(using: &rng).prefix(rng.int(1..<6))).map { rng.chance(0.2) ? $0.uppercased() : $0 }
        let records: [[String?]] = (0..<rng.int(0..<8)).map { _ in
            header.map { _ in rng.chance(0.2) ? nil : rng.chance(0.1) ? "" : rng.text(maxScalars: 12) }
        }
        var text = rng.chance(0.1) ? "\u{FEFF}" : ""
        let lines = [header.map { Optional($0) }] + records
        for (index, fields) in lines.enumerated() {
            text += fields.map { field -> String in
                guard let field else { return "" }
                let needsQuotes = field.isEmpty || field.unicodeScalars.contains { ",\"\r\n".unicodeScalars.contains($0) }
                guard needsQuotes || rng.chance(0.2) else { return field }
                var quoted = "\""
                for scalar in field.unicodeScalars { quoted += scalar == "\"" ? "\"\"" : String(scalar) }
                return quoted + "\""
            }.joined(separator: ",")
            let last = index == lines.count - 1
            // A last record that is an empty line is there only if a line end follows it.
            if !last || rng.chance(0.5) || fields == [nil] { text += rng.chance(0.5) ? "\r\n" : "\n" }
        }
        return (Array(text.utf8), header, records)
    }

    @Test(.timeLimit(.minutes(10)))
    func randomBuffersEndOrFailWithInvalidCSV() {
        var rng = SplitMix64(seed: 0x5EED_0C01)
        var failures = FuzzFailures()
        var tally: [String: Int] = [:]
        let alphabet: [UInt8] = Array("ab1 ,,\"\"\n\r".utf8) + [0x00, 0xFF, 0xC3, 0xA9, 0xEF, 0xBB, 0xBF]
        let cases = 12_000
        for _ in 0..<cases {
            var bytes = (0..<rng.int(0..<300)).map { _ in rng.chance(0.9) ? rng.pick(alphabet) : UInt8.random(in: 0...255, using: &rng) }
            if rng.chance(0.1) { bytes.insert(contentsOf: [0xEF, 0xBB, 0xBF], at: 0) }
            let lineEnds = bytes.count(where: { $0 == 0x0A || $0 == 0x0D })
            bytes.withUnsafeBytes { buffer in
                var parser = CSVParser(bytes: buffer, path: Self.path)
                var expecting: Int? = rng.chance(0.3) ? nil : rng.int(1..<4)
                var records = 0
                do throws(PackagingError) {
                    while let record = try parser.nextRecord(expecting: expecting) {
                        records += 1
                        if expecting == nil, rng.chance(0.5) { expecting = record.fields.count }
                        for field in record.fields {
                            failures.check(0 <= field.start && field.start <= field.end && field.end <= bytes.count, "field out of bounds in \(FuzzFailures.shown(bytes))")
                            let content = bytes[field.start..<field.end]
                            switch field.kind {
                            case .unquoted: failures.check(!content.contains { ",\"\r\n".utf8.contains($0) }, "unquoted field holds a separator or quote: \(FuzzFailures.shown(bytes))")
                            case .quoted: failures.check(!content.contains(UInt8(ascii: "\"")), "quoted field holds an undoubled quote: \(FuzzFailures.shown(bytes))")
                            case .quotedWithEscapes: failures.check(content.contains(UInt8(ascii: "\"")), "escaped field holds no quote: \(FuzzFailures.shown(bytes))")
                            }
                            _ = parser.text(field)
                        }
                        // Every record consumes at least one byte: more records than bytes would be a loop.
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
            bytes.withUnsafeBytes { buffer in
                var parser = CSVParser(bytes: buffer, path: Self.path)
                var parsed: [[String?]] = []
                do throws(PackagingError) {
                    while let record = try parser.nextRecord(expecting: parsed.isEmpty ? nil : header.count) {
                        parsed.append(record.fields.map { $0.kind == .unquoted && $0.start == $0.end ? nil : parser.text($0) })
                    }
                } catch {
                    failures.check(false, "valid CSV rejected: \(error) in \(FuzzFailures.shown(bytes))")
                    return
                }
                let expected = [header.map { Optional($0) }] + records
                fields += expected.reduce(0) { $0 + $1.count }
                failures.check(parsed.map { $0.map { $0.map(Cell.text) ?? .null } } == expected.map { $0.map { $0.map(Cell.text) ?? .null } },
                               "parsed \(parsed), expected \(expected) from \(FuzzFailures.shown(bytes))")
            }
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
                let expected = records.map { record in
                    fuzzColumns.map { column in
                        header.firstIndex { $0.lowercased() == column }.map { record[$0].map(Cell.text) ?? .null } ?? .null
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
