import Crypto
import Foundation
import Reseed
import ReseedSystem

/// Adds and removes the channel keys a channel's `keys.json` lists, signed by a root key (`reseed keys`).
///
/// Each change makes a new `keys.json` one version higher, signed by ``rootKey``, and writes it
/// durably (temp file, fsync, rename, folder fsync) under the lock `reseed publish` takes: a run
/// killed at any moment leaves the old file or the new one. A removed key is listed under
/// `revoked`: apps refuse what it signs, and a release it signed that a device installed loses its
/// standing (the next release signed by a valid key installs even if its version is lower). A
/// removed key is never listed again.
///
/// Every write also signs the file's own `expires` (``expires``, default a year from now: a run
/// with no change re-signs it and changes nothing else), the channel's name (``channelName``: set
/// once, changed only with ``renamesChannel``), and, with ``rootRotation``, the new root keys and
/// threshold, signed by the old roots and the new ones (``additionalRootKeys``).
///
/// ```swift
/// let editor = ChannelKeysEditor(channel: URL(filePath: "site/triage"), rootKey: try ChannelPrivateKey(contentsOf: rootFile))
/// let keys = try editor.apply([.add(try ChannelPublicKey(contentsOf: channelPub), expires: .now.addingTimeInterval(365 * 86_400))])
/// print(keys.version)
/// ```
public struct ChannelKeysEditor: Sendable {
    /// A change to the list.
    public enum Change: Sendable {
        /// Lists a channel key until `expires` (a key listed already gets the new expiry).
        case add(ChannelPublicKey, expires: Date)
        /// Removes a listed channel key, and lists it as revoked.
        case remove(ChannelPublicKey)
    }

    /// The channel folder, created when missing.
    public var channel: URL
    /// The root key that signs `keys.json`: its public half is pinned in the app.
    public var rootKey: ChannelPrivateKey
    /// More root keys that sign too, for a threshold above 1 or a root rotation. Default none.
    public var additionalRootKeys: [ChannelPrivateKey] = []
    /// When the written `keys.json` expires. Default nil: a year from the write.
    public var expires: Date?
    /// The channel's name to sign in. Default nil: the current file's name stays.
    public var channelName: String?
    /// Whether ``channelName`` may replace a name the file has already. Default false: apps that
    /// recorded the old name would refuse the channel.
    public var renamesChannel = false
    /// The root signatures a device must find from now on. Default nil: the current file's (1 for a new one).
    public var threshold: Int?
    /// The root keys devices trust from this version on (a rotation), when set: the file lists them,
    /// and is signed by the current roots and by ``threshold`` of these. Default nil: no rotation.
    public var rootRotation: [ChannelPublicKey]?
    /// How long to wait for a publish into the same folder. Default 60 seconds.
    public var lockTimeout: Duration = .seconds(60)
    /// The seam every file action goes through.
    package var fileSystem = FileSystem()

    public init(channel: URL, rootKey: ChannelPrivateKey) {
        self.channel = channel
        self.rootKey = rootKey
    }

    /// Reads a channel key file to add or remove (`reseed keys --add`, `--remove`): a public key file
    /// (`reseed-public-key-ed25519 <base64>`), or a bare base64 line, as `reseed keygen` wrote before it
    /// marked key files, that its group or others may read.
    ///
    /// A bare line only its owner may read is refused: `reseed keygen` made private keys so, and
    /// `keys.json` is read by everyone who reads the channel.
    ///
    /// - Throws: ``PackagingError`` (step ``PackagingError/Step/readKey``) naming the file:
    ///   ``PackagingError/Code/invalidArgument`` when it is a private key file, a bare line only its
    ///   owner may read, not a regular file or not a key; ``PackagingError/Code/io`` when it cannot be read.
    public static func channelKey(contentsOf url: URL) throws(PackagingError) -> ChannelPublicKey {
        let path = url.path
        let file = try packaging(.readKey, path: path) { try ChannelKeyFile.read(url, expecting: .publicKey) }
        if file.kind == nil, file.permissions & 0o077 == 0 {
            throw PackagingError(.invalidArgument, step: .readKey, path: path, message:
                "\(ChannelKeys.fileName) is read by everyone, and this file may be a private key: its line is bare base64, as reseed keygen wrote both kinds before it marked them, and only its owner may read it (mode \(String(file.permissions, radix: 8))), as a private key file",
                advice: "give the public key file reseed keygen wrote (its line starts with \(ChannelKeyFile.Kind.publicKey.rawValue)); if this one is a public key, let others read it: chmod 644 '\(path)'")
        }
        return ChannelPublicKey(raw: file.raw)
    }

