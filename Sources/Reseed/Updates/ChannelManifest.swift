import Foundation

/// What a channel offers: `channel.json`, the signed description of the newest seed in a channel folder.
///
/// A channel is a folder of static files on any HTTP host: the seed files, named by
/// version so that a new publish never changes a file a client may be downloading, this
/// manifest, and `channel.json.sig`, a detached Ed25519 signature over the manifest's
/// exact bytes (see ``ChannelPublicKey``). `reseed publish` (`ChannelPublisher`, in `ReseedPackaging`) writes
/// all three; a ``ChannelUpdater`` reads them.
///
/// ```json
/// {
///   "format": 1,
///   "minimumFormat": 1,
///   "name": "triage",
///   "version": "2.1.0",
///   "file": "triage-2.1.0.sqlite",
///   "size": 32768,
///   "sha256": "9f86d0…",
///   "userVersion": 5,
///   "applicationID": 1381188932,
///   "pageSize": 4096
/// }
/// ```
///
/// `format` is the format the publisher wrote; `minimumFormat` the oldest format a
/// reader must know to use it. A reader ignores keys it does not know, and refuses a
/// manifest whose `minimumFormat` is newer than its own format. The other fields are the
/// seed manifest's (``SeedFacts``) but for the migration steps, which a client does not need.
@dynamicMemberLookup
public struct ChannelManifest: Sendable, Hashable {
    /// The channel format this version of Reseed writes, and the newest it reads.
    public static let currentFormat = 1
    /// The manifest's file name in the channel folder.
    public static let fileName = "channel.json"
    /// The signature's file name in the channel folder: the base64 of the 64-byte Ed25519 signature, one line.
    public static let signatureFileName = "channel.json.sig"
    /// The largest manifest a client reads (64 KiB); a larger one is refused before the rest is read.
    public static let maximumFileSize = 64 << 10

    /// The format the publisher wrote.
    public var format: Int
    /// The oldest channel format a reader must know to use this manifest.
    public var minimumFormat: Int
    /// The seed's name, version, file (its name in the channel folder), size, SHA-256 and header
    /// values, read as the manifest's own (`manifest.version`).
    public var facts: SeedFacts

    /// The channel manifest of `seed`, published under the file name `file`.
    package init(seed: SeedManifest, file: String) {
        var facts = seed.facts
        facts.file = file
        self.init(facts: facts)
    }

    /// A channel manifest from its fields; both formats default to ``currentFormat``.
    init(format: Int = ChannelManifest.currentFormat, minimumFormat: Int = ChannelManifest.currentFormat, facts: SeedFacts) {
        self.format = format
        self.minimumFormat = minimumFormat
        self.facts = facts
    }

    /// A field of ``facts`` as the manifest's own: `manifest.version` is `manifest.facts.version`.
    public subscript<Value>(dynamicMember field: WritableKeyPath<SeedFacts, Value>) -> Value {
        get { facts[keyPath: field] }
        set { facts[keyPath: field] = newValue }
    }

    /// The file name a seed is published under: `<name>-<version>.sqlite`, with any character
    /// of the version other than letters, digits, `.`, `_`, `+` and `-` replaced by `_`.
    package static func seedFileName(name: String, version: String) -> String {
        let safe = version.unicodeScalars.map { scalar -> String in
            let ok = scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || ".+_-".unicodeScalars.contains(scalar))
            return ok ? String(scalar) : "_"
        }.joined()
        return "\(name)-\(safe).sqlite"
    }

    /// The seed manifest of the downloaded seed, stored under `file` (no migration steps).
    package func seedManifest(file: String) -> SeedManifest {
        var facts = self.facts
        facts.file = file
        return SeedManifest(facts: facts, steps: [])
    }

    /// Checks and decodes manifest bytes (already verified against their signature); `source` names them in errors.
    ///
    /// - Throws: ``ReseedError``: ``ReseedError/Code/invalidManifest`` naming the field, for JSON
    ///   that does not parse, a missing or mistyped field, a file that is not a plain name, or an
    ///   absurd size; ``ReseedError/Code/channelRefused`` when `minimumFormat` is newer than
    ///   ``currentFormat``.
    public static func decode(_ bytes: [UInt8], source: String) throws(ReseedError) -> ChannelManifest {
        let root: JSONNode
        do {
            root = try JSONNode.parse(bytes, maxDepth: 16)
        } catch {
            throw ReseedError(.invalidManifest, step: .checkManifest, path: source, message: "channel manifest is not valid JSON: \(error)")
        }
        let fields = ManifestFields(root: root, path: source, step: .checkManifest)
        guard case .object = root.value else { throw fields.invalid(nil, "channel manifest is \(root.kindName), not a JSON object") }
        let format = try fields.integer("format", in: 1...Int64(Int32.max))
        let minimumFormat = try fields.integer("minimumFormat", in: 1...format)
        guard minimumFormat <= Int64(currentFormat) else {
            throw ReseedError(.channelRefused, step: .checkManifest, path: source, field: "minimumFormat",
                              message: "the channel needs channel format \(minimumFormat); this Reseed reads format \(currentFormat): update the app")
        }
        let facts = try fields.seedFacts()
        guard !facts.file.hasPrefix(".") else {
            throw fields.invalid("file", "file \(JSONNode.quote(facts.file)) is not a plain file name")
        }
        return ChannelManifest(format: Int(format), minimumFormat: Int(minimumFormat), facts: facts)
    }
}
