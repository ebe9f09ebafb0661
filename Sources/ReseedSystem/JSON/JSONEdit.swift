/// Sets one value inside a JSON document by splicing bytes, leaving every other byte as it was.
///
/// Apps share the preferences file with Reseed; re-serialising it would
/// reorder their keys, respell their numbers (`1.0` → `1`) and change their
/// escapes. Splicing keeps the app's part of the file byte for byte.
package enum JSONEdit {
    /// Returns `source` with the value at `path` (object keys from the root) set to `valueJSON`.
    ///
    /// Missing objects along the path are created; a non-object found along the
    /// path is replaced by one. When a key repeats, the last one is set (the one
    /// readers honour). `root` must be `source` parsed, and an object.
    package static func set(_ path: [String], to valueJSON: String, in source: [UInt8], root: JSONNode) -> [UInt8] {
        precondition(!path.isEmpty)
        var node = root
        var depth = 0
        while true {
            guard case .object(let members) = node.value else {
                return splice(source, node.range, nested(path[depth...], valueJSON))
            }
            let key = path[depth]
            guard let member = members.last(where: { $0.key == key }) else {
                let text = JSONNode.quote(key) + ": " + nested(path[(depth + 1)...], valueJSON)
                if let last = members.last {
                    return splice(source, last.range.upperBound..<last.range.upperBound, ", " + text)
                }
                let inside = node.range.lowerBound + 1
                return splice(source, inside..<inside, text)
            }
            if depth == path.count - 1 {
                return splice(source, member.value.range, valueJSON)
            }
            node = member.value
            depth += 1
        }
    }

    /// `{"a": {"b": value}}` for the path `[a, b]`; the value itself for an empty path.
    private static func nested(_ path: ArraySlice<String>, _ valueJSON: String) -> String {
        path.reversed().reduce(valueJSON) { inner, key in "{" + JSONNode.quote(key) + ": " + inner + "}" }
    }

    private static func splice(_ source: [UInt8], _ range: Range<Int>, _ text: String) -> [UInt8] {
        var out = source
        out.replaceSubrange(range, with: Array(text.utf8))
        return out
    }
}
