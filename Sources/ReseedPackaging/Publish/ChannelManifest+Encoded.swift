import Foundation
import Reseed
import ReseedSystem

extension ChannelManifest {
    /// The manifest as JSON: fixed key order, two-space indent, a final newline. These are the bytes that get signed.
    ///
    /// The format-2 keys (`contentHash`, `compressed`, `deltas`) come after the seed's facts, each only when there is one; then `expires`, and the format-3 `issued`, `channel` and `keys`.
    /// A channel file's other encodings (xz) are its `alternatives`, after its own members.
    public func encoded() -> Data {
        var lines = ["  \"format\": \(format)", "  \"minimumFormat\": \(minimumFormat)"] + facts.jsonLines
        if let contentHash { lines.append("  \"contentHash\": \(JSONNode.quote(contentHash))") }
        if let incrementalContentHash { lines.append("  \"incrementalContentHash\": \(JSONNode.quote(incrementalContentHash))") }
        if let compressed { lines.append("  \"compressed\": {\(compressed.jsonMembers)}") }
        if !deltas.isEmpty {
            let entries = deltas.map { delta in
                "    {\"fromVersion\": \(JSONNode.quote(delta.fromVersion)), \"fromContentHash\": \(JSONNode.quote(delta.fromContentHash)), "
                    + delta.file.jsonMembers + (delta.metadataOnly.map { ", " + $0.jsonMember } ?? "") + "}"
            }
            lines.append("  \"deltas\": [\n" + entries.joined(separator: ",\n") + "\n  ]")
        }
        if let expires { lines.append("  \"expires\": \(JSONNode.quote(RFC3339.string(expires)))") }
        if let issued { lines.append("  \"issued\": \(JSONNode.quote(RFC3339.string(issued)))") }
        if let channel { lines.append("  \"channel\": \(JSONNode.quote(channel))") }
        if let keys { lines.append("  \"keys\": {\"version\": \(keys.version), \"sha256\": \(JSONNode.quote(keys.sha256))}") }
        return Data(("{\n" + lines.joined(separator: ",\n") + "\n}\n").utf8)
    }
}

extension ChannelManifest.File {
    /// The object's members, in a fixed order, without the braces: its own four first (all a reader
    /// older than xz reads), then `alternatives` when there are any.
    var jsonMembers: String {
        let own = "\"encoding\": \(JSONNode.quote(encoding)), \"file\": \(JSONNode.quote(file)), \"size\": \(size), \"sha256\": \(JSONNode.quote(sha256))"
        guard !alternatives.isEmpty else { return own }
        return own + ", \"alternatives\": [" + alternatives.map { "{" + $0.jsonMembers + "}" }.joined(separator: ", ") + "]"
    }
}
