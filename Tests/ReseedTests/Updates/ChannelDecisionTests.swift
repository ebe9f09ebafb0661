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
        },
        Case("older, the installed release's signer still listed", .refused(.channelRefused, "the channel offers items 1.5.0, not newer than 2.0.0 (installed); refusing a downgrade")) {
            $0.manifest = manifest("1.5.0")
            $0.recorded = recorded(signedBy: leakedKeyID)
            $0.keys = ChannelKeys(version: 2, keys: [], revoked: [])
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
