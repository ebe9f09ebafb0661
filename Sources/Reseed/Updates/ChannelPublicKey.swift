import Crypto
import Foundation
import ReseedSystem
import SystemPackage

/// The key an app checks its channel with: an Ed25519 public key. The app pins one or more as
/// root keys; a channel's `keys.json` lists channel keys (see ``ChannelKeys``).
///
/// A key file (`reseed keygen`) holds one line that says which kind of key it is, then the
/// base64 of the key's 32-byte raw representation: `reseed-public-key-ed25519 q8f1…=` for a
/// public key, `reseed-private-key-ed25519 …` for a private one. A bare base64 line, as files
/// written before the kinds were marked hold, is still read. The public key's line, or its
/// base64 alone, can be compiled into the app.
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

    /// A key from its base64 text, or from a public key file's line (`reseed-public-key-ed25519 <base64>`);
    /// whitespace around it is ignored.
    ///
    /// - Throws: ``ReseedError`` ``ReseedError/Code/invalidArgument`` (step `readKey`) when the
    ///   text is not the base64 of 32 bytes, or is a private key's line (`reseed-private-key-ed25519 …`):
    ///   a private key never belongs in an app.
    public init(base64: String) throws(ReseedError) {
        try self.init(base64: base64, source: nil)
    }

    /// A key from its text; `source`, the key file, is the path errors name.
    private init(base64: String, source: String?) throws(ReseedError) {
        try self.init(validating: try ChannelKeyFile.decode(base64, source: source, expecting: .publicKey).raw, source: source)
    }

    /// A key from its 32 raw bytes, refused when they are not an Ed25519 public key.
    private init(validating raw: Data, source: String?) throws(ReseedError) {
        do {
            self.raw = try Curve25519.Signing.PublicKey(rawRepresentation: raw).rawRepresentation
        } catch {
            throw ReseedError(.invalidArgument, step: .readKey, path: source, message: "not an Ed25519 public key",
                              advice: ChannelKeyFile.advice)
        }
    }

    /// Reads a public key file written by `reseed keygen` (marked or bare).
    ///
    /// - Throws: ``ReseedError`` (step `readKey`) naming the file, also when it is a private key file.
    public init(contentsOf url: URL) throws(ReseedError) {
        try self.init(validating: try ChannelKeyFile.read(url, expecting: .publicKey).raw, source: url.path)
    }

    /// The key as base64, without the kind that starts a key file's line.
    public var base64: String { raw.base64EncodedString() }

    /// The key's id in `keys.json` and in the preferences: the lowercase hex SHA-256 of its 32 raw bytes.
    public var keyID: String { SHA256.hash(data: raw).hexString }

    /// True when `signature` (64 bytes) is this key's Ed25519 signature of `message`.
    public func isValidSignature(_ signature: Data, for message: Data) -> Bool {
        guard signature.count == 64, let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw) else { return false }
        return key.isValidSignature(signature, for: message)
    }
}

/// The key file format: one line, the kind's marker and a space, then the base64 of the raw key;
/// or, as files written before the kinds were marked, the base64 alone.
package enum ChannelKeyFile {
    /// Key files are tiny; anything larger is not one.
    static let maximumSize = 1024
    /// What to do about a file that is not a key.
    static let advice = "give the file reseed keygen wrote"

    /// What a key file holds, as its line's first word (the raw value) says.
    package enum Kind: String, Sendable, CaseIterable {
        case privateKey = "reseed-private-key-ed25519"
        case publicKey = "reseed-public-key-ed25519"

        /// A key file's line of this kind for the key's base64, newline included.
        package func line(base64: String) -> String {
            rawValue + " " + base64 + "\n"
        }

        /// The kind in words.
        var name: String { self == .privateKey ? "the private key" : "the public key" }

        /// What is wrong with a file of this kind given where the other kind is expected.
        var misplaced: String {
            switch self {
            case .privateKey:
                "a private key (its line starts with \(rawValue)) where a public key is expected: whoever reads it can sign what every copy of the app installs"
            case .publicKey:
                "a public key (its line starts with \(rawValue)) where a private key is expected"
            }
        }

        /// What to do instead.
        var otherHalfAdvice: String {
            switch self {
            case .privateKey: "give the public key file reseed keygen wrote beside it"
            case .publicKey: "give the private key file reseed keygen wrote beside it"
            }
        }
    }

    /// Reads a key file where a key of kind `expected` is wanted: the kind its line names (nil for a
    /// bare base64 line, which may be either), the key's 32 raw bytes, and the file's permission bits.
    ///
    /// - Throws: ``ReseedError`` (step `readKey`) naming the file: ``ReseedError/Code/io`` when it cannot
    ///   be opened or read; ``ReseedError/Code/invalidArgument`` when it is not a regular file, is not a
    ///   key, or is marked as the other kind.
    package static func read(_ url: URL, expecting expected: Kind) throws(ReseedError) -> (kind: Kind?, raw: Data, permissions: CModeT) {
        let path = url.path
        let file: OwnedDescriptor
        do {
            // O_NONBLOCK: a FIFO must not block the open; it is refused below.
            file = try OwnedDescriptor.open(path, .readOnly, options: .nonBlocking)
        } catch {
            throw ReseedError(.io, step: .readKey, path: path, errno: error, message: "cannot open \(expected.name)")
        }
        let info: FileStatus
        let bytes: [UInt8]
        do {
            info = try file.status()
            guard info.kind == .regular else {
                throw ReseedError(.invalidArgument, step: .readKey, path: path, message: "\(expected.name) is not a regular file", advice: advice)
            }
            bytes = try file.read(count: maximumSize + 1, at: 0)
        } catch let error as Errno {
            throw ReseedError(.io, step: .readKey, path: path, errno: error, message: "cannot read \(expected.name)")
        } catch let error as ReseedError {
            throw error
        } catch {
            throw ReseedError.wrapping(error, step: .readKey, path: path)
        }
        guard bytes.count <= maximumSize else {
            throw ReseedError(.invalidArgument, step: .readKey, path: path, message: "not a key file: a key file is one short line; this one is over \(maximumSize) bytes",
                              advice: advice)
        }
        let line = try decode(String(decoding: bytes, as: UTF8.self), source: path, expecting: expected)
        return (line.kind, line.raw, info.permissions.rawValue & 0o777)
    }

    /// The kind and the 32 raw bytes of a key file's line; `source`, the key file, is the path errors name.
    static func decode(_ text: String, source: String?, expecting expected: Kind) throws(ReseedError) -> (kind: Kind?, raw: Data) {
        let words = text.split(whereSeparator: { $0.isWhitespace })
        let kind = words.count == 2 ? Kind(rawValue: String(words[0])) : nil
        guard words.count == 1 || kind != nil, let raw = words.last.flatMap({ Data(base64Encoded: String($0)) }), raw.count == 32 else {
            throw ReseedError(.invalidArgument, step: .readKey, path: source, message:
                "not a key: expected one line of base64 of a 32-byte Ed25519 key, after \(Kind.publicKey.rawValue) or \(Kind.privateKey.rawValue)",
                advice: advice)
        }
        if let kind, kind != expected {
            throw ReseedError(.invalidArgument, step: .readKey, path: source, message: kind.misplaced, advice: kind.otherHalfAdvice)
        }
        return (kind, raw)
    }
}
