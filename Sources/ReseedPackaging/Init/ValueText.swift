import Foundation
import GRDB
import GRDBSQLite

/// One value read from a database, bytes exactly as SQLite holds them (text as UTF-8).
enum StoredValue {
    case null
    case integer(Int64)
    case real(Double)
    case text([UInt8])
    case blob([UInt8])

    /// Column `index` of the row `statement` is on: text and blobs are read as bytes, never
    /// decoded (a String would stop at a NUL and repair invalid UTF-8).
    init(_ statement: OpaquePointer, column index: Int32) {
        switch sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER:
            self = .integer(sqlite3_column_int64(statement, index))
        case SQLITE_FLOAT:
            self = .real(sqlite3_column_double(statement, index))
        case SQLITE_TEXT:
            let pointer = sqlite3_column_text(statement, index)
            let count = Int(sqlite3_column_bytes(statement, index))
            self = .text(pointer.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? [])
        case SQLITE_BLOB:
            let pointer = sqlite3_column_blob(statement, index)
            let count = Int(sqlite3_column_bytes(statement, index))
            self = .blob(pointer.map { Array(UnsafeRawBufferPointer(start: $0, count: count)) } ?? [])
        default:
            self = .null
        }
    }
}

/// A column's type affinity, by SQLite's rules for its declared type (section 3.1 of
/// "Datatypes In SQLite"); a STRICT table's `ANY` column converts nothing, as BLOB.
enum Affinity {
    case integer, text, blob, real, numeric

    init(declaredType: String, strict: Bool) {
        let type = declaredType.uppercased()
        if strict && type == "ANY" {
            self = .blob
        } else if type.contains("INT") {
            self = .integer
        } else if type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT") {
            self = .text
        } else if type.contains("BLOB") || type.isEmpty {
            self = .blob
        } else if type.contains("REAL") || type.contains("FLOA") || type.contains("DOUB") {
            self = .real
        } else {
            self = .numeric
        }
    }
}

/// Writes values as CSV fields and SQL literals that give back exactly the stored value.
///
/// Reals are checked against SQLite's own parser (`CAST(text AS REAL)` reads numbers as the SQL
/// tokenizer and column affinity do): SQLite 3.40 reads a few in a thousand shortest decimal forms
/// one bit off, mostly tiny ones. Those get 17 digits, and in SQL, when no decimal form reads back
/// exactly, an exact product of an integer and powers of two.
struct ValueText {
    private let parse: Statement

    init(_ db: Database) throws {
        parse = try db.makeStatement(sql: "SELECT CAST(? AS REAL)")
    }

    /// A decimal form of `value` that SQLite reads back to the same bits; nil when there is none.
    /// Infinities are `9e999` and `-9e999`; NaN cannot be stored (SQLite makes it NULL).
    func decimal(_ value: Double) -> String? {
        if value.isInfinite { return value < 0 ? "-9e999" : "9e999" }
        guard value.isFinite else { return nil }
        // The second form only when the first does not read back (a few in a thousand).
        for candidate in [{ value.description }, { String(format: "%.17g", value) }] {
            let text = candidate()
            if readsBack(text, as: value) { return text.contains(where: { $0 == "." || $0 == "e" }) ? text : text + ".0" }
        }
        return nil
    }

    private func readsBack(_ text: String, as value: Double) -> Bool {
        let handle = parse.sqliteStatement
        defer { _ = sqlite3_reset(handle) }
        let bound = text.utf8CString.withUnsafeBufferPointer { buffer in
            sqlite3_bind_text(handle, 1, buffer.baseAddress, Int32(buffer.count - 1), SQLITE_TRANSIENT)
        }
        guard bound == SQLITE_OK, sqlite3_step(handle) == SQLITE_ROW, sqlite3_column_type(handle, 0) == SQLITE_FLOAT else { return false }
        return sqlite3_column_double(handle, 0).bitPattern == value.bitPattern
    }

