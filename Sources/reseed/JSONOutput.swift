import Foundation
import Reseed

/// A JSON value for `--json` output, written with keys in the order given.
enum JSONOutput {
    case string(String)
    case integer(Int64)
    case bool(Bool)
    case null
    case array([JSONOutput])
    case object([(String, JSONOutput)])

    static func optional(_ text: String?) -> JSONOutput { text.map { .string($0) } ?? .null }

    /// Compact when `indent` is nil, else pretty with that many spaces.
    func render(indent: Int? = 2, level: Int = 0) -> String {
        let pad = indent.map { String(repeating: " ", count: $0 * (level + 1)) } ?? ""
        let close = indent.map { String(repeating: " ", count: $0 * level) } ?? ""
        let newline = indent == nil ? "" : "\n"
        switch self {
        case .string(let text): return JSONNode.quote(text)
        case .integer(let value): return String(value)
        case .bool(let value): return value ? "true" : "false"
        case .null: return "null"
        case .array(let items):
            if items.isEmpty { return "[]" }
            return "[" + newline + items.map { pad + $0.render(indent: indent, level: level + 1) }.joined(separator: indent == nil ? ", " : "," + newline) + newline + close + "]"
        case .object(let members):
            if members.isEmpty { return "{}" }
            return "{" + newline + members.map { pad + JSONNode.quote($0.0) + ": " + $0.1.render(indent: indent, level: level + 1) }
                .joined(separator: indent == nil ? ", " : "," + newline) + newline + close + "}"
        }
    }
}
