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

    /// Reads a private key file written by `reseed keygen` (one line of base64).
    ///
    /// Like `ssh`, refuses a key file that its group or others may read or write: the key
    /// signs what every copy of the app installs.
    ///
    /// - Throws: ``PackagingError`` (step ``PackagingError/Step/readKey``) naming the file:
    ///   ``PackagingError/Code/invalidArgument`` when the file's mode lets the group or others
    ///   read or write it (the message says to `chmod 600` it), when it is not a regular file,
    ///   or not a key; ``PackagingError/Code/io`` when it cannot be read.
    public init(contentsOf url: URL) throws(PackagingError) {
        let text = try ChannelKeyFile.readPrivate(url)
        let raw = try packaging(.readKey, path: url.path) { try ChannelKeyFile.decode(text, source: url.path) }
        do {
            self.init(try Curve25519.Signing.PrivateKey(rawRepresentation: raw))
        } catch {
            throw PackagingError(.invalidArgument, step: .readKey, path: url.path, message: "not an Ed25519 private key",
                                 advice: ChannelKeyFile.advice)
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

    /// Makes a new key pair and writes it: the private key file with mode 0600 whatever the
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
        let secret = Array((key.raw.base64EncodedString() + "\n").utf8)
        try ChannelKeyFile.create(privateKeyFile, contents: secret, permissions: .ownerReadWrite, exactly: true)
        do {
            try ChannelKeyFile.create(publicKeyFile, contents: Array((key.publicKey.base64 + "\n").utf8), permissions: .defaultFile, exactly: false)
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
    /// Reads a private key file, refusing it unless it is a regular file only its owner may read or write.
    static func readPrivate(_ url: URL) throws(PackagingError) -> String {
        let path = url.path
        let file: OwnedDescriptor
        do {
            // O_NONBLOCK: a FIFO must not block the open; it is refused below.
            file = try OwnedDescriptor.open(path, .readOnly, options: .nonBlocking)
        } catch {
            throw PackagingError(.io, step: .readKey, path: path, message: "cannot open the private key", errno: error)
        }
        let info: FileStatus
        do {
            info = try file.status()
        } catch {
            throw PackagingError(.io, step: .readKey, path: path, message: "cannot examine the private key", errno: error)
        }
        guard info.kind == .regular else {
            throw PackagingError(.invalidArgument, step: .readKey, path: path, message: "the private key is not a regular file", advice: ChannelKeyFile.advice)
        }
        let permissions = info.permissions.rawValue & 0o777
        guard permissions & 0o077 == 0 else {
            throw PackagingError(.invalidArgument, step: .readKey, path: path, message:
                "the private key file's mode is \(String(permissions, radix: 8)): its group or others may read or write it, and whoever reads it can sign what every copy of the app installs",
                advice: "make it private with: chmod 600 '\(path)'")
        }
        let bytes: [UInt8]
        do {
            bytes = try file.read(count: maximumSize + 1, at: 0)
        } catch {
            throw PackagingError(.io, step: .readKey, path: path, message: "cannot read the private key", errno: error)
        }
        guard bytes.count <= maximumSize else {
            throw PackagingError(.invalidArgument, step: .readKey, path: path, message: "not a key file: a key file is one short line; this one is over \(maximumSize) bytes",
                                 advice: ChannelKeyFile.advice)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Writes `url` durably with `permissions` (less the umask unless `exactly`), never replacing a file
    /// under its name: temp file, fsync, rename without replacing (`EEXIST` if taken), folder fsync.
    static func create(_ url: URL, contents: [UInt8], permissions: FilePermissions, exactly: Bool) throws(PackagingError) {
        try packaging(.writeKey, path: url.path) {
            let directory = try FileSystem().openDirectory(url.deletingLastPathComponent(), create: true)
            // A keygen killed while writing left a hidden temp file that may hold a private key: gone first.
            try directory.removeTemporaryFiles(for: url.lastPathComponent)
            try directory.writeDurably(url.lastPathComponent, permissions: permissions, placement: .noReplace) { file, temporary in
                if exactly {
                    // A umask such as 0277 would leave a key its owner cannot read; set the mode before any byte is written.
                    try directory.fileSystem.reading("fchmod", url.path) { () throws(Errno) in try file.setPermissions(permissions) }
                }
                try directory.write(contents, to: file, name: temporary)
            }
        }
    }
}
