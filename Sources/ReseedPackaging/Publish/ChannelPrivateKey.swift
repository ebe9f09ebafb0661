import Crypto
import Foundation
import Reseed
import ReseedSystem
import SystemPackage

/// The key a publisher signs a channel's manifest with: an Ed25519 private key. Never ship it in an app.
///
/// ```swift
/// let key = try ChannelPrivateKey.generate(privateKeyFile: keys.appending(path: "channel.key"),
///                                          publicKeyFile: keys.appending(path: "channel.pub"))
/// print(key.publicKey.base64)   // compile this into the app
/// ```
public struct ChannelPrivateKey: Sendable {
    /// The 32-byte raw representation; swift-crypto's key types are not `Sendable` on every platform.
    let raw: Data
    /// The public half, computed once.
    public let publicKey: ChannelPublicKey

    /// A new random key.
    public init() {
        self.init(Curve25519.Signing.PrivateKey())
    }

    private init(_ key: Curve25519.Signing.PrivateKey) {
        raw = key.rawRepresentation
        publicKey = ChannelPublicKey(raw: key.publicKey.rawRepresentation)
    }

    /// Reads a private key file written by `reseed keygen` (`reseed-private-key-ed25519 <base64>`,
    /// or the bare base64 line of older files).
    ///
    /// Like `ssh`, refuses a key file that its group or others may read or write: the key
    /// signs what every copy of the app installs.
    ///
    /// - Throws: ``PackagingError`` (step ``PackagingError/Step/readKey``) naming the file:
    ///   ``PackagingError/Code/invalidArgument`` when it is a public key file, when the file's mode
    ///   lets the group or others read or write it (the message says to `chmod 600` it, or, for a bare
    ///   line, that it may be the public key), when it is not a regular file, or not a key;
    ///   ``PackagingError/Code/io`` when it cannot be read.
    public init(contentsOf url: URL) throws(PackagingError) {
        let raw = try ChannelKeyFile.readPrivate(url)
        do {
            self.init(try Curve25519.Signing.PrivateKey(rawRepresentation: raw))
        } catch {
            throw PackagingError(.invalidArgument, step: .readKey, path: url.path, message: "not an Ed25519 private key",
                                 advice: "give the file reseed keygen wrote")
        }
    }

    /// The Ed25519 signature (64 bytes) of `message`.
    ///
    /// - Throws: ``PackagingError`` (step ``PackagingError/Step/sign``) when the signing library fails.
    public func signature(for message: Data) throws(PackagingError) -> Data {
        do {
            return try Curve25519.Signing.PrivateKey(rawRepresentation: raw).signature(for: message)
        } catch {
            throw PackagingError(.invalidArgument, step: .sign, message: "the signing library cannot sign with this key")
        }
    }

    /// Makes a new key pair and writes it, each file's line marked with its kind
    /// (`reseed-private-key-ed25519 <base64>`, `reseed-public-key-ed25519 <base64>`): the private key file with mode 0600 whatever the
    /// umask, the public one with 0644 less the umask, each written whole to a temporary file
    /// beside it, fsynced, and renamed into place without replacing a file there.
    ///
    /// - Throws: ``PackagingError`` (step ``PackagingError/Step/writeKey``, errno `EEXIST`) when either
    ///   file exists: a key is never overwritten; ``PackagingError/Code/io`` naming the file when one
    ///   cannot be written. Nothing is left behind on failure.
    public static func generate(privateKeyFile: URL, publicKeyFile: URL) throws(PackagingError) -> ChannelPrivateKey {
        for url in [privateKeyFile, publicKeyFile] where (try? FileManager.default.attributesOfItem(atPath: url.path)) != nil {
            throw PackagingError(.io, step: .writeKey, path: url.path, message: "refusing to overwrite an existing key file", errno: .fileExists)
        }
        let key = ChannelPrivateKey()
        let secret = Array(ChannelKeyFile.Kind.privateKey.line(base64: key.raw.base64EncodedString()).utf8)
        try ChannelKeyFile.create(privateKeyFile, contents: secret, permissions: .ownerReadWrite, exactly: true)
        do {
            try ChannelKeyFile.create(publicKeyFile, contents: Array(ChannelKeyFile.Kind.publicKey.line(base64: key.publicKey.base64).utf8),
                                      permissions: .defaultFile, exactly: false)
        } catch {
            if let directory = try? FileSystem().openDirectory(privateKeyFile.deletingLastPathComponent(), create: false) {
                _ = try? directory.remove(privateKeyFile.lastPathComponent)
                try? directory.sync()
            }
            throw error
        }
        return key
    }
}

/// The key files only a publisher writes or reads: the private key, and a new pair's files.
extension ChannelKeyFile {
    /// Reads a private key file, refusing it unless it is a regular file only its owner may read or
    /// write, and not a public key file; returns the key's raw bytes.
    static func readPrivate(_ url: URL) throws(PackagingError) -> Data {
        let path = url.path
        let file = try packaging(.readKey, path: path) { try read(url, expecting: .privateKey) }
        guard file.permissions & 0o077 == 0 else {
            let mode = String(file.permissions, radix: 8)
            guard file.kind == .privateKey else {
                // A bare line that others may read is as likely the public half given by mistake.
                throw PackagingError(.invalidArgument, step: .readKey, path: path, message:
                    "a private key must be readable by its owner only, and this file's mode is \(mode); its line is bare base64, as reseed keygen wrote both kinds before it marked them, so it may be the public key",
                    advice: "if it is the public key, give the private key file reseed keygen wrote beside it; if it is the private key, make it private with: chmod 600 '\(path)'")
            }
            throw PackagingError(.invalidArgument, step: .readKey, path: path, message:
                "the private key file's mode is \(mode): its group or others may read or write it, and whoever reads it can sign what every copy of the app installs",
                advice: "make it private with: chmod 600 '\(path)'")
        }
        return file.raw
    }

    /// Writes `url` durably with `permissions` (less the umask unless `exactly`), never replacing a file
    /// under its name: temp file, fsync, rename without replacing (`EEXIST` if taken), folder fsync.
    static func create(_ url: URL, contents: [UInt8], permissions: FilePermissions, exactly: Bool) throws(PackagingError) {
        try packaging(.writeKey, path: url.path) {
            let directory = try FileSystem().openDirectory(url.deletingLastPathComponent(), create: true)
            // A keygen killed while writing left a hidden temp file that may hold a private key: gone first.
            let name = url.lastPathComponent
            try directory.removeTemporaryFiles { StoreLayout.isTemporary($0, of: name) }
            try directory.writeDurably(name, through: StoreLayout.temporaryName(of: name), permissions: permissions, placement: .noReplace) { file, temporary in
                if exactly {
                    // A umask such as 0277 would leave a key its owner cannot read; set the mode before any byte is written.
                    try directory.fileSystem.reading("fchmod", url.path) { () throws(Errno) in try file.setPermissions(permissions) }
                }
                try directory.write(contents, to: file, name: temporary)
            }
        }
    }
}
