import Foundation
import Reseed
import ReseedSystem

extension ChannelPublisher {
    /// The channel folder, created when missing, and its publish lock `.channel.reseed-lock`, which
    /// `reseed publish` and `reseed keys` both take.
    static func lock(_ channel: URL, fileSystem: FileSystem, timeout: Duration) throws(PackagingError) -> (Directory, StoreLock) {
        let directory = try packaging(.publish, path: channel.path) { try fileSystem.openDirectory(channel, create: true) }
        let lockName = ".channel.reseed-lock"
        guard let lock = try packaging(.publish, path: directory.path(lockName), { try StoreLock.acquire(lockName, in: directory, timeout: timeout) }) else {
            throw PackagingError(.busy, step: .publish, path: directory.path(lockName), message: "another publish into this channel is running (waited \(timeout))",
                                 advice: "try again once the other publish has finished")
        }
        return (directory, lock)
    }

    /// The folder's `keys.json`, decoded; nil when there is none.
    static func readKeys(in directory: Directory, step: PackagingError.Step) throws(PackagingError) -> ChannelKeys? {
        let path = directory.path(ChannelKeys.fileName)
        guard try packaging(step, path: path, { try directory.status(ChannelKeys.fileName) }) != nil else { return nil }
        let bytes = try packaging(step, path: path) {
            try FileSystem.openRegularFile(path).read(count: ChannelKeys.maximumFileSize + 1, at: 0)
        }
        guard bytes.count <= ChannelKeys.maximumFileSize else {
            throw PackagingError(.invalidArgument, step: step, path: path, message: "\(ChannelKeys.fileName) is over \(ChannelKeys.maximumFileSize) bytes")
        }
        return try packaging(step, path: path) { try ChannelKeys.decode(bytes, source: path) }
    }

    /// When the folder has a `keys.json`, checks that it lists the signing key, unexpired at `now`,
    /// and returns it (its channel keys' signatures of the current manifest a publish keeps for a moment;
    /// its version, SHA-256 and name go into the new manifest).
    func checkListed(in directory: Directory, at now: Date) throws(PackagingError) -> ChannelKeys? {
        guard let keys = try Self.readKeys(in: directory, step: .publish) else { return nil }
        let id = privateKey.publicKey.keyID
        let path = directory.path(ChannelKeys.fileName)
        guard let listed = keys.key(id) else {
            throw PackagingError(.invalidArgument, step: .publish, path: path, message:
                "\(ChannelKeys.fileName) (version \(keys.version)) does not list this private key's public key (\(id.prefix(16))), so apps would refuse what it signs",
                advice: "sign with a listed channel key, or add this one with reseed keys --add")
        }
        guard listed.expires > now else {
            throw PackagingError(.invalidArgument, step: .publish, path: path, message:
                "this private key's channel key (\(id.prefix(16))) expired at \(RFC3339.string(listed.expires)) in \(ChannelKeys.fileName) (version \(keys.version))",
                advice: "extend it with reseed keys --add and a new --valid-for, or sign with another listed key")
        }
        if let expires = keys.expires, expires <= now {
            throw PackagingError(.invalidArgument, step: .publish, path: path, message:
                "\(ChannelKeys.fileName) (version \(keys.version)) expired at \(RFC3339.string(expires)), so apps would refuse the channel",
                advice: "re-sign it with reseed keys --valid-for")
        }
        return keys
    }

    /// The lines of the current `channel.json.sig` that are a signature of the current `channel.json` by one
    /// of `keys` (all of its lines, at most three, when none is); none when either file is missing.
    func previousSignatureLines(in directory: Directory, verifiedBy keys: [ChannelPublicKey]) -> [String] {
        func read(_ name: String, limit: Int) -> [UInt8]? {
            guard let bytes = try? FileSystem.openRegularFile(directory.path(name)).read(count: limit + 1, at: 0), bytes.count <= limit else { return nil }
            return bytes
        }
        guard let manifest = read(ChannelManifest.fileName, limit: ChannelManifest.maximumFileSize),
              let signature = read(ChannelManifest.signatureFileName, limit: 1024) else { return [] }
        let lines = String(decoding: signature, as: UTF8.self).split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { Data(base64Encoded: $0)?.count == 64 }.prefix(3)
        let verified = lines.filter { line in
            guard let raw = Data(base64Encoded: line) else { return false }
            return keys.contains { $0.isValidSignature(raw, for: Data(manifest)) }
        }
        return (verified.isEmpty ? Array(lines) : verified).map { $0 + "\n" }
    }
}
