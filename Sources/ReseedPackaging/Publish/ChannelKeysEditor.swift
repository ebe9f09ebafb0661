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
    /// How long to wait for a publish into the same folder. Default 60 seconds.
    public var lockTimeout: Duration = .seconds(60)
    /// The seam every file action goes through.
    package var fileSystem = FileSystem()

    public init(channel: URL, rootKey: ChannelPrivateKey) {
        self.channel = channel
        self.rootKey = rootKey
    }

    /// Applies `changes` to the folder's `keys.json` (an empty list when there is none), and writes it.
    ///
    /// - Returns: the `keys.json` written.
    /// - Throws: ``PackagingError`` (step ``PackagingError/Step/publish``): ``PackagingError/Code/invalidArgument``
    ///   when the current `keys.json` is not one, or not signed by ``rootKey``, when a removed key is
    ///   added again, when a key to remove is not listed, or when the list would pass ``ChannelKeys/maximumKeys``;
    ///   ``PackagingError/Code/io``; ``PackagingError/Code/busy`` past ``lockTimeout``. The file is then as it was.
    @discardableResult
    public func apply(_ changes: [Change]) throws(PackagingError) -> ChannelKeys {
        let (directory, lock) = try ChannelPublisher.lock(channel, fileSystem: fileSystem, timeout: lockTimeout)
        defer { lock.release() }
        let path = directory.path(ChannelKeys.fileName)
        // What a run killed while writing left.
        try packaging(.publish, path: path) { try directory.removeTemporaryFiles(for: ChannelKeys.fileName) }
        var keys = ChannelKeys(version: 0, keys: [], revoked: [])
        if let current = try ChannelPublisher.readKeys(in: directory, step: .publish) {
            guard current.isSigned(byRootKeys: [rootKey.publicKey]) else {
                throw PackagingError(.invalidArgument, step: .publish, path: path, message:
                    "\(ChannelKeys.fileName) is not signed by this root key (\(rootKey.publicKey.keyID.prefix(16))); it was changed, or another root key signed it",
                    advice: "give the root key whose public key the app pins")
            }
            keys = current
        }
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
        keys.version += 1
        keys.threshold = 1
        let signed = keys.encodedSigned()
        keys.signedBytes = Array(signed.utf8)
        keys.signatures = [ChannelKeys.Signature(keyID: rootKey.publicKey.keyID, signature: try rootKey.signature(for: Data(keys.signedBytes)))]
        let bytes = Array(keys.encoded(signed: signed).utf8)
        try packaging(.publish, path: path) { try directory.replaceAtomically(ChannelKeys.fileName, with: bytes) }
        return keys
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
        return "{\"type\": \(JSONNode.quote(Self.type)), \"format\": \(Self.currentFormat), \"version\": \(version), \"threshold\": \(threshold),\n"
            + "    \"keys\": \(array(listed)),\n    \"revoked\": \(array(removed))}"
    }

    /// The whole file around the `signed` text its signatures cover.
    func encoded(signed: String) -> String {
        let lines = signatures.map { "    {\"keyid\": \(JSONNode.quote($0.keyID)), \"sig\": \(JSONNode.quote($0.signature.base64EncodedString()))}" }
        return "{\n  \"signed\": \(signed),\n  \"signatures\": [\n" + lines.joined(separator: ",\n") + "\n  ]\n}\n"
    }
}
