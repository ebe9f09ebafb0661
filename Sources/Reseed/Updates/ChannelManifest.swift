import Foundation
import ReseedSystem

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
///
/// Format 2 adds three optional keys after those, which a format-1 reader ignores (so a
/// channel published with them still says `"minimumFormat": 1`, and older apps keep
/// downloading `file`):
///
/// ```json
///   "contentHash": "5d41a8…",
///   "compressed": {"encoding": "gzip", "file": "triage-2.1.0.sqlite.gz", "size": 9412, "sha256": "…"},
///   "deltas": [
///     {"fromVersion": "2.0.0", "fromContentHash": "77c0e1…", "encoding": "gzip",
///      "file": "triage-2.1.0.from-2.0.0.delta.gz", "size": 812, "sha256": "…"}
///   ]
/// ```
///
/// - `contentHash`: the seed's ``SeedManifest/contentHash``; a delta's result must have it.
/// - `incrementalContentHash` (written after `contentHash`, added later and as optional): the seed's
///   ``SeedManifest/incrementalContentHash``, which lets a delta's result be checked from the rows
///   it changed.
/// - `compressed`: the seed file gzip-compressed; `size` and `sha256` are the compressed file's,
///   while the top-level `size` and `sha256` still describe the database it decompresses to.
/// - `deltas`: row-level deltas (see <doc:RowLevelDeltas>), each from the seed whose content hash
///   is `fromContentHash`, gzip-compressed; `size` and `sha256` are the compressed file's.
///
/// An entry whose `encoding` this reader does not know is skipped, not refused. Since xz came in,
/// `compressed` and each delta may list the same file in other encodings, which a reader that
/// knows them prefers when smaller (``File/smallest``) and an older reader ignores:
///
/// ```json
///   "compressed": {"encoding": "gzip", "file": "triage-2.1.0.sqlite.gz", "size": 9412, "sha256": "…",
///                  "alternatives": [{"encoding": "xz", "file": "triage-2.1.0.sqlite.xz", "size": 7630, "sha256": "…"}]}
/// ```
///
/// A delta entry whose two seeds differ only in Reseed's own metadata (a release that changes no
/// data) also carries `"metadata": {"version": "2.1.1"}`, the values that change: a reader that knows
/// it makes that delta itself and downloads nothing (``MetadataOnly``); an older one downloads `file`.
///
/// `expires` (RFC 3339 in UTC, see ``RFC3339``), written by every `reseed publish` since
/// channel trust came in, is the time after which an app refuses the manifest
/// (``ReseedError/Code/channelExpired``): a host that keeps serving an old manifest cannot hide
/// a newer release for longer than that. Publishers re-sign on a schedule (see
/// <doc:UpdatingFromAChannel>). A manifest without it, from an older publisher, is accepted only
/// from a channel without `keys.json` (see ``ChannelKeys``).
///
/// Format 3 adds, after `expires`, three members a device checks and an older reader ignores:
///
/// ```json
///   "issued": "2026-11-01T00:00:00Z",
///   "channel": "production",
///   "keys": {"version": 3, "sha256": "4e1f…"}
/// ```
///
/// - `issued`: when it was signed. A device refuses a manifest issued in its future (beyond the
///   clock skew), and one whose `expires − issued` passes its
///   ``ChannelUpdater/Configuration/maximumValidity``; a format-3 manifest must have both times.
/// - `channel`: the channel's name, copied from `keys.json` (``ChannelKeys/channelName``).
/// - `keys`: the version and SHA-256 of the `keys.json` it was published under: a device refuses a
///   `keys.json` older than that (a stale copy), or of that version with other bytes.
///
/// A member named twice in one object is refused. Once a device has verified a manifest of some
/// format from a channel, it refuses a lower format from it.
@dynamicMemberLookup
public struct ChannelManifest: Sendable, Hashable {
    /// The channel format this version of Reseed writes, and the newest it reads.
    public static let currentFormat = 3
    /// The manifest's file name in the channel folder.
    public static let fileName = "channel.json"
    /// The signature's file name in the channel folder: the base64 of the 64-byte Ed25519 signature, one line.
    public static let signatureFileName = "channel.json.sig"
    /// The largest manifest a client reads (64 KiB); a larger one is refused before the rest is read.
    public static let maximumFileSize = 64 << 10

    /// A file of the channel besides the seed itself (its compressed form, a delta): where it
    /// is, how large and what SHA-256 it has as stored, and how it is encoded.
    public struct File: Sendable, Hashable {
        /// The encodings this Reseed reads: the names of its codecs.
        public static let knownEncodings = Set(Codecs.all.map(\.name))
        /// How the file is encoded: a codec's name.
        public var encoding: String
        /// Its name in the channel folder: a plain name.
        public var file: String
        /// Its size in bytes as stored; a download never reads more.
        public var size: Int64
        /// Lowercase hex SHA-256 of its bytes as stored.
        public var sha256: String
        /// The same file in other encodings this Reseed reads (the JSON's `alternatives`, which older
        /// readers ignore): an update downloads the ``smallest``. Empty by default.
        public var alternatives: [File] = []

