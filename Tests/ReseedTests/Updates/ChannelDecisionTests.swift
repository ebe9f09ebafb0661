import Foundation
@testable import Reseed
import Testing

/// What an update takes of a channel's offer, as a table: the manifest (or a `304`), what the
/// preferences and the store say, the clock, and the decision they lead to. No I/O.
@Suite struct ChannelDecisionTests {
    /// A decision with its refusal reduced to what a user reads: the code and the sentence.
    enum Expected: Equatable, Sendable {
        case upToDate(notModified: Bool)
        case delta(fromVersion: String)
        case full
        case refused(ReseedError.Code, String)

        init(_ decision: ChannelDecision) {
            switch decision {
            case .upToDate(let notModified): self = .upToDate(notModified: notModified)
            case .delta(let delta): self = .delta(fromVersion: delta.fromVersion)
            case .full: self = .full
            case .refused(let error): self = .refused(error.code, error.message)
            }
        }
    }

    /// One row: how the facts differ from ``found(_:)``'s (2.0.0 installed, 2.1.0 offered with a
    /// delta from the installed seed's content hash), and what is decided.
    struct Case: Sendable, CustomTestStringConvertible {
        var label: String
        var edit: @Sendable (inout ChannelDecision.Found) -> Void
        var expected: Expected

        init(_ label: String, _ expected: Expected, _ edit: @escaping @Sendable (inout ChannelDecision.Found) -> Void = { _ in }) {
            self.label = label
            self.edit = edit
            self.expected = expected
        }

        var testDescription: String { label }
    }

    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let installedHash = String(repeating: "1", count: 64)
    /// The channel key that signed the installed release, which root then removed.
    static let leaked = "q8f1yR7n0TkM4gO1QbqR3y2Gv2p3sTq6f9p2k8W0a1E="

    static func manifest(_ version: String, name: String = "items", expires: Date? = now.addingTimeInterval(86_400)) -> ChannelManifest {
        let facts = SeedFacts(name: name, version: version, file: "\(name)-\(version).sqlite", size: 4096, sha256: String(repeating: "a", count: 64),
                              userVersion: 0, applicationID: 0, pageSize: 4096)
        let delta = ChannelManifest.Delta(fromVersion: "2.0.0", fromContentHash: installedHash,
                                          file: .init(file: "\(name)-\(version).from-2.0.0.delta.gz", size: 100, sha256: String(repeating: "d", count: 64)))
        return ChannelManifest(facts: facts, contentHash: String(repeating: "2", count: 64), deltas: [delta], expires: expires)
    }

    /// 2.0.0 installed (content hash recorded, no user tables), 1.0.0 bundled, 2.1.0 offered with a
    /// delta from the installed seed, unexpired, from a channel without `keys.json`.
    static func found(_ edit: (inout ChannelDecision.Found) -> Void) -> ChannelDecision.Found {
        var found = ChannelDecision.Found(
            name: "items", manifest: manifest("2.1.0"), manifestURL: URL(fileURLWithPath: "/channel/channel.json"),
            recorded: nil, keys: nil, installed: "2.0.0", bundled: "1.0.0", embedded: nil, storePath: "/data/items.sqlite",
            contentHash: installedHash, mayHoldUserTables: false, allowsDowngrade: false, now: now, clockSkew: .seconds(300))
        edit(&found)
        return found
    }

    /// The validators kept from the check that installed 2.0.0, signed by `signer`, its manifest expiring at `expires`.
    static func recorded(signedBy signer: String? = nil, expires: Date? = nil) -> ChannelValidators {
        ChannelValidators(url: "file:///channel/", etag: "\"e\"", lastModified: nil, version: "2.0.0", signedBy: signer,
                          expires: expires.map(RFC3339.string))
    }

    static let expiredSentence = "the channel's channel.json expired at \(RFC3339.string(now.addingTimeInterval(-3_600))); refusing a manifest the publisher no longer vouches for"

