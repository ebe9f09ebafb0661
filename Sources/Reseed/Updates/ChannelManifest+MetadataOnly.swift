import ReseedSystem

extension ChannelManifest {
    /// A delta whose two seeds differ only in Reseed's own metadata (``SeedMetadata``): the same
    /// schema, the same rows in every other table, the same statistics. A release that changes no
    /// data (an upstream database republished as is) needs no delta file then: the delta entry
    /// carries the metadata values that change, and a device of this Reseed makes the delta itself.
    ///
    /// In `channel.json` it is the delta entry's member `metadata`, after the file's members, which an
    /// older reader ignores (it downloads the entry's file, which the publisher still writes):
    ///
    /// ```json
    ///   {"fromVersion": "3.7.1", "fromContentHash": "…", "encoding": "gzip", "file": "…", "size": 4206, "sha256": "…",
    ///    "metadata": {"version": "3.7.2"}}
    /// ```
    ///
    /// A device turns a copy of its installed seed into the new one by setting these values in its
    /// `reseed_metadata` table, through the same copy, apply, check and swap as any delta, and
    /// checks the result: against these values without reading it whole while the store file has
    /// the fingerprint recorded at its install (see `Installation.applyMetadataOnly(to:incremental:)`),
    /// else as a delta's, its whole content hash against the manifest's `contentHash`.
    /// A member that is malformed, out of bounds, or inconsistent with the manifest (a `version`
    /// that is not the manifest's) is refused with one sentence, and the update falls back to the
    /// full seed, the store untouched; a member named twice is refused with the whole manifest, as
    /// anywhere in it.
    public struct MetadataOnly: Sendable, Hashable {
        /// The most values one entry may carry (Reseed's metadata has three keys).
        public static let maximumValues = 8
        /// The longest key, in UTF-8 bytes.
        public static let maximumKeyBytes = 64
        /// The longest value, in UTF-8 bytes (a delta header's own bound).
        public static let maximumValueBytes = 256

        /// The `reseed_metadata` values of the new seed that differ from the old seed's, by key.
        public var values: [String: String]
        /// Why a device must not use the entry, when the manifest's member is malformed or out of
        /// bounds: one sentence naming the member; nil for a usable one.
        var refusal: String?

        /// An entry setting `values`.
        public init(values: [String: String]) {
            self.values = values
        }

        /// The member as ``ChannelManifest/decode(_:source:)`` reads it at `field` (`deltas[0].metadata`):
        /// an object of strings that ``problem(of:version:)`` finds nothing wrong with. Nil when the
        /// entry has no such member; one with a ``refusal`` when it is not that.
        static func read(_ node: JSONNode?, field: String, version: String) -> MetadataOnly? {
            guard let node else { return nil }
            var entry = MetadataOnly(values: [:])
            entry.refusal = problem(node, version: version, into: &entry.values).map { "field \"\(field)\": \($0)" }
            return entry
        }

        /// What is wrong with the member `node`, filling `values` as it goes; nil when nothing is.
        private static func problem(_ node: JSONNode, version: String, into values: inout [String: String]) -> String? {
            guard case .object(let members) = node.value else { return "expected an object, found \(node.kindName)" }
            for member in members.prefix(maximumValues + 1) {
                guard let value = member.value.string else { return "\(JSONNode.quote(member.key)): expected a string, found \(member.value.kindName)" }
                values[member.key] = value
            }
            return problem(of: values, version: version)
        }

        /// What a device would refuse in an entry setting `values` in a manifest of `version`, in a
        /// phrase; nil when it is a usable entry: 1 to ``maximumValues`` values, each key 1 to
        /// ``maximumKeyBytes`` bytes of ASCII letters, digits, `_`, `.` and `-`, each value at most
        /// ``maximumValueBytes`` bytes without NUL, `version` among them and equal to `version`.
        public static func problem(of values: [String: String], version: String) -> String? {
            guard (1...maximumValues).contains(values.count) else { return "\(values.count) values; 1 to \(maximumValues)" }
            for (key, value) in values.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
                guard isKey(key) else {
                    return "\(JSONNode.quote(key)) is not a metadata key (1-\(maximumKeyBytes) bytes of ASCII letters, digits, '_', '.', '-')"
                }
                guard value.utf8.count <= maximumValueBytes, !value.utf8.contains(0) else {
                    return "\(JSONNode.quote(key)) is \(value.utf8.count) bytes; a value is at most \(maximumValueBytes) bytes, without NUL"
                }
            }
            guard values["version"] == version else {
                return "version \(values["version"].map(JSONNode.quote) ?? "missing") is not the manifest's \(JSONNode.quote(version))"
            }
            return nil
        }

        private static func isKey(_ key: String) -> Bool {
            (1...maximumKeyBytes).contains(key.utf8.count) && key.utf8.allSatisfy { byte in
                (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte) || "_.-".utf8.contains(byte)
            }
        }
    }
}