        /// A channel file from its fields; the encoding defaults to the codec `reseed publish` writes.
        public init(encoding: String = SeedManifest.Compression.written.rawValue, file: String, size: Int64, sha256: String) {
            self.encoding = encoding
            self.file = file
            self.size = size
            self.sha256 = sha256
        }
    }

    /// A row-level delta the channel offers: it turns the seed whose content hash is
    /// ``fromContentHash`` into this manifest's seed.
    public struct Delta: Sendable, Hashable {
        /// The version of the seed it starts from (for people; the updater matches the hash).
        public var fromVersion: String
        /// The content hash of the seed it starts from.
        public var fromContentHash: String
        /// The compressed delta file.
        public var file: File
        /// The new seed's metadata values, when the two seeds differ in nothing else (the JSON's
        /// `metadata`, which older readers ignore): a device of this Reseed then makes the delta
        /// itself instead of downloading ``file``. Nil by default.
        public var metadataOnly: MetadataOnly?

        /// A delta entry from its fields.
        public init(fromVersion: String, fromContentHash: String, file: File) {
            self.fromVersion = fromVersion
            self.fromContentHash = fromContentHash
            self.file = file
        }
    }

    /// The most deltas a manifest may list (the manifest itself is at most 64 KiB).
    public static let maximumDeltas = 64

    /// The format the publisher wrote.
    public var format: Int
    /// The oldest channel format a reader must know to use this manifest.
    public var minimumFormat: Int
    /// The seed's name, version, file (its name in the channel folder), size, SHA-256 and header
    /// values, read as the manifest's own (`manifest.version`).
    public var facts: SeedFacts
    /// The seed's content hash, when the publisher stated it (format 2).
    public var contentHash: String?
    /// The seed's ``SeedManifest/incrementalContentHash``, when the publisher stated it (format 2).
    public var incrementalContentHash: String?
    /// The seed file gzip-compressed, when the channel offers it (format 2).
    public var compressed: File?
    /// The deltas the channel offers to this seed, newest starting point first (format 2).
    public var deltas: [Delta]
    /// When the manifest stops being valid; nil in a manifest from a publisher older than channel trust.
    public var expires: Date?
    /// When the manifest was signed (format 3).
    public var issued: Date?
    /// The channel's name, as `keys.json` states it (format 3).
    public var channel: String?
    /// The `keys.json` the manifest was published under (format 3); nil for a channel without one.
    public var keys: KeysReference?

    /// The `keys.json` a manifest was published under: its version and the SHA-256 of its bytes.
    public struct KeysReference: Sendable, Hashable {
        public var version: Int64
        public var sha256: String

        public init(version: Int64, sha256: String) {
            self.version = version
            self.sha256 = sha256
        }
    }

    /// The channel manifest of `seed`, published under the file name `file`.
    package init(seed: SeedManifest, file: String) {
        var facts = seed.facts
        facts.file = file
        self.init(facts: facts, contentHash: seed.contentHash, incrementalContentHash: seed.incrementalContentHash)
    }

    /// A channel manifest from its fields. `format` defaults to ``currentFormat``, `minimumFormat`
    /// to ``oldestReadableFormat``: what format 2 adds, a format-1 reader can ignore.
    init(format: Int = ChannelManifest.currentFormat, minimumFormat: Int = ChannelManifest.oldestReadableFormat, facts: SeedFacts,
         contentHash: String? = nil, incrementalContentHash: String? = nil, compressed: File? = nil, deltas: [Delta] = [], expires: Date? = nil) {
        self.format = format
        self.minimumFormat = minimumFormat
        self.facts = facts
        self.contentHash = contentHash
        self.incrementalContentHash = incrementalContentHash
        self.compressed = compressed
        self.deltas = deltas
        self.expires = expires
    }

    /// The `minimumFormat` a publisher writes: 1, since a format-1 reader can use every manifest this Reseed writes.
    public static let oldestReadableFormat = 1

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
    func seedManifest(file: String) -> SeedManifest {
        var facts = self.facts
        facts.file = file
        return SeedManifest(facts: facts, steps: [], contentHash: contentHash, incrementalContentHash: incrementalContentHash)
    }

    /// The file name of the delta from `fromVersion` to this seed: `<name>-<version>.from-<fromVersion>.delta.gz`,
    /// both versions made safe as in ``seedFileName(name:version:)``.
    package static func deltaFileName(name: String, version: String, fromVersion: String) -> String {
        let target = seedFileName(name: name, version: version).dropLast(".sqlite".count)
        let from = seedFileName(name: "", version: fromVersion).dropFirst().dropLast(".sqlite".count)
        return "\(target).from-\(from).delta" + Codecs.written.fileSuffix
    }

