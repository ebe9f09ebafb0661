import Crypto
import Foundation
import ReseedSystem

/// `keys.json`: the channel keys that may sign a channel's `channel.json`, signed by a root key the app pins.
///
/// The app pins root keys (``ChannelUpdater``'s `publicKeys`); the root's private key stays offline
/// and signs only this file (`reseed keys`). Channel keys sign `channel.json` (`reseed publish`);
/// each has its own expiry, and a key root removed is listed under `revoked`, so a release it signed
/// is refused and an installed one loses its standing (see <doc:ChannelTrust>).
///
/// ```json
/// {
///   "signed": {"type": "reseed-keys", "format": 1, "version": 3, "threshold": 1,
///     "expires": "2027-06-01T00:00:00Z", "channel": "production",
///     "roots": [
///       {"keyid": "9b7d…", "publicKey": "…"}
///     ],
///     "keys": [
///       {"keyid": "5f0c…", "publicKey": "q8f1yR7n0TkM4gO1QbqR3y2Gv2p3sTq6f9p2k8W0a1E=", "expires": "2027-06-01T00:00:00Z"}
///     ],
///     "revoked": [
///       {"keyid": "a11e…", "publicKey": "…"}
///     ]},
///   "signatures": [
///     {"keyid": "9b7d…", "sig": "…"}
///   ]
/// }
/// ```
///
/// - The signatures are Ed25519 over the exact bytes of the `signed` value as they stand in the
///   file (from its `{` to its `}`), so no canonical form of JSON is needed.
/// - `keyid` is a key's ``ChannelPublicKey/keyID``.
/// - `version` grows by one at every change; an app refuses a version lower than the highest it
///   has seen (recorded in the preferences), so an old list cannot bring back a removed key.
/// - `threshold`: how many distinct root keys must have signed: of the roots the device trusts now
///   (the pinned ones, or those a verified `keys.json` listed under `roots`), and of the file's own
///   `roots` when it lists them. One root alone can never lower a threshold: a new file needs the
///   threshold the device trusts now.
/// - `expires` (optional in files written before it came): after it, plus the clock skew, the
///   file is refused, so a mirror cannot freeze it; `reseed keys --valid-for` re-signs it.
/// - `channel` (optional): the channel's name, which `reseed publish` copies into `channel.json`;
///   an app pins it or records the first one it verifies (see <doc:ChannelTrust>).
/// - `roots` (optional): the root keys from this version on (a root rotation, signed by the
///   threshold of the old roots and of the new ones).
/// - A member named twice in one object is refused; members this Reseed does not know are
///   ignored; `format` above ``currentFormat`` is refused.
public struct ChannelKeys: Sendable, Hashable {
    /// The file's name in the channel folder.
    public static let fileName = "keys.json"
    /// The format this Reseed writes and the newest it reads.
    public static let currentFormat = 1
    /// The `type` every keys file states, so that no other signed document can pass for one.
    public static let type = "reseed-keys"
    /// The largest file read (64 KiB); a larger one is refused before the rest is read.
    public static let maximumFileSize = 64 << 10
    /// The most channel keys listed.
    public static let maximumKeys = 32
    /// The most removed keys listed.
    public static let maximumRevoked = 256
    /// The most signatures read.
    public static let maximumSignatures = 16

    /// A channel key: its public key, and when it stops being valid.
    public struct Key: Sendable, Hashable {
        public var publicKey: ChannelPublicKey
        public var expires: Date

        public init(publicKey: ChannelPublicKey, expires: Date) {
            self.publicKey = publicKey
            self.expires = expires
        }
    }

    /// A root key's signature of the `signed` bytes.
    public struct Signature: Sendable, Hashable {
        public var keyID: String
        /// The 64-byte Ed25519 signature.
        public var signature: Data

        public init(keyID: String, signature: Data) {
            self.keyID = keyID
            self.signature = signature
        }
    }