    /// Applies `changes` to the folder's `keys.json` (an empty list when there is none), and writes it.
    ///
    /// - Returns: the `keys.json` written.
    /// - Throws: ``PackagingError`` (step ``PackagingError/Step/publish``): ``PackagingError/Code/invalidArgument``
    ///   when the current `keys.json` is not one, or not signed by ``rootKey``, when a removed key is
    ///   added again, when a key to remove is not listed, when one key is both added and removed, when a key to
    ///   add or remove is in fact the private key of the root key or of a listed or removed key (its bytes would
    ///   be published), or when the list would pass ``ChannelKeys/maximumKeys``;
    ///   ``PackagingError/Code/io``; ``PackagingError/Code/busy`` past ``lockTimeout``. The file is then as it was.
    @discardableResult
    public func apply(_ changes: [Change]) throws(PackagingError) -> ChannelKeys {
        let (directory, lock) = try ChannelPublisher.lock(channel, fileSystem: fileSystem, timeout: lockTimeout)
        defer { lock.release() }
        let path = directory.path(ChannelKeys.fileName)
        // What a run killed while writing left.
        _ = try packaging(.publish, path: path) { try directory.removeTemporaryFiles { StoreLayout.isTemporary($0, of: ChannelKeys.fileName) } }
        var keys = ChannelKeys(version: 0, keys: [], revoked: [])
        let signing = [rootKey] + additionalRootKeys
        if let current = try ChannelPublisher.readKeys(in: directory, step: .publish) {
            guard current.signerCount(among: signing.map(\.publicKey)) > 0 else {
                throw PackagingError(.invalidArgument, step: .publish, path: path, message:
                    "\(ChannelKeys.fileName) is not signed by this root key (\(rootKey.publicKey.keyID.prefix(16))); it was changed, or another root key signed it",
                    advice: "give the root key whose public key the app pins")
            }
            keys = current
        }
        try checkPublicKeys(changes, against: keys, path: path)
        for change in changes {
            switch change {
            case .add(let key, let expires):
                guard !keys.isRevoked(key.keyID) else {
                    throw PackagingError(.invalidArgument, step: .publish, path: path, message:
                        "the channel key \(key.keyID.prefix(16)) was removed; a removed key is never listed again", advice: "make a new key with reseed keygen")
                }
                keys.keys.removeAll { $0.publicKey == key }
                keys.keys.append(ChannelKeys.Key(publicKey: key, expires: expires))
            case .remove(let key):
                guard keys.key(key.keyID) != nil else {
                    throw PackagingError(.invalidArgument, step: .publish, path: path, message:
                        "\(ChannelKeys.fileName) does not list the channel key \(key.keyID.prefix(16))" + (keys.isRevoked(key.keyID) ? "; it was removed already" : ""))
                }
                keys.keys.removeAll { $0.publicKey == key }
                keys.revoked.append(key)
            }
        }
        guard keys.keys.count <= ChannelKeys.maximumKeys, keys.revoked.count <= ChannelKeys.maximumRevoked else {
            throw PackagingError(.invalidArgument, step: .publish, path: path, message:
                "\(ChannelKeys.fileName) would list \(keys.keys.count) keys and \(keys.revoked.count) removed ones; at most \(ChannelKeys.maximumKeys) and \(ChannelKeys.maximumRevoked)")
        }
        try rename(&keys, path: path)
        keys.version += 1
        keys.threshold = threshold ?? keys.threshold
        if let rootRotation { keys.roots = rootRotation }
        let roots = keys.roots.isEmpty ? signing.map(\.publicKey) : keys.roots
        guard (1...max(1, roots.count)).contains(keys.threshold), keys.threshold <= ChannelKeys.maximumSignatures else {
            throw PackagingError(.invalidArgument, step: .publish, path: path, message:
                "a threshold of \(keys.threshold) root signatures cannot be met by the \(roots.count) root keys \(keys.roots.isEmpty ? "given" : "listed")")
        }
        keys.expires = expires ?? Date().addingTimeInterval(365 * 86_400)
        let signed = keys.encodedSigned()
        keys.signedBytes = Array(signed.utf8)
        var signatures: [ChannelKeys.Signature] = []
        for key in signing where !signatures.contains(where: { $0.keyID == key.publicKey.keyID }) {
            signatures.append(ChannelKeys.Signature(keyID: key.publicKey.keyID, signature: try key.signature(for: Data(keys.signedBytes))))
        }
        keys.signatures = signatures
        let bytes = Array(keys.encoded(signed: signed).utf8)
        try packaging(.publish, path: path) {
            try directory.replaceAtomically(ChannelKeys.fileName, with: bytes, through: StoreLayout.temporaryName(of: ChannelKeys.fileName))
        }
        return keys
    }
}

