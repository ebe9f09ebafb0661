import Crypto
import Foundation
import ReseedSystem

/// The key an app checks its channel with: an Ed25519 public key. The app pins one or more as
/// root keys; a channel's `keys.json` lists channel keys (see ``ChannelKeys``).
///
/// Key files (`reseed keygen`) hold one line: the base64 of the key's 32-byte raw
/// representation, then a newline. The same text can be compiled into the app.
///
/// ```swift
/// let key = try ChannelPublicKey(base64: "q8f1yR7n0TkM4gO1QbqR3y2Gv2p3sTq6f9p2k8W0a1E=")
/// ```
public struct ChannelPublicKey: Sendable, Hashable {
    /// The 32-byte raw representation; swift-crypto's key types are not `Sendable` on every platform.
    let raw: Data

    package init(raw: Data) {
        self.raw = raw
    }

    /// A key from its base64 text; whitespace around it is ignored.
    ///
    /// - Throws: ``ReseedError`` ``ReseedError/Code/invalidArgument`` (step `readKey`) when the
    ///   text is not the base64 of 32 bytes.
    public init(base64: String) throws(ReseedError) {
        try self.init(base64: base64, source: nil)
    }

    /// A key from its base64 text; `source`, the key file, is the path errors name.
    private init(base64: String, source: String?) throws(ReseedError) {
        let raw = try ChannelKeyFile.decode(base64, source: source)
        do {
            self.raw = try Curve25519.Signing.PublicKey(rawRepresentation: raw).rawRepresentation
        } catch {
            throw ReseedError(.invalidArgument, step: .readKey, path: source, message: "not an Ed25519 public key",
                              advice: ChannelKeyFile.advice)
        }
    }

    /// Reads a public key file written by `reseed keygen`.
    ///
    /// - Throws: ``ReseedError`` (step `readKey`) naming the file.
    public init(contentsOf url: URL) throws(ReseedError) {
        try self.init(base64: try ChannelKeyFile.read(url), source: url.path)
    }

    /// The key as one line of base64, as in a key file.
    public var base64: String { raw.base64EncodedString() }

    /// The key's id in `keys.json` and in the preferences: the lowercase hex SHA-256 of its 32 raw bytes.
    public var keyID: String { SHA256.hash(data: raw).hexString }

    /// True when `signature` (64 bytes) is this key's Ed25519 signature of `message`.
    public func isValidSignature(_ signature: Data, for message: Data) -> Bool {
        guard signature.count == 64, let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw) else { return false }
        return key.isValidSignature(signature, for: message)
    }
}

/// The key file format: one line of base64 of the raw key.
package enum ChannelKeyFile {
    /// Key files are tiny; anything larger is not one.
    package static let maximumSize = 1024
    /// What to do about a file that is not a key.
    package static let advice = "give the file reseed keygen wrote"

    static func read(_ url: URL) throws(ReseedError) -> String {
        let bytes = try readSmallFile(url, limit: maximumSize, step: .readKey) { size in
            ReseedError(.invalidArgument, step: .readKey, path: url.path, message: "not a key file: a key file is one short line; this one is \(size) bytes",
                        advice: advice)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The 32 raw bytes of a key from its base64 line; `source`, the key file, is the path errors name.
    package static func decode(_ text: String, source: String?) throws(ReseedError) -> Data {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let raw = Data(base64Encoded: trimmed), raw.count == 32 else {
            throw ReseedError(.invalidArgument, step: .readKey, path: source,
                              message: "not a key: expected one line of base64 of a 32-byte Ed25519 key", advice: advice)
        }
        return raw
    }
}
