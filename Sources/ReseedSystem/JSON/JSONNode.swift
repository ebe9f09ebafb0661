/// A parsed JSON value that remembers where in the source bytes each part came from.
///
/// Reseed parses JSON itself so that it can (a) rewrite only its own key of a
/// shared preferences file and leave every other byte as the app wrote it,
/// (b) keep a number's exact spelling (INTEGER versus REAL for a JSON step)
/// and (c) store a nested value of a JSON step as its original text.
package struct JSONNode: Sendable, Equatable {
    /// The kinds of JSON value.
    package indirect enum Value: Sendable, Equatable {
        case null
        case bool(Bool)
        /// The number exactly as spelled in the source.
        case number(String)
        case string(String)
        case array([JSONNode])
        case object([JSONMember])
        /// A well-formed array or object nested deeper than the parse kept as a tree
        /// (``JSONNode/parse(_:opaqueBeyond:)``); only its place in the source is known.
        case opaque
    }

    package var value: Value
    /// Byte offsets of the value in the source, surrounding whitespace excluded.
    package var range: Range<Int>

    /// The member named `key` (the last one, when a key repeats), for an object.
    package subscript(key: String) -> JSONNode? {
        guard case .object(let members) = value else { return nil }
        return members.last { $0.key == key }?.value
    }

    /// The string, when this is a string.
    package var string: String? {
        if case .string(let text) = value { return text }
        return nil
    }

    /// What kind of value this is, in words for error messages.
    package var kindName: String {
        switch value {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        case .opaque: "a deeply nested value"
        }
    }
}

/// One `"key": value` pair of a JSON object.
package struct JSONMember: Sendable, Equatable {
    package var key: String
    /// From the key's opening quote to the end of the value.
    package var range: Range<Int>
    package var value: JSONNode
}

/// Why some bytes are not JSON, and where.
package struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    package var message: String
    package var offset: Int
    package var line: Int
    package var column: Int

    package var description: String { "\(message) at line \(line), column \(column)" }
}

extension JSONNode {
    /// Parses one JSON value (RFC 8259) filling all of `bytes` but for whitespace.
    ///
    /// Nesting deeper than `maxDepth` is an error rather than a stack overflow.
    package static func parse(_ bytes: [UInt8], maxDepth: Int = 256) throws(JSONSyntaxError) -> JSONNode {
        var parser = JSONParser(bytes: bytes, maxDepth: maxDepth)
        return try parser.parseDocument()
    }

    /// Parses a document of any depth: arrays and objects nested deeper than `depth` are checked
    /// without recursion and kept as ``Value/opaque`` nodes (their range only).
    ///
    /// For a file Reseed shares with an app (the preferences): every valid JSON document is
    /// accepted, whatever the app nests under its own keys, and Reseed's own key stays a tree.
    package static func parse(_ bytes: [UInt8], opaqueBeyond depth: Int) throws(JSONSyntaxError) -> JSONNode {
        var parser = JSONParser(bytes: bytes, maxDepth: .max, opaqueBeyond: depth)
        return try parser.parseDocument()
    }

    /// Encodes `text` as a JSON string literal.
    package static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
