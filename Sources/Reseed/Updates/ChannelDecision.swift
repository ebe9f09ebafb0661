import Foundation

/// What an update takes of a channel's offer, as a value: decided from the verified manifest (or a
/// `304`) and what the update found of the store, with no I/O.
///
/// ``ChannelUpdater/update()`` fetches and verifies the manifest, decides with ``decide(_:)`` from
/// one ``Found`` value, then acts on the decision: nothing, the delta, the full seed, or the refusal thrown.
///
/// ```swift
/// let decision = ChannelDecision.decide(found)
/// // .full, .delta(…), .upToDate(notModified: false), or .refused(error)
/// ```
enum ChannelDecision: Sendable {
    /// Nothing to install: the channel answered `304 Not Modified` (`notModified`), or it offers
    /// the version the store holds (with nothing installed yet, the bundle's).
    case upToDate(notModified: Bool)
    /// Install the channel's release by applying `delta` to a copy of the installed seed, whose
    /// recorded content hash it starts from; the full seed when the delta cannot be used.
    case delta(ChannelManifest.Delta)
    /// Install the channel's full seed (compressed when the channel offers it).
    case full
    /// Take nothing: the update throws `error`, and the store stays as it is.
    case refused(ReseedError)

    /// Everything the decision is made from: the channel's offer, and what the update found
    /// before deciding.
    struct Found: Sendable {
        /// The store's name.
        var name: String
        /// The manifest whose signature verified; nil when the channel answered `304 Not Modified`.
        var manifest: ChannelManifest?
        /// `channel.json`'s URL, which a refusal names.
        var manifestURL: URL
        /// What the preferences keep of this channel's last check while the store still holds the
        /// version it offered (nil otherwise): what a `304` stands for, who signed that release,
        /// when its manifest expires.
        var recorded: ChannelValidators?
        /// The channel's verified `keys.json`; nil for a channel without one, and after a `304`.
        var keys: ChannelKeys?
        /// The version the store holds (recorded, or the live store's); nil when nothing is installed.
        var installed: String?
        /// The version in the app's bundle: what a launch installs when nothing is installed.
        var bundled: String
        /// The version the store file records in its metadata table, when it is a seed of this store.
        var embedded: String?
        /// The store file's path, which a refusal names.
        var storePath: String
        /// The installed seed's content hash, as its install recorded it.
        var contentHash: String?
        /// The store file is not recorded as installed for the user store, so it may hold the
        /// user's tables: a delta starts from a pure seed only.
        var mayHoldUserTables: Bool
        /// ``ChannelUpdater/Configuration/allowsDowngrade``.
        var allowsDowngrade: Bool
        /// The time expiries are compared with.
        var now: Date
        /// ``ChannelUpdater/Configuration/clockSkew``.
        var clockSkew: Duration
        /// What the device verified of this channel before: nothing below it is taken.
        var floors = ChannelFloors(url: "")
        /// ``ChannelUpdater/Configuration/channelName``.
        var channelName: String?
        /// ``ChannelUpdater/Configuration/maximumValidity``.
        var maximumValidity: Duration = .seconds(90 * 86_400)

        /// The version an offer must be newer than: the installed one, else the bundle's.
        var baseline: String { installed ?? bundled }

        /// The key that signed the installed release, when the channel's root has since removed
        /// it: that release lost its standing, so an offer that is not newer is taken.
        var revokedKeyID: String? {
            guard let signer = recorded?.signedBy, keys?.isRevoked(signer) == true else { return nil }
            return signer
        }

        /// The content hash a delta must start from: the installed seed's, as recorded at its
        /// install (never guessed from its version); nil when nothing is installed.
        var fromContentHash: String? { installed == nil ? nil : contentHash }
    }

