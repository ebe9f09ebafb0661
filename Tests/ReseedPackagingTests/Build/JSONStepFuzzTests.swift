import Foundation
import GRDB
import ReseedTesting
import ReseedTestSupport
import Testing
@testable import ReseedPackaging

@Suite struct JSONStepFuzzTests {
    static let path = "/Migrations/0002_thing.json"

    static func quoted(_ text: String, _ rng: inout SplitMix64) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20 || rng.percent(10):
                let value = scalar.value
                let units = value >= 0x1_0000 ? [0xD800 + ((value - 0x1_0000) >> 10), 0xDC00 + ((value - 0x1_0000) & 0x3FF)] : [value]
                for unit in units {
                    let hex = String(unit, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                }
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    static func whitespace(_ rng: inout SplitMix64) -> String { rng.draw(["", "", " ", "\n", "\r\n", "\t"]) }

    /// Nested JSON text with inner whitespace but none around it: a nested value is stored as exactly this text.
    static func nested(_ rng: inout SplitMix64, depth: Int = 0) -> String {
        var parts: [String] = []
        for _ in 0..<rng.draw(0..<4) {
            if depth < 3, rng.percent(30) {
                parts.append(nested(&rng, depth: depth + 1))
            } else {
                let text = rng.text(maxScalars: 5)
                let leaves = ["1", "-2.5e3", "null", "true", quoted(text, &rng)]
                parts.append(rng.draw(leaves))
            }
        }
        let separator = whitespace(&rng) + "," + whitespace(&rng)
        if rng.percent(50) { return "[" + whitespace(&rng) + parts.joined(separator: separator) + whitespace(&rng) + "]" }
        return "{" + parts.enumerated().map { "\"k\($0.offset)\":" + $0.element }.joined(separator: separator) + "}"
    }

    /// A JSON value and the cell its documented mapping stores.
    static func value(_ rng: inout SplitMix64) -> (text: String, cell: Cell) {
        switch rng.draw(0..<9) {
        case 0: return ("null", .null)
        case 1: return rng.percent(50) ? ("true", .integer(1)) : ("false", .integer(0))
        case 2:
            let integer = Int64(bitPattern: rng.next()) >> rng.draw(0..<64)
            return ("\(integer)", .integer(integer))
        case 3:
            let real = Double(bitPattern: rng.next())
            return real.isFinite ? ("\(real)", .real(real)) : ("-0.0", .real(-0.0))
        case 4:
            let text = rng.draw(["1.0", "1e3", "-2.5E-3", "0.0", "-0", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "123456789012345678901234"])
            let isInteger = !text.contains { ".eE".contains($0) } && Int64(text) != nil
            return (text, isInteger ? .integer(Int64(text) ?? 0) : .real(Double(text) ?? .nan))
        case 5, 6:
            let text = rng.text(maxScalars: 12)
            return (quoted(text, &rng), .text(text))
        default:
            let text = nested(&rng)
            return (text, .text(text))
        }
    }

    /// An array of objects keyed by column (in any case, sometimes twice: the last wins), and the rows it loads.
    static func generated(_ rng: inout SplitMix64) -> (bytes: [UInt8], rows: [[Cell]]) {
        var elements: [String] = []
        var rows: [[Cell]] = []
        for _ in 0..<rng.draw(0..<6) {
            var row = [Cell](repeating: .null, count: fuzzColumns.count)
            var members: [String] = []
            for _ in 0..<rng.draw(0..<7) {
                let column = rng.draw(0..<fuzzColumns.count)
                let (text, cell) = value(&rng)
                let key = rng.percent(20) ? fuzzColumns[column].uppercased() : fuzzColumns[column]
                members.append(quoted(key, &rng) + whitespace(&rng) + ":" + whitespace(&rng) + text)
                row[column] = cell
            }
            elements.append("{" + whitespace(&rng) + members.joined(separator: "," + whitespace(&rng)) + whitespace(&rng) + "}")
            rows.append(row)
        }
        let text = whitespace(&rng) + "[" + whitespace(&rng) + elements.joined(separator: "," + whitespace(&rng)) + whitespace(&rng) + "]" + whitespace(&rng)
        return (Array(text.utf8), rows)
    }

    /// Found by ``generatedArraysLoadTheirRows()``: GRDB binds a string only up to its first NUL.
    @Test func jsonStringHoldingNULIsStoredWhole() throws {
        let sandbox = try MigrationsSandbox([
            "0001_schema.sql": itemSchema,
            "0002_item.json": #"[{"id": 1, "name": "before\u0000after"}]"#,
        ])
        let result = try sandbox.build()
        let stored = try sandbox.read(result) { try Data.fetchOne($0, sql: "SELECT CAST(name AS BLOB) FROM item") }
        #expect(stored == Data("before\u{0}after".utf8))
    }

    static func load(_ bytes: [UInt8], into db: Database) -> Result<Int, PackagingError> {
        Result { () throws(PackagingError) in try JSONLoader(path: path, table: "thing").load(bytes, into: db) }
    }

    @Test(.timeLimit(.minutes(10)))
    func generatedArraysLoadTheirRows() throws {
        let queue = try fuzzDatabase(table: "thing")
        var rng = SplitMix64(seed: 0x5EED_0D01)
        var failures = FuzzFailures()
        let cases = 10_000
        var rows = 0
        try queue.inDatabase { db in
            for _ in 0..<cases {
                let (bytes, expected) = Self.generated(&rng)
                let result = Self.load(bytes, into: db)
                let loaded = try takeRows(db, table: "thing")
                rows += loaded.count
                failures.check((try? result.get()) == expected.count && loaded == expected, "loaded \(result) \(loaded), expected \(expected) from \(FuzzFailures.shown(bytes))")
            }
        }
        print("JSON fuzz: \(cases) generated arrays loaded by JSONLoader (\(rows) rows compared)")
        #expect(failures.count == 0, "\(failures.summary)")
    }

    @Test(.timeLimit(.minutes(10)))
    func damagedArraysLoadOrFailWithATypedError() throws {
        let queue = try fuzzDatabase(table: "thing")
        var rng = SplitMix64(seed: 0x5EED_0D02)
        var failures = FuzzFailures()
        var tally: [String: Int] = [:]
        let cases = 12_000
        let insertions = ["{", "}", "[", "]", ",", ":", "\"", "\\", "\0", "\u{FEFF}", "1e400", String(repeating: "9", count: 400), "\"\\ud800\"", "tru", "-"]
        // Around the loader's 512-level limit, and far past it (which must fail fast, not overflow the stack).
        let nestings = [511, 512, 513, 2_000, 20_000].map { depth in Array((String(repeating: "[", count: depth) + String(repeating: "]", count: depth)).utf8) }
        try queue.inDatabase { db in
            for _ in 0..<cases {
                var bytes = Self.generated(&rng).bytes
                switch rng.draw(0..<6) {
                case 0: if !bytes.isEmpty { for _ in 0..<rng.draw(1..<4) { bytes[rng.draw(0..<bytes.count)] ^= UInt8(1) << UInt8(rng.draw(0..<8)) } }
                case 1: bytes.removeSubrange(rng.draw(0..<bytes.count + 1)...)
                case 2: bytes.insert(contentsOf: Array(rng.draw(insertions).utf8), at: rng.draw(0..<bytes.count + 1))
                case 3:
                    let nested = rng.draw(nestings)
                    if rng.percent(50) { bytes = nested } else { bytes.insert(contentsOf: nested, at: rng.draw(0..<bytes.count + 1)) }
                case 4: bytes.insert(contentsOf: rng.draw([[0xC0, 0x80], [0xED, 0xA0, 0x80], [0xFF], [0x80]]), at: rng.draw(0..<bytes.count + 1))
                default: bytes = (0..<rng.draw(0..<200)).map { _ in rng.byte() }
                }
                let result = Self.load(bytes, into: db)
                let loaded = try takeRows(db, table: "thing")
                switch result {
                case .success(let count):
                    tally["loaded", default: 0] += 1
                    failures.check(count == loaded.count, "reported \(count) rows, loaded \(loaded.count) from \(FuzzFailures.shown(bytes))")
                case .failure(let error):
                    tally[error.code.rawValue, default: 0] += 1
                    let lines = lineEnds(in: bytes, crToo: false) + 1
                    failures.check([.invalidJSON, .unknownColumn].contains(error.code) && error.path == Self.path,
                                   "unexpected \(error.code): \(error) for \(FuzzFailures.shown(bytes))")
                    failures.check((1...lines).contains(error.line ?? 0), "line \(error.line ?? 0) outside 1...\(lines): \(error)")
                    failures.check(loaded.isEmpty || error.code != .invalidJSON || !error.message.hasPrefix("not valid JSON"),
                                   "rows were loaded from JSON that does not parse: \(FuzzFailures.shown(bytes))")
                }
            }
        }
        print("JSON fuzz: \(cases) damaged arrays: \(summary(tally))")
        #expect(failures.count == 0, "\(failures.summary)")
    }
}