    /// Appends the CSV field for column `index` of the row `statement` is on, in a column of
    /// `affinity`, to `line`: bound as text, does the column store the same value with the same type?
    /// false (`line` then holds a part of the field) when it would not.
    ///
    /// The loader reads an unquoted empty field as NULL and a quoted one as text; it binds every
    /// field as text, so the column's affinity decides the type. A stored value went through the
    /// same affinity when it was written, so text stays text; a number is carried where the
    /// affinity makes a number of its text again. Text with a CR (read as LF), a NUL or bytes that
    /// are not UTF-8 is left to SQL, as are blobs. Text is read in place, not copied.
    func appendCSVField(_ statement: OpaquePointer, column index: Int32, affinity: Affinity, to line: inout [UInt8]) -> Bool {
        switch sqlite3_column_type(statement, index) {
        case SQLITE_NULL:
            return true
        case SQLITE_INTEGER:
            guard affinity == .integer || affinity == .numeric else { return false }
            line.append(contentsOf: String(sqlite3_column_int64(statement, index)).utf8)
            return true
        case SQLITE_FLOAT:
            let real = sqlite3_column_double(statement, index)
            switch affinity {
            case .real:
                break
            case .integer, .numeric:
                // These affinities make a real with an exact Int64 value an integer.
                guard !real.isFinite || real != real.rounded(.towardZero) || real.magnitude >= 0x1p63 else { return false }
            case .text, .blob:
                return false
            }
            guard let decimal = decimal(real) else { return false }
            line.append(contentsOf: decimal.utf8)
            return true
        case SQLITE_TEXT:
            let count = Int(sqlite3_column_bytes(statement, index))
            let bytes = UnsafeBufferPointer(start: sqlite3_column_text(statement, index), count: count)
            var ascii = true, quotes = false
            for byte in bytes {
                if byte == 0x0D || byte == 0 { return false }
                ascii = ascii && byte < 0x80
                quotes = quotes || byte == 0x22
            }
            // ASCII is UTF-8; anything else is checked.
            guard ascii || String(validating: bytes, as: UTF8.self) != nil else { return false }
            line.append(0x22)
            if quotes {
                for byte in bytes {
                    if byte == 0x22 { line.append(0x22) }
                    line.append(byte)
                }
            } else {
                line.append(contentsOf: bytes)
            }
            line.append(0x22)
            return true
        default:
            return false
        }
    }

    /// The SQL expression for `value`, of its storage type, that SQLite evaluates to exactly it.
    func sqlLiteral(_ value: StoredValue) -> String {
        switch value {
        case .null:
            return "NULL"
        case .integer(let integer):
            return String(integer)
        case .real(let real):
            return sqlReal(real)
        case .text(let bytes):
            return Self.sqlText(bytes)
        case .blob(let bytes):
            return "X'" + lowercaseHex(bytes) + "'"
        }
    }

    private func sqlReal(_ value: Double) -> String {
        // The sign is SQL's unary minus: exact, and -0.0 stays negative.
        if value.sign == .minus { return "-" + sqlReal(-value) }
        if let decimal = decimal(value) { return decimal }
        // value = m × 2^e with m below 2^53: every product and quotient on the way is exact.
        let exponent = Int(value.exponent) - 52
        var mantissa = Int64(Double(sign: .plus, exponent: -exponent, significand: value))
        var shift = exponent
        while mantissa & 1 == 0, mantissa != 0 {
            mantissa >>= 1
            shift += 1
        }
        var expression = "CAST(\(mantissa) AS REAL)"
        let step = 62
        var remaining = shift.magnitude
        while remaining > 0 {
            let bits = min(remaining, UInt(step))
            expression += (shift < 0 ? " / " : " * ") + String(Int64(1) << bits)
            remaining -= bits
        }
        return "(" + expression + ")"
    }

    /// A quoted literal for UTF-8 text without NUL or CR (which the step's line-end reading would
    /// make LF); `CAST(X'…' AS TEXT)`, which keeps every byte, for any other.
    static func sqlText(_ bytes: [UInt8]) -> String {
        guard !bytes.contains(0x0D), !bytes.contains(0), let text = String(validating: bytes, as: UTF8.self) else {
            return "CAST(X'" + lowercaseHex(bytes) + "' AS TEXT)"
        }
        return "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }
}
