import Foundation

extension Terminal {
    /// Writes `value` to stdout as `--json` output: one line of JSON, keys sorted (so the same
    /// result always gives the same bytes), slashes in paths as they are.
    ///
    /// - Throws: `EncodingError` from `JSONEncoder` (which strings, integers and booleans do not
    ///   cause), or ``OutputError`` when stdout cannot be written.
    static func out(json value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        try out(try encoder.encode(value) + Data("\n".utf8))
    }
}

/// An optional that `--json` writes as `null` when it is nil.
///
/// Synthesized `Encodable` leaves a nil optional's key out; the CLI's JSON objects always have
/// every key, so a script can tell "none" (`null`) from a key it misspelt.
///
/// ```swift
/// struct Report: Encodable {
///     @NullWhenNil var previousVersion: String?   // "previousVersion":null
/// }
/// ```
@propertyWrapper
struct NullWhenNil<Value: Encodable>: Encodable {
    var wrappedValue: Value?

    init(wrappedValue: Value?) {
        self.wrappedValue = wrappedValue
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}