    /// Decides what to take of the offer `found` holds.
    ///
    /// Refused, in this order: a manifest (or, after a `304`, the one it stands for) whose
    /// `expires` plus the clock skew has passed; after a `304`, one whose signer `keys.json` now
    /// removes, lets expire or no longer lists; a manifest without `expires` from a channel
    /// with `keys.json`; one issued in the future or valid longer than the maximum validity; one
    /// of a lower format than the device verified before; one whose `keys.json` is not the one it
    /// names; one of another channel's name; a manifest for another store; a version not newer
    /// than the baseline (``SeedVersion``'s order), older than a manifest the device verified
    /// before, or older than the store file's own record, unless downgrades are allowed or root
    /// removed the key that signed the installed release. Up to date: a `304`, or
    /// the baseline offered. Otherwise the delta that starts from the installed seed's content
    /// hash, when the channel states the new one and the store holds no user tables, else the full seed.
    static func decide(_ found: Found) -> ChannelDecision {
        guard let manifest = found.manifest else {
            // A 304 does not make the manifest it stands for any younger.
            if let expires = found.recorded?.expires.flatMap(RFC3339.date), let refusal = expiry(expires, found) { return .refused(refusal) }
            // Nor does it keep a key root removed since in standing.
            if let keys = found.keys, let signer = found.recorded?.signedBy, let refusal = notModifiedSigner(signer, keys, found) { return .refused(refusal) }
            return .upToDate(notModified: true)
        }
        if let expires = manifest.expires {
            if let refusal = expiry(expires, found) { return .refused(refusal) }
        } else if found.keys != nil {
            return .refused(ReseedError(.invalidManifest, step: .checkManifest, field: "expires", url: found.manifestURL,
                                        message: "field \"expires\": missing; a channel with \(ChannelKeys.fileName) says when its manifest expires"))
        }
        if let refusal = validity(manifest, found) ?? bindingRefusal(manifest, found) { return .refused(refusal) }
        if let refusal = nameRefusal(found.keys?.channelName ?? manifest.channel, in: ChannelManifest.fileName, pinned: found.channelName,
                                     recorded: found.floors.channelName, url: found.manifestURL) {
            return .refused(refusal)
        }
        guard manifest.name == found.name else {
            return .refused(ReseedError(.channelRefused, step: .checkManifest, url: found.manifestURL,
                                        message: "the channel offers the store '\(manifest.name)'; this store is '\(found.name)'"))
        }
        let baseline = found.baseline
        if manifest.version == baseline { return .upToDate(notModified: false) }
        let downgradeAllowed = found.allowsDowngrade || found.revokedKeyID != nil
        guard downgradeAllowed || SeedVersion(manifest.version).isNewer(than: SeedVersion(baseline)) else {
            return .refused(ReseedError(.channelRefused, step: .checkManifest, url: found.manifestURL, message:
                "the channel offers \(manifest.name) \(manifest.version), not newer than \(baseline)\(found.installed == nil ? " (bundled)" : " (installed)"); refusing a downgrade"))
        }
        // So is every manifest verified before, whatever became of its download.
        if !downgradeAllowed, let floor = found.floors.manifestFloor(keys: found.keys), SeedVersion(floor).isNewer(than: SeedVersion(manifest.version)) {
            return .refused(ReseedError(.channelRefused, step: .checkManifest, url: found.manifestURL, message:
                "the channel offers \(manifest.name) \(manifest.version), older than \(floor) this device verified from the channel before; refusing a rollback"))
        }
        // The store's own record of its version is a floor too: the preferences may have been lost.
        if !downgradeAllowed, let embedded = found.embedded, SeedVersion(embedded).isNewer(than: SeedVersion(manifest.version)) {
            return .refused(ReseedError(.channelRefused, step: .checkManifest, url: found.manifestURL, message:
                "the channel offers \(manifest.name) \(manifest.version), older than \(embedded) in the store file \(found.storePath) (its \(SeedMetadata.tableName) table); refusing a downgrade"))
        }
        if !found.mayHoldUserTables, let delta = usableDelta(manifest, from: found.fromContentHash) { return .delta(delta) }
        return .full
    }

    /// The delta of `manifest` that starts from `installed`, the installed seed's recorded content
    /// hash, when the channel also states the new seed's content hash.
    static func usableDelta(_ manifest: ChannelManifest, from installed: String?) -> ChannelManifest.Delta? {
        guard let installed, manifest.contentHash != nil else { return nil }
        return manifest.deltas.first { $0.fromContentHash == installed }
    }

    /// The refusal of a manifest whose `expires`, plus the clock-skew allowance, has passed; nil while it holds.
    private static func expiry(_ expires: Date, _ found: Found) -> ReseedError? {
        guard ChannelTrust.hasPassed(expires, now: found.now, allowance: found.clockSkew) else { return nil }
        return ReseedError(.channelExpired, step: .checkManifest, url: found.manifestURL, message:
            "the channel's \(ChannelManifest.fileName) expired at \(RFC3339.string(expires)); refusing a manifest the publisher no longer vouches for")
    }

    /// True when the decision refuses the offer.
    var isRefused: Bool {
        if case .refused = self { return true }
        return false
    }

    /// True when the decision installs the channel's release (by its delta or in full).
    var installs: Bool {
        switch self {
        case .delta, .full: true
        case .upToDate, .refused: false
        }
    }
}