extension ChannelKeysEditor {
    /// Sets ``channelName`` in `keys`, refusing to replace another name unless ``renamesChannel``.
    private func rename(_ keys: inout ChannelKeys, path: String) throws(PackagingError) {
        guard let channelName, channelName != keys.channelName else { return }
        guard ChannelKeys.isValidChannelName(channelName) else {
            throw PackagingError(.invalidArgument, step: .publish, path: path, message:
                "'\(channelName)' is not a channel name: 1-\(ChannelKeys.maximumChannelNameLength) letters, digits, '.', '_' or '-'")
        }
        if let current = keys.channelName, !renamesChannel {
            throw PackagingError(.invalidArgument, step: .publish, path: path, message:
                "\(ChannelKeys.fileName) names the channel '\(current)'; apps that verified that name refuse another one, so nothing was written",
                advice: "give --rename-channel to rename it anyway")
        }
        keys.channelName = channelName
    }

    /// Refuses a key both added and removed, and a key that is the private half of a key this
    /// channel knows (the root key, a listed or a removed channel key): a bare base64 line cannot say
    /// which kind it holds, but a private key is recognised by the public key it derives.
    private func checkPublicKeys(_ changes: [Change], against keys: ChannelKeys, path: String) throws(PackagingError) {
        let known = [("the root key", rootKey.publicKey)] + keys.keys.map { ("the channel key", $0.publicKey) } + keys.revoked.map { ("the removed channel key", $0) }
        var added: Set<String> = [], removed: Set<String> = []
        for change in changes {
            let key: ChannelPublicKey
            switch change {
            case .add(let new, _): key = new; added.insert(new.keyID)
            case .remove(let old): key = old; removed.insert(old.keyID)
            }
            if let bytes = Data(base64Encoded: key.base64),
               let derived = try? Curve25519.Signing.PrivateKey(rawRepresentation: bytes).publicKey.rawRepresentation.base64EncodedString(),
               let (role, match) = known.first(where: { $0.1.base64 == derived }) {
                throw PackagingError(.invalidArgument, step: .publish, path: path, message:
                    "the key to \(added.contains(key.keyID) ? "add" : "remove") (\(key.keyID.prefix(16))) is the private key of \(role) \(match.keyID.prefix(16)), and \(ChannelKeys.fileName) is read by everyone; nothing was written",
                    advice: "give the public key file reseed keygen wrote beside it")
            }
        }
        if let both = added.intersection(removed).sorted().first {
            throw PackagingError(.invalidArgument, step: .publish, path: path, message:
                "the channel key \(both.prefix(16)) is both added and removed in one run; nothing was written",
                advice: "give it to --add or to --remove, not both")
        }
    }
}

extension ChannelKeys {
    /// The `signed` object's text: fixed member order, one key a line.
    func encodedSigned() -> String {
        let listed = keys.map { key in
            "      {\"keyid\": \(JSONNode.quote(key.publicKey.keyID)), \"publicKey\": \(JSONNode.quote(key.publicKey.base64)), \"expires\": \(JSONNode.quote(RFC3339.string(key.expires)))}"
        }
        let removed = revoked.map { key in
            "      {\"keyid\": \(JSONNode.quote(key.keyID)), \"publicKey\": \(JSONNode.quote(key.base64))}"
        }
        func array(_ lines: [String]) -> String { lines.isEmpty ? "[]" : "[\n" + lines.joined(separator: ",\n") + "\n    ]" }
        var head = "{\"type\": \(JSONNode.quote(Self.type)), \"format\": \(Self.currentFormat), \"version\": \(version), \"threshold\": \(threshold)"
        if let expires { head += ", \"expires\": \(JSONNode.quote(RFC3339.string(expires)))" }
        if let channelName { head += ", \"channel\": \(JSONNode.quote(channelName))" }
        if !roots.isEmpty {
            let lines = roots.map { "      {\"keyid\": \(JSONNode.quote($0.keyID)), \"publicKey\": \(JSONNode.quote($0.base64))}" }
            head += ",\n    \"roots\": \(array(lines))"
        }
        return head + ",\n    \"keys\": \(array(listed)),\n    \"revoked\": \(array(removed))}"
    }

    /// The whole file around the `signed` text its signatures cover.
    func encoded(signed: String) -> String {
        let lines = signatures.map { "    {\"keyid\": \(JSONNode.quote($0.keyID)), \"sig\": \(JSONNode.quote($0.signature.base64EncodedString()))}" }
        return "{\n  \"signed\": \(signed),\n  \"signatures\": [\n" + lines.joined(separator: ",\n") + "\n  ]\n}\n"
    }
}
