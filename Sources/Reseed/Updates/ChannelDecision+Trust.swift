import Foundation

extension ChannelDecision {
    /// After a `304`, the refusal of the manifest it stands for when `keys` (fetched again) removes its
    /// signer, lets it expire or no longer lists it; nil while the signer keeps its standing.
    static func notModifiedSigner(_ signer: String, _ keys: ChannelKeys, _ found: Found) -> ReseedError? {
        let url = found.manifestURL
        let key = signer.prefix(16)
        if keys.isRevoked(signer) {
            return ReseedError(.channelKeyRevoked, step: .checkSignature, url: url, message:
                "the channel answered 304 Not Modified for a \(ChannelManifest.fileName) signed by the channel key \(key), which the channel's root removed (\(ChannelKeys.fileName) version \(keys.version)); refusing to call it up to date")
        }
        guard let listed = keys.key(signer) else {
            return ReseedError(.signature, step: .checkSignature, url: url, message:
                "the channel answered 304 Not Modified for a \(ChannelManifest.fileName) signed by the channel key \(key), which \(ChannelKeys.fileName) version \(keys.version) no longer lists; refusing to call it up to date")
        }
        if ChannelTrust.hasPassed(listed.expires, now: found.now, allowance: found.clockSkew) {
            return ReseedError(.channelKeyExpired, step: .checkSignature, url: url, message:
                "the channel answered 304 Not Modified for a \(ChannelManifest.fileName) signed by the channel key \(key), which expired at \(RFC3339.string(listed.expires)); refusing to call it up to date")
        }
        return nil
    }

    /// The refusal of a manifest issued in the device's future (beyond the clock skew), or valid for
    /// longer than ``Found/maximumValidity`` from its `issued` (or, without one, from now).
    static func validity(_ manifest: ChannelManifest, _ found: Found) -> ReseedError? {
        let url = found.manifestURL
        if let issued = manifest.issued, issued.timeIntervalSince(found.now) > found.clockSkew.inSeconds {
            return ReseedError(.channelRefused, step: .checkManifest, url: url, message:
                "the channel's \(ChannelManifest.fileName) was issued at \(RFC3339.string(issued)), after this device's time \(RFC3339.string(found.now)) and its clock skew; refusing a manifest that is not valid yet")
        }
        guard let expires = manifest.expires else { return nil }
        let days = Int(found.maximumValidity.inSeconds / 86_400)
        if let issued = manifest.issued {
            guard expires.timeIntervalSince(issued) > found.maximumValidity.inSeconds else { return nil }
            return ReseedError(.channelRefused, step: .checkManifest, url: url, message:
                "the channel's \(ChannelManifest.fileName) is valid from \(RFC3339.string(issued)) to \(RFC3339.string(expires)), longer than the \(days) days this app accepts; refusing a manifest its signer made to outlive them")
        }
        guard expires.timeIntervalSince(found.now) > found.maximumValidity.inSeconds + found.clockSkew.inSeconds else { return nil }
        return ReseedError(.channelRefused, step: .checkManifest, url: url, message:
            "the channel's \(ChannelManifest.fileName) expires at \(RFC3339.string(expires)), more than the \(days) days this app accepts from now; refusing a manifest its signer made to outlive them")
    }

    /// The refusal of a manifest of a lower format than one verified before, or whose `keys.json` is not
    /// the one it names (a stale copy, other bytes, none at all), or that names none from format 3 on.
    static func bindingRefusal(_ manifest: ChannelManifest, _ found: Found) -> ReseedError? {
        let url = found.manifestURL
        if let floor = found.floors.manifestFormat, manifest.format < floor {
            return ReseedError(.channelRefused, step: .checkManifest, url: url, message:
                "the channel's \(ChannelManifest.fileName) is in format \(manifest.format), below format \(floor) this device verified from the channel before; refusing a manifest without what that format checks")
        }
        guard let keys = found.keys else {
            guard let bound = manifest.keys else { return nil }
            return ReseedError(.channelRefused, step: .checkManifest, url: url, message:
                "the channel's \(ChannelManifest.fileName) was published under \(ChannelKeys.fileName) version \(bound.version), but the channel serves none; refusing a channel stripped of its keys")
        }
        guard let bound = manifest.keys else {
            guard manifest.format >= 3 else { return nil }
            return ReseedError(.invalidManifest, step: .checkManifest, field: "keys", url: url, message:
                "field \"keys\": missing; a format-\(manifest.format) \(ChannelManifest.fileName) names the \(ChannelKeys.fileName) it was published under")
        }
        if keys.version < bound.version {
            return ReseedError(.channelRefused, step: .checkKeys, url: url, message:
                "the channel serves \(ChannelKeys.fileName) version \(keys.version), older than version \(bound.version) its \(ChannelManifest.fileName) was published under: a stale copy; refusing until the host serves the keys the manifest names")
        }
        if keys.version == bound.version, keys.sha256 != bound.sha256 {
            return ReseedError(.channelRefused, step: .checkKeys, url: url, message:
                "the channel's \(ChannelKeys.fileName) version \(keys.version) has SHA-256 \(keys.sha256.prefix(16)), not \(bound.sha256.prefix(16)) as its \(ChannelManifest.fileName) says; refusing files that were not published together")
        }
        if let named = keys.channelName, manifest.channel != named {
            return ReseedError(.channelRefused, step: .checkManifest, url: url, message:
                "the channel's \(ChannelManifest.fileName) \(manifest.channel.map { "names the channel '\($0)'" } ?? "names no channel"), but its \(ChannelKeys.fileName) names it '\(named)'; refusing a manifest of another channel")
        }
        return nil
    }

    /// The refusal of a channel whose name (`offered`, as `file` states it) is not the one the app pins,
    /// or not the one this device first verified there; nil when it is, or nothing is expected.
    static func nameRefusal(_ offered: String?, in file: String, pinned: String?, recorded: String?, url: URL) -> ReseedError? {
        guard let expected = pinned ?? recorded, offered != expected else { return nil }
        let named = offered.map { "is named '\($0)'" } ?? "has no name"
        let reason = pinned != nil ? "this app pins the channel '\(expected)'" : "this device verified the channel '\(expected)' there before and takes no other"
        return ReseedError(.channelRefused, step: file == ChannelKeys.fileName ? .checkKeys : .checkManifest, url: url, message:
            "the channel's \(file) \(named); \(reason)")
    }
}

extension ChannelFloors {
    /// These floors raised by what one check verified: the `keys.json` always (it verified on its own),
    /// the manifest unless the decision refused it.
    func raised(verifying offer: ChannelOffer, decision: ChannelDecision) -> ChannelFloors {
        var floors = self
        let keys = offer.trust?.keys
        if let keys { floors = floors.raised(by: keys) }
        if let signed = offer.manifest, !decision.isRefused { floors = floors.raised(by: signed.manifest, signer: signed.signer, keys: keys) }
        return floors
    }
}
