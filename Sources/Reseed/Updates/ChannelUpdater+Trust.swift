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
    /// Fetches and checks the channel's `keys.json`: at most 64 KiB, signed by the roots this device
    /// trusts (``checkRoots(_:floors:url:)``), unexpired, of the channel's name, not older than the
    /// highest version `recorded` or kept in `floors` for this channel. A channel without one (`404`)
    /// is trusted through the pinned keys alone, unless this store has seen a `keys.json` from it.
    func fetchTrust(recorded: ChannelValidators?, floors: ChannelFloors) async throws(ReseedError) -> ChannelTrust {
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
        let preferred = recorded?.url == channelURL.absoluteString ? recorded?.keysVersion : nil
        let highest = [preferred, floors.keysVersion].compactMap { $0 }.max()
        let now = configuration.now()
        if buffer.isMissing {
            if let highest {
                throw ReseedError(.channelRefused, step: .checkKeys, url: url, message:
                    "the channel has no \(ChannelKeys.fileName), but this store has seen its version \(highest); refusing a channel stripped of its keys")
            }
            return ChannelTrust(keys: nil, pinned: publicKeys, now: now)
        }
        let keys = try ChannelKeys.decode(buffer.bytes, source: url.absoluteString)
        try checkRoots(keys, floors: floors, url: url)
        if let highest, keys.version < highest {
            throw ReseedError(.channelRefused, step: .checkKeys, url: url, message:
                "\(ChannelKeys.fileName) is version \(keys.version), older than version \(highest) this store has seen; refusing a rollback of the channel's keys")
        }
        if let expires = keys.expires, ChannelTrust.hasPassed(expires, now: now, allowance: configuration.clockSkew) {
            throw ReseedError(.channelExpired, step: .checkKeys, url: url, message:
                "\(ChannelKeys.fileName) (version \(keys.version)) expired at \(RFC3339.string(expires)); refusing keys the channel's root no longer vouches for")
        }
        if let refusal = ChannelDecision.nameRefusal(keys.channelName, in: ChannelKeys.fileName, pinned: configuration.channelName,
                                                     recorded: floors.channelName, url: url) {
            throw refusal
        }
        return ChannelTrust(keys: keys, pinned: publicKeys, now: now)
    }

    /// Checks that `keys` is signed by the roots this device trusts now: the threshold of the last
    /// verified `keys.json` (at least ``Configuration/minimumThreshold``) of the pinned roots, or of
    /// the roots a verified `keys.json` rotated to. A file that lists other roots (a rotation) must
    /// also be signed by its own threshold of them; one that does not, by its own threshold of the
    /// trusted ones. So one root alone never lowers a threshold.
    func checkRoots(_ keys: ChannelKeys, floors: ChannelFloors, url: URL) throws(ReseedError) {
        let minimum = configuration.minimumThreshold
        guard keys.threshold >= minimum else {
            throw ReseedError(.signature, step: .checkKeys, url: url, message:
                "\(ChannelKeys.fileName) (version \(keys.version)) asks for \(keys.threshold) root signature\(keys.threshold == 1 ? "" : "s"); this app requires at least \(minimum)")
        }
        let trusted = floors.roots.isEmpty ? publicKeys : floors.roots
        let rotating = !keys.roots.isEmpty && Set(keys.roots.map(\.keyID)) != Set(trusted.map(\.keyID))
        let required = max(floors.threshold ?? 1, minimum, rotating ? 1 : keys.threshold)
        let signers = keys.signerCount(among: trusted)
        guard signers >= required else {
            throw ReseedError(.signature, step: .checkKeys, url: url, message: required == 1 && floors.roots.isEmpty
                ? "\(ChannelKeys.fileName) is not signed by a root key the app pins: it was changed, or another key signed it"
                : "\(ChannelKeys.fileName) (version \(keys.version)) is signed by \(signers) of the root keys this device trusts; it needs \(required): it was changed, or fewer roots signed it")
        }
        if rotating, keys.signerCount(among: keys.roots) < keys.threshold {
            throw ReseedError(.signature, step: .checkKeys, url: url, message:
                "\(ChannelKeys.fileName) (version \(keys.version)) moves to new root keys but is not signed by \(keys.threshold) of them; refusing a rotation the new roots did not sign")
        }
    }
}
