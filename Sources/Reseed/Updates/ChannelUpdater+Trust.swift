import Foundation
import ReseedSystem

/// Which keys may sign a channel's `channel.json`: the unexpired channel keys of a verified
/// `keys.json`, or, for a channel without one (published before channel trust), the pinned keys themselves.
struct ChannelTrust: Sendable {
    /// The channel's `keys.json`, signed by the pinned root keys; nil when the channel has none.
    var keys: ChannelKeys?
    /// The keys the app pins.
    var pinned: [ChannelPublicKey]
    /// The time expiries are compared with.
    var now: Date

    /// The most signature lines read from `channel.json.sig`: a publish writes two for a moment (the
    /// new manifest's and the old one's), so that a publish killed between its renames leaves a pair
    /// that verifies.
    static let maximumSignatureLines = 4

    /// The id of the key whose signature of `manifest` is a line of `signature`, or why there is none.
    func signer(of manifest: [UInt8], signature: [UInt8], url: URL, allowance: Duration) -> Result<String, ReseedError> {
        let lines = String(decoding: signature, as: UTF8.self).split(whereSeparator: \.isNewline)
            .prefix(Self.maximumSignatureLines)
            .compactMap { Data(base64Encoded: $0.trimmingCharacters(in: .whitespaces)) }
        let message = Data(manifest)
        func signs(_ key: ChannelPublicKey) -> Bool { lines.contains { key.isValidSignature($0, for: message) } }

        guard let keys else {
            if let key = pinned.first(where: signs) { return .success(key.keyID) }
            return .failure(ReseedError(.signature, step: .checkSignature, url: url, message:
                "\(ChannelManifest.signatureFileName) is not a signature of \(ChannelManifest.fileName) by the app's public key (read twice): the manifest or its signature was changed, or another key signed it"))
        }
        var expired: ChannelKeys.Key?
        for key in keys.keys where signs(key.publicKey) {
            guard ChannelTrust.hasPassed(key.expires, now: now, allowance: allowance) else { return .success(key.publicKey.keyID) }
            expired = key
        }
        if let expired {
            return .failure(ReseedError(.channelKeyExpired, step: .checkSignature, url: url, message:
                "\(ChannelManifest.fileName) is signed by the channel key \(expired.publicKey.keyID.prefix(16)), which expired at \(RFC3339.string(expired.expires)) (\(ChannelKeys.fileName) version \(keys.version))"))
        }
        if let revoked = keys.revoked.first(where: signs) {
            return .failure(ReseedError(.channelKeyRevoked, step: .checkSignature, url: url, message:
                "\(ChannelManifest.fileName) is signed by the channel key \(revoked.keyID.prefix(16)), which the channel's root removed (\(ChannelKeys.fileName) version \(keys.version)); refusing what it signed"))
        }
        return .failure(ReseedError(.signature, step: .checkSignature, url: url, message:
            "\(ChannelManifest.signatureFileName) is not a signature of \(ChannelManifest.fileName) by a channel key \(ChannelKeys.fileName) lists (read twice): the manifest or its signature was changed, or another key signed it"))
    }

    /// True when `time`, plus `allowance` for a clock that is behind, is before `now`.
    static func hasPassed(_ time: Date, now: Date, allowance: Duration) -> Bool {
        time.addingTimeInterval(allowance.inSeconds) < now
    }
}

extension ChannelUpdater {
    /// Fetches and checks the channel's `keys.json`: at most 64 KiB, signed by the pinned root keys
    /// (as many as its threshold), not older than the highest version `recorded` for this channel.
    /// A channel without one (`404`) is trusted through the pinned keys alone, unless this store has
    /// seen a `keys.json` from it.
    func fetchTrust(recorded: ChannelValidators?) async throws(ReseedError) -> ChannelTrust {
        let url = channelURL.appendingPathComponent(ChannelKeys.fileName)
        let limit = ChannelKeys.maximumFileSize
        let buffer = BodyBuffer(limit: limit, url: url, notModifiedAllowed: false, missingAllowed: true) { size, read in
            ReseedError(.channelRefused, step: .checkKeys, url: url, message: read
                ? "\(ChannelKeys.fileName) is larger than the \(limit)-byte limit; stopped reading after \(size) bytes"
                : "\(ChannelKeys.fileName) is \(size) bytes, more than the \(limit)-byte limit; not read")
        }
        let transfer = configuration.transfer(deadline: configuration.manifestDeadline)
        _ = try await transfer.get(url, headers: [:], step: .fetchManifest,
                                   onResponse: { head throws(ReseedError) in try buffer.begin(head) },
                                   onData: { data throws(ReseedError) in try buffer.append(data) })
        let highest = recorded?.url == channelURL.absoluteString ? recorded?.keysVersion : nil
        let now = configuration.now()
        if buffer.isMissing {
            if let highest {
                throw ReseedError(.channelRefused, step: .checkKeys, url: url, message:
                    "the channel has no \(ChannelKeys.fileName), but this store has seen its version \(highest); refusing a channel stripped of its keys")
            }
            return ChannelTrust(keys: nil, pinned: publicKeys, now: now)
        }
        let keys = try ChannelKeys.decode(buffer.bytes, source: url.absoluteString)
        guard keys.isSigned(byRootKeys: publicKeys) else {
            throw ReseedError(.signature, step: .checkKeys, url: url, message: keys.threshold == 1
                ? "\(ChannelKeys.fileName) is not signed by a root key the app pins: it was changed, or another key signed it"
                : "\(ChannelKeys.fileName) is not signed by \(keys.threshold) root keys the app pins: it was changed, or other keys signed it")
        }
        if let highest, keys.version < highest {
            throw ReseedError(.channelRefused, step: .checkKeys, url: url, message:
                "\(ChannelKeys.fileName) is version \(keys.version), older than version \(highest) this store has seen; refusing a rollback of the channel's keys")
        }
        return ChannelTrust(keys: keys, pinned: publicKeys, now: now)
    }
}