    /// Checks and decodes manifest bytes (already verified against their signature); `source` names them in errors.
    ///
    /// - Throws: ``ReseedError``: ``ReseedError/Code/invalidManifest`` naming the field, for JSON
    ///   that does not parse, a missing or mistyped field, a file that is not a plain name, or an
    ///   absurd size; ``ReseedError/Code/channelRefused`` when `minimumFormat` is newer than
    ///   ``currentFormat``.
    public static func decode(_ bytes: [UInt8], source: String) throws(ReseedError) -> ChannelManifest {
        let fields = try ManifestFields.signedFile(bytes, maxDepth: 16, path: source, step: .checkManifest,
                                                   what: "channel manifest", fileName: fileName)
        let root = fields.root
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
        let contentHash = try fields.optionalSHA256("contentHash")
        let incrementalContentHash = try fields.optionalSHA256("incrementalContentHash")
        let compressed = try root["compressed"].flatMap { node throws(ReseedError) in
            try file(node, field: "compressed", limit: SeedManifest.maximumSeedSize, fields: fields)
        }
        var deltas: [Delta] = []
        if let node = root["deltas"] {
            guard case .array(let elements) = node.value else { throw fields.invalid("deltas", "expected an array, found \(node.kindName)") }
            guard elements.count <= maximumDeltas else { throw fields.invalid("deltas", "\(elements.count) deltas; at most \(maximumDeltas)") }
            for (index, element) in elements.enumerated() {
                let field = "deltas[\(index)]"
                // A delta larger than the seed it leads to is never worth downloading.
                guard let file = try file(element, field: field, limit: facts.size, fields: fields) else { continue }
                let entry = ManifestFields(root: element, path: source, step: .checkManifest)
                do throws(ReseedError) {
                    let fromVersion = try entry.string("fromVersion")
                    guard let fromContentHash = try entry.optionalSHA256("fromContentHash") else { throw entry.invalid("fromContentHash", "missing") }
                    var delta = Delta(fromVersion: fromVersion, fromContentHash: fromContentHash, file: file)
                    delta.metadataOnly = MetadataOnly.read(element["metadata"], field: "\(field).metadata", version: facts.version)
                    deltas.append(delta)
                } catch {
                    throw fields.invalid(field, error.message)
                }
            }
        }
        // From format 3 on, a manifest says when it was issued and when it expires.
        let expires = root["expires"] == nil && format < 3 ? nil : try fields.date("expires")
        let issued = root["issued"] == nil && format < 3 ? nil : try fields.date("issued")
        var channel: String?
        if root["channel"] != nil {
            let name = try fields.string("channel")
            guard ChannelKeys.isValidChannelName(name) else { throw fields.invalid("channel", "\(JSONNode.quote(name)) is not a channel name") }
            channel = name
        }
        var keys: KeysReference?
        if let node = root["keys"] {
            guard case .object = node.value else { throw fields.invalid("keys", "expected an object, found \(node.kindName)") }
            let entry = ManifestFields(root: node, path: source, step: .checkManifest, prefix: "keys.")
            let version = try entry.integer("version", in: 1...Int64(Int32.max))
            guard let sha256 = try entry.optionalSHA256("sha256") else { throw entry.invalid("sha256", "missing") }
            keys = KeysReference(version: version, sha256: sha256)
        }
        var manifest = ChannelManifest(format: Int(format), minimumFormat: Int(minimumFormat), facts: facts,
                                       contentHash: contentHash, incrementalContentHash: incrementalContentHash, compressed: compressed, deltas: deltas, expires: expires)
        (manifest.issued, manifest.channel, manifest.keys) = (issued, channel, keys)
        return manifest
    }

    /// A ``File`` object at `field`; nil when its encoding is one this Reseed does not read.
    private static func file(_ node: JSONNode, field: String, limit: Int64, fields: ManifestFields) throws(ReseedError) -> File? {
        guard case .object = node.value else { throw fields.invalid(field, "expected an object, found \(node.kindName)") }
        let entry = ManifestFields(root: node, path: fields.path, step: .checkManifest)
        do throws(ReseedError) {
            let encoding = try entry.string("encoding")
            let alternative = { (node: JSONNode, field: String) throws(ReseedError) in try Self.file(node, field: field, limit: limit, fields: fields) }
            guard File.knownEncodings.contains(encoding) else { return try File.withAlternatives(nil, of: node, field: field, fields: fields, reading: alternative) }
            let file = try entry.string("file")
            guard SeedManifest.isPlainFileName(file), !file.hasPrefix(".") else {
                throw entry.invalid("file", "\(JSONNode.quote(file)) is not a plain file name")
            }
            let size = try entry.integer("size", in: 1...max(1, limit))
            guard let sha256 = try entry.optionalSHA256("sha256") else { throw entry.invalid("sha256", "missing") }
            return try File.withAlternatives(File(encoding: encoding, file: file, size: size, sha256: sha256), of: node, field: field, fields: fields, reading: alternative)
        } catch {
            throw fields.invalid(field, error.message)
        }
    }
}
