import ReseedSystem

extension ChannelManifest.File {
    /// The most alternatives a file may list (one per other codec, with room for codecs to come).
    public static let maximumAlternatives = 4

    /// This file and its alternatives: the same bytes once decoded, each in an encoding this Reseed reads.
    public var encodings: [ChannelManifest.File] { [self] + alternatives }

    /// The encoding an update downloads: the smallest this Reseed reads, the listed one first on a tie.
    ///
    /// There is no fallback to another encoding when the chosen one fails: the publish that wrote
    /// them signed them together, so a missing or damaged file is a broken channel the publisher must
    /// see, and a transfer cut short resumes the same file on the next try. A delta that fails still
    /// falls back to the full seed.
    public var smallest: ChannelManifest.File {
        var best = self
        for alternative in alternatives where alternative.size < best.size { best = alternative }
        best.alternatives = []
        return best
    }

    /// The file at `field` as ``ChannelManifest/decode(_:source:)`` reads it: its own fields (`file`,
    /// when its encoding is one this Reseed reads), with the alternatives this Reseed reads listed in
    /// its `alternatives` (an older reader ignores the key, and reads the file's own encoding).
    /// When the file's own encoding is unknown, the first readable alternative takes its place; nil
    /// when there is none.
    static func withAlternatives(_ file: ChannelManifest.File?, of node: JSONNode, field: String, fields: ManifestFields,
                                 reading read: (JSONNode, String) throws(ReseedError) -> ChannelManifest.File?) throws(ReseedError) -> ChannelManifest.File? {
        var readable: [ChannelManifest.File] = []
        if let node = node["alternatives"] {
            guard case .array(let elements) = node.value else { throw fields.invalid("\(field).alternatives", "expected an array, found \(node.kindName)") }
            guard elements.count <= maximumAlternatives else {
                throw fields.invalid("\(field).alternatives", "\(elements.count) alternatives; at most \(maximumAlternatives)")
            }
            for (index, element) in elements.enumerated() {
                // An alternative's own alternatives mean nothing: dropped.
                if var alternative = try read(element, "\(field).alternatives[\(index)]") {
                    alternative.alternatives = []
                    readable.append(alternative)
                }
            }
        }
        guard var first = file ?? readable.first else { return nil }
        first.alternatives = readable.filter { $0 != first }
        return first
    }
}
