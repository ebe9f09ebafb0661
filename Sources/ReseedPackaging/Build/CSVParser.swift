/// An RFC 4180 record reader over bytes; fields are byte ranges, decoded only when needed.
///
/// Line ends are read as ``MigrationStep/checksum(of:)`` reads them: LF, CRLF and a lone CR are one
/// line end, between records and inside quoted fields alike (where each becomes LF; see
/// ``FieldKind/rewritten``). So two files with the same checksum give the same records.
///
/// Memory and time are bounded per record: a record (the header included) longer than
/// ``maxRecordBytes`` is an error naming its line, found after reading at most that many bytes of it,
/// and a header has at most ``maxHeaderFields`` fields.
struct CSVParser {
    enum FieldKind {
        /// The bytes between separators, as they are.
        case unquoted
        /// The bytes between the quotes, as they are.
        case quoted
        /// A quoted field whose bytes need rewriting (``CSVParser/unescape(_:into:)``):
        /// a doubled quote `""` becomes `"`, and a CRLF or a lone CR becomes LF.
        case rewritten
    }

    struct Field {
        var start: Int
        var end: Int
        var kind: FieldKind
    }

    struct Record {
        var fields: [Field]
        /// The physical line where the record starts.
        var line: Int
    }

    /// The most bytes a record may have, line end excluded: 64 MiB. The limit bounds the memory a
    /// step takes (a header or field is copied at most once) and the length of what an error quotes.
    static let maxRecordBytes = 64 << 20
    /// The most fields a header may have: SQLite's largest column count (`SQLITE_MAX_COLUMN`'s
    /// ceiling), so no table has more. Records have as many fields as the header, or are an error.
    static let maxHeaderFields = 32_767

    let bytes: UnsafeRawBufferPointer
    let path: String
    /// ``maxRecordBytes`` unless a test lowers it.
    let maxRecordBytes: Int
    private var position = 0
    private var line = 1
    private var record = Record(fields: [], line: 1)

    init(bytes: UnsafeRawBufferPointer, path: String, maxRecordBytes: Int = CSVParser.maxRecordBytes) {
        self.bytes = bytes
        self.path = path
        self.maxRecordBytes = maxRecordBytes
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { position = 3 }
    }

    /// The next record, or nil at the end of the file; `expecting` is the field count every record
    /// must have (nil for the header, which may have up to ``maxHeaderFields``).
    mutating func nextRecord(expecting count: Int?) throws(PackagingError) -> Record? {
        let end = bytes.count
        guard position < end else { return nil }
        record.fields.removeAll(keepingCapacity: true)
        record.line = line
        let start = position
        // Fields are scanned up to one byte past the limit, never further: a record without end
        // costs no more than the limit.
        let bound = end - start > maxRecordBytes ? start + maxRecordBytes + 1 : end
        let most = count ?? Self.maxHeaderFields
        while true {
            let field = try nextField(bound: bound)
            if position - start > maxRecordBytes {
                throw error(.invalidCSV, line: record.line,
                            "\(count == nil ? "the header" : "a record") is longer than \(Self.size(maxRecordBytes)), the most a CSV record may have (a line end missing, or a quote never closed?)")
            }
            if record.fields.count == most {
                throw error(.invalidCSV, line: record.line, count == nil
                            ? "the header has more than \(most) fields, more than any table has columns"
                            : "record has more than \(most) fields, the header has \(most)")
            }
            record.fields.append(field)
            guard position < end else { break }
            let byte = bytes[position]
            position += 1
            if byte == UInt8(ascii: ",") { continue }
            if byte == 0x0D, position < end, bytes[position] == 0x0A { position += 1 }
            line += 1
            break
        }
        if let count, record.fields.count != count {
            throw error(.invalidCSV, line: record.line, "record has \(record.fields.count) field\(record.fields.count == 1 ? "" : "s"), the header has \(count)")
        }
        return record
    }

    /// The field at `position`, scanning no further than `bound` (the caller tells a field cut
    /// there from the end of the file).
    private mutating func nextField(bound: Int) throws(PackagingError) -> Field {
        let end = bytes.count
        if position < bound, bytes[position] == UInt8(ascii: "\"") {
            let fieldLine = line
            position += 1
            let start = position
            var rewritten = false
            while true {
                guard position < bound else {
                    // Cut at the record limit: the caller reports the length.
                    if bound < end { return Field(start: start, end: position, kind: .quoted) }
                    throw error(.invalidCSV, line: fieldLine, "quoted field is never closed")
                }
                let byte = bytes[position]
                if byte == UInt8(ascii: "\"") {
                    if position + 1 < end, bytes[position + 1] == UInt8(ascii: "\"") {
                        rewritten = true
                        position += 2
                        continue
                    }
                    break
                }
                if byte == 0x0D {
                    rewritten = true
                    if position + 1 < end, bytes[position + 1] == 0x0A { position += 1 }
                    line += 1
                } else if byte == 0x0A {
                    line += 1
                }
                position += 1
            }
            let fieldEnd = position
            position += 1
            if position < end {
                let next = bytes[position]
                guard next == UInt8(ascii: ",") || next == 0x0A || next == 0x0D else {
                    throw error(.invalidCSV, line: line, "unexpected character after a closing quote (a quote inside a field is written \"\")")
                }
            }
            return Field(start: start, end: fieldEnd, kind: rewritten ? .rewritten : .quoted)
        }
        let start = position
        while position < bound {
            let byte = bytes[position]
            if byte == UInt8(ascii: ",") || byte == 0x0A || byte == 0x0D { break }
            if byte == UInt8(ascii: "\"") {
                throw error(.invalidCSV, line: line, "quote inside an unquoted field (quote the whole field and double the quote)")
            }
            position += 1
        }
        return Field(start: start, end: position, kind: .unquoted)
    }

    /// The field's text, rewritten as stored (quotes undoubled, line ends LF).
    func text(_ field: Field) -> String {
        let raw = UnsafeRawBufferPointer(rebasing: bytes[field.start..<field.end])
        guard field.kind == .rewritten else { return String(decoding: raw, as: UTF8.self) }
        var out: [UInt8] = []
        Self.unescape(raw, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Copies a quoted field's content with each `""` made `"`, and each CRLF or lone CR made LF.
    static func unescape(_ raw: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        out.reserveCapacity(raw.count)
        var index = 0
        while index < raw.count {
            let byte = raw[index]
            switch byte {
            case UInt8(ascii: "\""):
                out.append(byte)
                index += 2
            case 0x0D:
                out.append(0x0A)
                index += index + 1 < raw.count && raw[index + 1] == 0x0A ? 2 : 1
            default:
                out.append(byte)
                index += 1
            }
        }
    }

    /// `64 MiB`, `1 KiB`, or `1000 bytes`: a limit as the error states it.
    static func size(_ bytes: Int) -> String {
        if bytes >= 1 << 20, bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10, bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }

    private func error(_ code: PackagingError.Code, line: Int, _ message: String) -> PackagingError {
        PackagingError(code, step: .build, path: path, line: line, message: message)
    }
}