    /// The format the file states.
    public var format: Int
    /// The file's version: it grows at every change and never goes back.
    public var version: Int64
    /// How many distinct pinned root keys must sign (1 in what this Reseed writes).
    public var threshold: Int
    /// The channel keys that may sign `channel.json`.
    public var keys: [Key]
    /// The keys root removed: a manifest one of them signed is refused.
    public var revoked: [ChannelPublicKey]
    /// When the file stops being valid; nil in a file written before keys.json expired.
    public var expires: Date?
    /// The channel's name, when the root named it.
    public var channelName: String?
    /// The root keys from this version on, when the file lists them (a root rotation); empty: the
    /// roots the device trusts stay.
    public var roots: [ChannelPublicKey]
    /// The root signatures.
    public var signatures: [Signature]
    /// The exact bytes of the `signed` value in the file: what the signatures cover.
    public var signedBytes: [UInt8]
    /// The lowercase hex SHA-256 of the whole file as read (what `channel.json` names it by); empty
    /// for a file not read from bytes.
    public var sha256 = ""

    /// The longest channel name.
    public static let maximumChannelNameLength = 64

    /// A keys file from its fields (for a publisher, which encodes and signs it).
    public init(version: Int64, threshold: Int = 1, keys: [Key], revoked: [ChannelPublicKey],
                expires: Date? = nil, channelName: String? = nil, roots: [ChannelPublicKey] = [],
                signatures: [Signature] = [], signedBytes: [UInt8] = []) {
        self.format = Self.currentFormat
        self.version = version
        self.threshold = threshold
        self.keys = keys
        self.revoked = revoked
        self.expires = expires
        self.channelName = channelName
        self.roots = roots
        self.signatures = signatures
        self.signedBytes = signedBytes
    }

