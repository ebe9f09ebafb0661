/// A recursive-descent JSON parser over bytes; see ``JSONNode/parse(_:maxDepth:)``.
///
/// With `opaqueBeyond`, an array or object deeper than that is checked by a loop with a stack of
/// its own (no recursion, so no depth limit) and kept as one ``JSONNode/Value/opaque`` node.
struct JSONParser {
    let bytes: [UInt8]
    let maxDepth: Int
    let opaqueBeyond: Int?
    var index = 0
    var depth = 0

    init(bytes: [UInt8], maxDepth: Int, opaqueBeyond: Int? = nil) {
        self.bytes = bytes
        self.maxDepth = maxDepth
        self.opaqueBeyond = opaqueBeyond
    }

    mutating func parseDocument() throws(JSONSyntaxError) -> JSONNode {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        skipWhitespace()
        let node = try parseValue()
        skipWhitespace()
        if index < bytes.count { throw error("unexpected content after the JSON value") }
        return node
    }

    private mutating func parseValue() throws(JSONSyntaxError) -> JSONNode {
        guard index < bytes.count else { throw error("unexpected end of input") }
        let start = index
        if let opaqueBeyond, depth >= opaqueBeyond, bytes[index] == UInt8(ascii: "{") || bytes[index] == UInt8(ascii: "[") {
            try skipContainer()
            return JSONNode(value: .opaque, range: start..<index)
        }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return JSONNode(value: .string(try parseString()), range: start..<index)
        case UInt8(ascii: "t"): try expectLiteral("true"); return JSONNode(value: .bool(true), range: start..<index)
        case UInt8(ascii: "f"): try expectLiteral("false"); return JSONNode(value: .bool(false), range: start..<index)
        case UInt8(ascii: "n"): try expectLiteral("null"); return JSONNode(value: .null, range: start..<index)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return JSONNode(value: .number(try parseNumber()), range: start..<index)
        default:
            throw error("unexpected character '\(printable(bytes[index]))'")
        }
    }

    /// Checks the array or object at `index` and moves past it, with a stack of closing
    /// brackets instead of recursion: any depth costs one byte a level, never the thread's stack.
    private mutating func skipContainer() throws(JSONSyntaxError) {
        enum Expect { case value, valueOrClose, key, keyOrClose, commaOrClose }
        var closers: [UInt8] = []
        var expect = Expect.value
        repeat {
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input") }
            let byte = bytes[index]
            switch expect {
            case .value, .valueOrClose:
                if expect == .valueOrClose, byte == UInt8(ascii: "]") {
                    index += 1
                    closers.removeLast()
                    expect = .commaOrClose
                } else if byte == UInt8(ascii: "{") {
                    index += 1
                    closers.append(UInt8(ascii: "}"))
                    expect = .keyOrClose
                } else if byte == UInt8(ascii: "[") {
                    index += 1
                    closers.append(UInt8(ascii: "]"))
                    expect = .valueOrClose
                } else {
                    _ = try parseValue()  // a scalar: no recursion
                    expect = .commaOrClose
                }
            case .key, .keyOrClose:
                if expect == .keyOrClose, byte == UInt8(ascii: "}") {
                    index += 1
                    closers.removeLast()
                    expect = .commaOrClose
                    continue
                }
                guard byte == UInt8(ascii: "\"") else { throw error("expected a string key") }
                _ = try parseString()
                skipWhitespace()
                guard peek(UInt8(ascii: ":")) else { throw error("expected ':' after a key") }
                index += 1
                expect = .value
            case .commaOrClose:
                guard let closer = closers.last else { return }
                if byte == UInt8(ascii: ",") {
                    index += 1
                    expect = closer == UInt8(ascii: "}") ? .key : .value
                } else if byte == closer {
                    index += 1
                    closers.removeLast()
                } else {
                    throw error(closer == UInt8(ascii: "}") ? "expected ',' or '}' in an object" : "expected ',' or ']' in an array")
                }
            }
        } while !closers.isEmpty
    }

    private mutating func enter() throws(JSONSyntaxError) {
        depth += 1
        if depth > maxDepth { throw error("nesting deeper than \(maxDepth) levels") }
    }

    private mutating func parseObject() throws(JSONSyntaxError) -> JSONNode {
        let start = index
        try enter()
        index += 1
        var members: [JSONMember] = []
        skipWhitespace()
        if peek(UInt8(ascii: "}")) {
            index += 1
        } else {
            while true {
                skipWhitespace()
                guard peek(UInt8(ascii: "\"")) else { throw error("expected a string key") }
                let memberStart = index
                let key = try parseString()
                skipWhitespace()
                guard peek(UInt8(ascii: ":")) else { throw error("expected ':' after a key") }
                index += 1
                skipWhitespace()
                let value = try parseValue()
                members.append(JSONMember(key: key, range: memberStart..<index, value: value))
                skipWhitespace()
                if peek(UInt8(ascii: ",")) { index += 1; continue }
                if peek(UInt8(ascii: "}")) { index += 1; break }
                throw error("expected ',' or '}' in an object")
            }
        }
        depth -= 1
        return JSONNode(value: .object(members), range: start..<index)
    }

    private mutating func parseArray() throws(JSONSyntaxError) -> JSONNode {
        let start = index
        try enter()
        index += 1
        var elements: [JSONNode] = []
        skipWhitespace()
        if peek(UInt8(ascii: "]")) {
            index += 1
        } else {
            while true {
                skipWhitespace()
                elements.append(try parseValue())
                skipWhitespace()
                if peek(UInt8(ascii: ",")) { index += 1; continue }
                if peek(UInt8(ascii: "]")) { index += 1; break }
                throw error("expected ',' or ']' in an array")
            }
        }
        depth -= 1
        return JSONNode(value: .array(elements), range: start..<index)
    }

    private mutating func parseString() throws(JSONSyntaxError) -> String {
        index += 1
        var out: [UInt8] = []
        while true {
            guard index < bytes.count else { throw error("unterminated string") }
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let text = String(validating: out, as: UTF8.self) else { throw error("string is not valid UTF-8") }
                return text
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw error("unterminated escape") }
                let escaped = bytes[index]
                index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escaped)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"): out.append(contentsOf: try parseUnicodeEscape())
                default: throw error("invalid escape '\\\(printable(escaped))'")
                }
            case 0..<0x20:
                throw error("control character in a string")
            default:
                out.append(byte)
                index += 1
            }
        }
    }

    /// The UTF-8 bytes of a `\uXXXX` escape (the `\u` already read), joining a surrogate pair.
    private mutating func parseUnicodeEscape() throws(JSONSyntaxError) -> [UInt8] {
        var code = try parseHex4()
        if (0xD800..<0xDC00).contains(code) {
            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                throw error("unpaired surrogate in a \\u escape")
            }
            index += 2
            let low = try parseHex4()
            guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate in a \\u escape") }
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00..<0xE000).contains(code) {
            throw error("unpaired surrogate in a \\u escape")
        }
        guard let scalar = Unicode.Scalar(code) else { throw error("invalid \\u escape") }
        return Array(String(Character(scalar)).utf8)
    }

    private mutating func parseHex4() throws(JSONSyntaxError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("invalid hex digit in a \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    private mutating func parseNumber() throws(JSONSyntaxError) -> String {
        let start = index
        if peek(UInt8(ascii: "-")) { index += 1 }
        if peek(UInt8(ascii: "0")) {
            index += 1
        } else if !skipDigits() {
            throw error("invalid number")
        }
        if peek(UInt8(ascii: ".")) {
            index += 1
            guard skipDigits() else { throw error("expected digits after '.'") }
        }
        if peek(UInt8(ascii: "e")) || peek(UInt8(ascii: "E")) {
            index += 1
            if peek(UInt8(ascii: "+")) || peek(UInt8(ascii: "-")) { index += 1 }
            guard skipDigits() else { throw error("expected digits in an exponent") }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private mutating func skipDigits() -> Bool {
        let start = index
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        return index > start
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONSyntaxError) {
        let expected = UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        guard index + expected.count <= bytes.count, bytes[index..<index + expected.count].elementsEqual(expected) else {
            throw error("invalid literal")
        }
        index += expected.count
    }

    private func peek(_ byte: UInt8) -> Bool { index < bytes.count && bytes[index] == byte }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private func printable(_ byte: UInt8) -> String {
        (0x20..<0x7F).contains(byte) ? String(UnicodeScalar(byte)) : "0x" + String(byte, radix: 16)
    }

    private func error(_ message: String) -> JSONSyntaxError {
        var line = 1
        var lineStart = 0
        for position in 0..<min(index, bytes.count) where bytes[position] == 0x0A {
            line += 1
            lineStart = position + 1
        }
        return JSONSyntaxError(message: message, offset: index, line: line, column: index - lineStart + 1)
    }
}
