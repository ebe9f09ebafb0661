/// An RFC 4180 record reader over bytes; fields are byte ranges, decoded only when needed.
struct CSVParser {
    enum FieldKind { case unquoted, quoted, quotedWithEscapes }

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

    let bytes: UnsafeRawBufferPointer
    let path: String
    private var position = 0
    private var line = 1
    private var record = Record(fields: [], line: 1)

    init(bytes: UnsafeRawBufferPointer, path: String) {
        self.bytes = bytes
        self.path = path
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { position = 3 }
    }

    /// The next record, or nil at the end of the file; `expecting` is the field count every record must have.
    mutating func nextRecord(expecting count: Int?) throws(PackagingError) -> Record? {
        let end = bytes.count
        guard position < end else { return nil }
        record.fields.removeAll(keepingCapacity: true)
        record.line = line
        while true {
            let field = try nextField()
            if let count, record.fields.count == count {
                throw error(.invalidCSV, line: record.line, "record has more than \(count) fields, the header has \(count)")
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

    private mutating func nextField() throws(PackagingError) -> Field {
        let end = bytes.count
        if position < end, bytes[position] == UInt8(ascii: "\"") {
            let fieldLine = line
            position += 1
            let start = position
            var escaped = false
            while true {
                guard position < end else {
                    throw error(.invalidCSV, line: fieldLine, "quoted field is never closed")
                }
                let byte = bytes[position]
                if byte == UInt8(ascii: "\"") {
                    if position + 1 < end, bytes[position + 1] == UInt8(ascii: "\"") {
                        escaped = true
                        position += 2
                        continue
                    }
                    break
                }
                if byte == 0x0A { line += 1 }
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
            return Field(start: start, end: fieldEnd, kind: escaped ? .quotedWithEscapes : .quoted)
        }
        let start = position
        while position < end {
            let byte = bytes[position]
            if byte == UInt8(ascii: ",") || byte == 0x0A || byte == 0x0D { break }
            if byte == UInt8(ascii: "\"") {
                throw error(.invalidCSV, line: line, "quote inside an unquoted field (quote the whole field and double the quote)")
            }
            position += 1
        }
        return Field(start: start, end: position, kind: .unquoted)
    }

    /// The field's text, quotes undoubled.
    func text(_ field: Field) -> String {
        let raw = UnsafeRawBufferPointer(rebasing: bytes[field.start..<field.end])
        guard field.kind == .quotedWithEscapes else { return String(decoding: raw, as: UTF8.self) }
        var out: [UInt8] = []
        Self.unescape(raw, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Copies a quoted field's content with each `""` made `"`.
    static func unescape(_ raw: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        var index = 0
        while index < raw.count {
            let byte = raw[index]
            out.append(byte)
            index += byte == UInt8(ascii: "\"") ? 2 : 1
        }
    }

    private func error(_ code: PackagingError.Code, line: Int, _ message: String) -> PackagingError {
        PackagingError(code, path: path, line: line, message: message)
    }
}