    /// True when `name` may name a channel: 1 to ``maximumChannelNameLength`` letters, digits, `.`, `_` or `-`.
    public static func isValidChannelName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= maximumChannelNameLength
            && name.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0)) }
    }

    /// The listed channel key with `keyID`, if any.
    public func key(_ keyID: String) -> Key? { keys.first { $0.publicKey.keyID == keyID } }

    /// True when root removed the key `keyID`.
    public func isRevoked(_ keyID: String) -> Bool { revoked.contains { $0.keyID == keyID } }

    /// True when at least ``threshold`` distinct keys of `rootKeys` signed ``signedBytes``.
    public func isSigned(byRootKeys rootKeys: [ChannelPublicKey]) -> Bool {
        signerCount(among: rootKeys) >= threshold
    }

    /// How many distinct keys of `rootKeys` signed ``signedBytes``.
    public func signerCount(among rootKeys: [ChannelPublicKey]) -> Int {
        let message = Data(signedBytes)
        var signers = Set<String>()
        for root in rootKeys {
            let id = root.keyID
            if signatures.contains(where: { $0.keyID == id && root.isValidSignature($0.signature, for: message) }) { signers.insert(id) }
        }
        return signers.count
    }

    /// Checks and decodes the bytes of a keys file (its signatures are checked apart, with
    /// ``isSigned(byRootKeys:)``); `source` names the file in errors.
    ///
    /// - Throws: ``ReseedError`` ``ReseedError/Code/invalidManifest`` (step ``ReseedError/Step/checkKeys``)
    ///   naming the file and the field: JSON that does not parse, a field missing, mistyped or out of
    ///   range, a key listed twice, or listed and removed; ``ReseedError/Code/channelRefused`` for a
    ///   format newer than ``currentFormat``.
    public static func decode(_ bytes: [UInt8], source: String) throws(ReseedError) -> ChannelKeys {
        let top = try ManifestFields.signedFile(bytes, maxDepth: 8, path: source, step: .checkKeys, what: fileName, fileName: fileName)
        let signedNode = try top.node("signed")
        guard case .object = signedNode.value else { throw top.invalid("signed", "expected an object, found \(signedNode.kindName)") }
        let signed = ManifestFields(root: signedNode, path: source, step: .checkKeys, prefix: "signed.")
        let kind = try signed.string("type")
        guard kind == type else { throw signed.invalid("type", "\(JSONNode.quote(kind)), not \(JSONNode.quote(type))") }
        let format = try signed.integer("format", in: 1...Int64(Int32.max))
        guard format <= Int64(currentFormat) else {
            throw ReseedError(.channelRefused, step: .checkKeys, path: source, field: "signed.format",
                              message: "\(fileName) is in format \(format); this Reseed reads format \(currentFormat): update the app")
        }
        let version = try signed.integer("version", in: 1...Int64(Int32.max))
        let threshold = try signed.integer("threshold", in: 1...Int64(maximumSignatures))
        var seen = Set<String>()
        let keys = try elements(of: signed, "keys", at: maximumKeys) { entry throws(ReseedError) in
            let key = try publicKey(entry, seen: &seen)
            return Key(publicKey: key, expires: try entry.date("expires"))
        }
        let revoked = try elements(of: signed, "revoked", at: maximumRevoked) { entry throws(ReseedError) in
            try publicKey(entry, seen: &seen)
        }
        let expires = signedNode["expires"] == nil ? nil : try signed.date("expires")
        var channelName: String?
        if signedNode["channel"] != nil {
            let name = try signed.string("channel")
            guard isValidChannelName(name) else {
                throw signed.invalid("channel", "\(JSONNode.quote(name)) is not a channel name (1-\(maximumChannelNameLength) letters, digits, '.', '_' or '-')")
            }
            channelName = name
        }
        var seenRoots = Set<String>()
        let roots = signedNode["roots"] == nil ? [] : try elements(of: signed, "roots", at: maximumSignatures) { entry throws(ReseedError) in
            try publicKey(entry, seen: &seenRoots)
        }
        guard roots.isEmpty || Int(threshold) <= roots.count else {
            throw signed.invalid("threshold", "\(threshold) root signatures, but the file lists \(roots.count) roots")
        }
        let signatures = try elements(of: top, "signatures", at: maximumSignatures) { entry throws(ReseedError) in
            let keyID = try entry.string("keyid")
            guard SeedManifest.isSHA256(keyID) else { throw entry.invalid("keyid", "a key id is 64 lowercase hex digits") }
            let text = try entry.string("sig")
            guard let signature = Data(base64Encoded: text), signature.count == 64 else {
                throw entry.invalid("sig", "not the base64 of a 64-byte Ed25519 signature")
            }
            return Signature(keyID: keyID, signature: signature)
        }
        var decoded = ChannelKeys(version: version, threshold: Int(threshold), keys: keys, revoked: revoked, expires: expires,
                                  channelName: channelName, roots: roots, signatures: signatures, signedBytes: Array(bytes[signedNode.range]))
        decoded.format = Int(format)
        decoded.sha256 = SHA256.hash(data: bytes).hexString
        return decoded
    }

    /// The key of an entry `{"keyid", "publicKey"}`; its id must match it and not be seen before.
    private static func publicKey(_ entry: ManifestFields, seen: inout Set<String>) throws(ReseedError) -> ChannelPublicKey {
        let keyID = try entry.string("keyid")
        let text = try entry.string("publicKey")
        let key: ChannelPublicKey
        do {
            key = try ChannelPublicKey(base64: text)
        } catch {
            throw entry.invalid("publicKey", "not the base64 of a 32-byte Ed25519 public key")
        }
        guard key.keyID == keyID else { throw entry.invalid("keyid", "not the id of the key in \"publicKey\" (\(key.keyID))") }
        guard seen.insert(keyID).inserted else { throw entry.invalid("keyid", "the key \(keyID) is listed twice") }
        return key
    }

    /// The entries of the array `name` of `fields` (each an object), at most `limit`; a failure
    /// names the field with the entry's place: `signed.keys[0].expires`.
    private static func elements<Element>(
        of fields: ManifestFields, _ name: String, at limit: Int, _ read: (ManifestFields) throws(ReseedError) -> Element
    ) throws(ReseedError) -> [Element] {
        let node = try fields.node(name)
        guard case .array(let items) = node.value else { throw fields.invalid(name, "expected an array, found \(node.kindName)") }
        guard items.count <= limit else { throw fields.invalid(name, "\(items.count) entries; at most \(limit)") }
        var result: [Element] = []
        for (index, item) in items.enumerated() {
            let field = "\(name)[\(index)]"
            guard case .object = item.value else { throw fields.invalid(field, "expected an object, found \(item.kindName)") }
            result.append(try read(ManifestFields(root: item, path: fields.path, step: fields.step, prefix: fields.prefix + field + ".")))
        }
        return result
    }
}
