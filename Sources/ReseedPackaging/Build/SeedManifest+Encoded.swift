import Foundation
import Reseed
import ReseedSystem

extension SeedManifest {
    /// The manifest as JSON: fixed key order, two-space indent, a final newline; the same manifest always gives the same bytes.
    /// `compression` follows the seed's facts, then `contentHash` and `incrementalContentHash`, each only when there is one.
    public func encoded() -> Data {
        let steps = self.steps.map { step in
            "    {\"id\": \(JSONNode.quote(step.id)), \"checksum\": \(JSONNode.quote(step.checksum))}"
        }
        let compression = self.compression.map { ["  \"compression\": \(JSONNode.quote($0.rawValue))"] } ?? []
        let lines = ["  \"format\": \(format)"] + facts.jsonLines + compression + [
            steps.isEmpty ? "  \"steps\": []" : "  \"steps\": [\n" + steps.joined(separator: ",\n") + "\n  ]",
        ] + (contentHash.map { ["  \"contentHash\": \(JSONNode.quote($0))"] } ?? [])
            + (incrementalContentHash.map { ["  \"incrementalContentHash\": \(JSONNode.quote($0))"] } ?? [])
        return Data(("{\n" + lines.joined(separator: ",\n") + "\n}\n").utf8)
    }
}

extension SeedFacts {
    /// The facts as the lines of a manifest's JSON object, in the order both manifests write them
    /// (the channel manifest's signature covers these exact bytes).
    var jsonLines: [String] {
        [
            "  \"name\": \(JSONNode.quote(name))",
            "  \"version\": \(JSONNode.quote(version))",
            "  \"file\": \(JSONNode.quote(file))",
            "  \"size\": \(size)",
            "  \"sha256\": \(JSONNode.quote(sha256))",
            "  \"userVersion\": \(userVersion)",
            "  \"applicationID\": \(applicationID)",
            "  \"pageSize\": \(pageSize)",
        ]
    }
}