    static let cases: [Case] = [
        // A 304: nothing new, unless the manifest it stands for has expired since.
        Case("304", .upToDate(notModified: true)) { $0.manifest = nil },
        Case("304 for a manifest that expired", .refused(.channelExpired, expiredSentence)) {
            $0.manifest = nil
            $0.recorded = recorded(expires: now.addingTimeInterval(-3_600))
        },
        Case("304 for a manifest expired within the clock skew", .upToDate(notModified: true)) {
            $0.manifest = nil
            $0.recorded = recorded(expires: now.addingTimeInterval(-120))
        },

        // A 304 never keeps a key root removed, let expire or stopped listing in standing.
        Case("304 for a manifest whose signer root removed since", .refused(.channelKeyRevoked, "the channel answered 304 Not Modified for a channel.json signed by the channel key \(leakedKeyID.prefix(16)), which the channel's root removed (keys.json version 2); refusing to call it up to date")) {
            $0.manifest = nil
            $0.recorded = recorded(signedBy: leakedKeyID)
            $0.keys = ChannelKeys(version: 2, keys: [], revoked: leakedKeys)
            $0.manifest?.keys = .init(version: 2, sha256: "")
        },
        Case("304 for a manifest whose signer expired since", .refused(.channelKeyExpired, "the channel answered 304 Not Modified for a channel.json signed by the channel key \(leakedKeyID.prefix(16)), which expired at \(RFC3339.string(now.addingTimeInterval(-3_600))); refusing to call it up to date")) {
            $0.manifest = nil
            $0.recorded = recorded(signedBy: leakedKeyID)
            $0.keys = ChannelKeys(version: 2, keys: leakedKeys.map { .init(publicKey: $0, expires: now.addingTimeInterval(-3_600)) }, revoked: [])
        },
        Case("304 for a manifest whose signer is no longer listed", .refused(.signature, "the channel answered 304 Not Modified for a channel.json signed by the channel key \(leakedKeyID.prefix(16)), which keys.json version 2 no longer lists; refusing to call it up to date")) {
            $0.manifest = nil
            $0.recorded = recorded(signedBy: leakedKeyID)
            $0.keys = ChannelKeys(version: 2, keys: [], revoked: [])
            $0.manifest?.keys = .init(version: 2, sha256: "")
        },
        Case("304 for a manifest whose signer is still listed", .upToDate(notModified: true)) {
            $0.manifest = nil
            $0.recorded = recorded(signedBy: leakedKeyID)
            $0.keys = ChannelKeys(version: 2, keys: leakedKeys.map { .init(publicKey: $0, expires: now.addingTimeInterval(3_600)) }, revoked: [])
        },

        // The issue time and the longest validity.
        Case("issued an hour ahead of the device", .refused(.channelRefused, "the channel's channel.json was issued at \(RFC3339.string(now.addingTimeInterval(3_600))), after this device's time \(RFC3339.string(now)) and its clock skew; refusing a manifest that is not valid yet")) {
            $0.manifest?.issued = now.addingTimeInterval(3_600)
        },
        Case("issued within the clock skew ahead", .delta(fromVersion: "2.0.0")) { $0.manifest?.issued = now.addingTimeInterval(120) },
        Case("valid for 91 days", .refused(.channelRefused, "the channel's channel.json is valid from \(RFC3339.string(now)) to \(RFC3339.string(now.addingTimeInterval(91 * 86_400))), longer than the 90 days this app accepts; refusing a manifest its signer made to outlive them")) {
            $0.manifest?.issued = now
            $0.manifest?.expires = now.addingTimeInterval(91 * 86_400)
        },
        Case("no issue time, expiring in a year", .refused(.channelRefused, "the channel's channel.json expires at \(RFC3339.string(now.addingTimeInterval(365 * 86_400))), more than the 90 days this app accepts from now; refusing a manifest its signer made to outlive them")) {
            $0.manifest?.expires = now.addingTimeInterval(365 * 86_400)
        },

        // What the device verified before (its floors), and the binding of the two files.
        Case("a lower format than one verified", .refused(.channelRefused, "the channel's channel.json is in format 2, below format 3 this device verified from the channel before; refusing a manifest without what that format checks")) {
            $0.manifest?.format = 2
            $0.floors.manifestFormat = 3
        },
        Case("older than a manifest verified before", .refused(.channelRefused, "the channel offers items 2.1.0, older than 3.0.0 this device verified from the channel before; refusing a rollback")) {
            $0.floors.manifestVersion = "3.0.0"
        },
        Case("older than a manifest verified before, whose signer root removed", .delta(fromVersion: "2.0.0")) {
            $0.floors.manifestVersion = "3.0.0"
            $0.floors.manifestSignedBy = leakedKeyID
            $0.keys = ChannelKeys(version: 2, keys: [], revoked: leakedKeys)
            $0.manifest?.keys = .init(version: 2, sha256: "")
        },
        Case("keys.json older than the one the manifest names", .refused(.channelRefused, "the channel serves keys.json version 2, older than version 3 its channel.json was published under: a stale copy; refusing until the host serves the keys the manifest names")) {
            $0.keys = ChannelKeys(version: 2, keys: [], revoked: [])
            $0.manifest?.keys = .init(version: 2, sha256: "")
            $0.manifest?.keys = .init(version: 3, sha256: String(repeating: "b", count: 64))
        },
        Case("keys.json newer than the one the manifest names", .delta(fromVersion: "2.0.0")) {
            $0.keys = ChannelKeys(version: 4, keys: [], revoked: [])
            $0.manifest?.keys = .init(version: 3, sha256: String(repeating: "b", count: 64))
        },
        Case("a format-3 manifest that names no keys.json beside one", .refused(.invalidManifest, "field \"keys\": missing; a format-3 channel.json names the keys.json it was published under")) {
            $0.keys = ChannelKeys(version: 2, keys: [], revoked: [])
            $0.manifest?.keys = .init(version: 2, sha256: "")
            $0.manifest?.keys = nil
            $0.manifest?.format = 3
            $0.manifest?.minimumFormat = 2
        },
        Case("a manifest that names a keys.json the channel lacks", .refused(.channelRefused, "the channel's channel.json was published under keys.json version 3, but the channel serves none; refusing a channel stripped of its keys")) {
            $0.manifest?.keys = .init(version: 3, sha256: String(repeating: "b", count: 64))
        },

        // The channel's name.
        Case("another name than the one pinned", .refused(.channelRefused, "the channel's channel.json is named 'staging'; this app pins the channel 'production'")) {
            $0.manifest?.channel = "staging"
            $0.channelName = "production"
        },
        Case("another name than the one verified first", .refused(.channelRefused, "the channel's channel.json is named 'staging'; this device verified the channel 'production' there before and takes no other")) {
            $0.manifest?.channel = "staging"
            $0.floors.channelName = "production"
        },
        Case("no name where one is pinned", .refused(.channelRefused, "the channel's channel.json has no name; this app pins the channel 'production'")) {
            $0.channelName = "production"
        },
        Case("a manifest of another name than its keys.json", .refused(.channelRefused, "the channel's channel.json names the channel 'staging', but its keys.json names it 'production'; refusing a manifest of another channel")) {
            $0.keys = ChannelKeys(version: 2, keys: [], revoked: [], channelName: "production")
            $0.manifest?.keys = .init(version: 2, sha256: "")
            $0.manifest?.channel = "staging"
        },

        // Expiry of the manifest fetched.
        Case("an expired manifest", .refused(.channelExpired, expiredSentence)) { $0.manifest?.expires = now.addingTimeInterval(-3_600) },
        Case("a manifest expired within the clock skew", .delta(fromVersion: "2.0.0")) { $0.manifest?.expires = now.addingTimeInterval(-120) },
        Case("no clock skew allowed", .refused(.channelExpired, "the channel's channel.json expired at \(RFC3339.string(now.addingTimeInterval(-120))); refusing a manifest the publisher no longer vouches for")) {
            $0.manifest?.expires = now.addingTimeInterval(-120)
            $0.clockSkew = .zero
        },
        Case("no expiry from a channel with keys.json", .refused(.invalidManifest, "field \"expires\": missing; a channel with keys.json says when its manifest expires")) {
            $0.manifest?.expires = nil
            $0.keys = ChannelKeys(version: 1, keys: [], revoked: [])
        },
        Case("no expiry from a publisher older than channel trust", .delta(fromVersion: "2.0.0")) { $0.manifest?.expires = nil },

        // Another store.
        Case("another store's manifest", .refused(.channelRefused, "the channel offers the store 'other'; this store is 'items'")) {
            $0.manifest = manifest("3.0.0", name: "other")
        },

        // Up to date.
        Case("the installed version offered", .upToDate(notModified: false)) { $0.manifest = manifest("2.0.0") },
        Case("nothing installed, the bundled version offered", .upToDate(notModified: false)) {
            $0.installed = nil
            $0.manifest = manifest("1.0.0")
        },
        Case("the installed version offered, its signer since removed", .upToDate(notModified: false)) {
            $0.manifest = manifest("2.0.0")
            $0.recorded = recorded(signedBy: leakedKeyID)
            $0.keys = ChannelKeys(version: 2, keys: [], revoked: leakedKeys)
            $0.manifest?.keys = .init(version: 2, sha256: "")
        },

        // Downgrades.
        Case("older than the installed version", .refused(.channelRefused, "the channel offers items 1.5.0, not newer than 2.0.0 (installed); refusing a downgrade")) {
            $0.manifest = manifest("1.5.0")
        },
        Case("nothing installed, older than the bundled version", .refused(.channelRefused, "the channel offers items 0.9.0, not newer than 1.0.0 (bundled); refusing a downgrade")) {
            $0.installed = nil
            $0.manifest = manifest("0.9.0")
        },
        Case("a version outside the grammar", .refused(.channelRefused, "the channel offers items nightly, not newer than 2.0.0 (installed); refusing a downgrade")) {
            $0.manifest = manifest("nightly")
        },
        Case("older, downgrades allowed", .delta(fromVersion: "2.0.0")) {
            $0.manifest = manifest("1.5.0")
            $0.allowsDowngrade = true
        },
        Case("older, the installed release's signer removed by root", .delta(fromVersion: "2.0.0")) {
            $0.manifest = manifest("1.5.0")
            $0.recorded = recorded(signedBy: leakedKeyID)
            $0.keys = ChannelKeys(version: 2, keys: [], revoked: leakedKeys)
            $0.manifest?.keys = .init(version: 2, sha256: "")
        },
        Case("older, the installed release's signer still listed", .refused(.channelRefused, "the channel offers items 1.5.0, not newer than 2.0.0 (installed); refusing a downgrade")) {
            $0.manifest = manifest("1.5.0")
            $0.recorded = recorded(signedBy: leakedKeyID)
            $0.keys = ChannelKeys(version: 2, keys: [], revoked: [])
            $0.manifest?.keys = .init(version: 2, sha256: "")
        },
        Case("newer than recorded, older than the store file's own record", .refused(.channelRefused, "the channel offers items 2.1.0, older than 3.0.0 in the store file /data/items.sqlite (its reseed_metadata table); refusing a downgrade")) {
            $0.embedded = "3.0.0"
        },
        Case("older than the store file's own record, downgrades allowed", .delta(fromVersion: "2.0.0")) {
            $0.embedded = "3.0.0"
            $0.allowsDowngrade = true
        },
        Case("the store file's record not newer", .delta(fromVersion: "2.0.0")) { $0.embedded = "2.1.0" },

        // The delta or the full seed.
        Case("a delta from the installed seed's content hash", .delta(fromVersion: "2.0.0")),
        Case("the store may hold user tables", .full) { $0.mayHoldUserTables = true },
        Case("nothing installed: no content hash to start from", .full) { $0.installed = nil },
        Case("no content hash recorded at the install", .full) { $0.contentHash = nil },
        Case("another installed content hash", .full) { $0.contentHash = String(repeating: "9", count: 64) },
        Case("a manifest without the new seed's content hash", .full) { $0.manifest?.contentHash = nil },
    ]

    static var leakedKeys: [ChannelPublicKey] { (try? ChannelPublicKey(base64: leaked)).map { [$0] } ?? [] }
    static var leakedKeyID: String { leakedKeys.first?.keyID ?? "" }

    @Test(arguments: cases) func decides(_ row: Case) {
        #expect(Expected(ChannelDecision.decide(Self.found(row.edit))) == row.expected)
    }

    /// What the outcome reports beside the decision: the removed key, and the hash a delta starts from.
    @Test func theRemovedSignerAndTheStartingHashAreFacts() {
        let revoked = Self.found {
            $0.recorded = Self.recorded(signedBy: Self.leakedKeyID)
            $0.keys = ChannelKeys(version: 2, keys: [], revoked: Self.leakedKeys)
        }
        #expect(Self.leakedKeys.count == 1)
        #expect(revoked.revokedKeyID == Self.leakedKeyID)
        #expect(Self.found { $0.recorded = Self.recorded(signedBy: Self.leakedKeyID) }.revokedKeyID == nil, "no keys.json: nothing is revoked")
        #expect(Self.found { _ in }.fromContentHash == Self.installedHash)
        #expect(Self.found { $0.installed = nil }.fromContentHash == nil, "a bundled seed not yet installed is no starting point")
    }
}
