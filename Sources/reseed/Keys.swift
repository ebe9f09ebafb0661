import ArgumentParser
import Foundation
import Reseed
import ReseedPackaging

extension ReseedCommand {
    struct Keys: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add or remove the channel keys a channel's keys.json lists, signed by the root key the app pins.",
            discussion: """
                keys.json lists the channel keys that may sign channel.json (reseed publish), each with its own expiry; \
                the root key signs it, and apps pin the root's public key (reseed update --public-key). Each run writes \
                a new keys.json one version higher (apps refuse an older one), durably and under the lock reseed publish \
                takes. A removed key is listed as revoked: apps refuse what it signs, and a release it signed loses its \
                standing on devices (the next release signed by a valid key installs even if lower). Keep the root \
                key offline. keys.json is read by everyone: a private key file given to --add or --remove is refused, \
                as is a bare base64 file (written before key files said their kind) that only its owner may read.
                """)

        @Option(help: ArgumentHelp("The channel folder (created when missing).", valueName: "dir"))
        var channel: String

        @Option(name: .customLong("root-key"), help: ArgumentHelp("The root private key file from `reseed keygen`.", valueName: "path"))
        var rootKey: String

        @Option(help: ArgumentHelp("A channel public key file to list (repeat for several).", valueName: "path"))
        var add: [String] = []

        @Option(help: ArgumentHelp("A listed channel public key file to remove (repeat for several).", valueName: "path"))
        var remove: [String] = []

        @Option(name: .customLong("valid-for"),
                help: ArgumentHelp("How long the added keys stay valid: a number and d, h, m or s (default 365d).", valueName: "duration"))
        var validFor: String?

        @Option(help: ArgumentHelp("When the added keys expire instead: 2027-06-01T00:00:00Z (RFC 3339, UTC).", valueName: "time"))
        var expires: String?

        @Flag(help: "Print one JSON object on stdout.")
        var json = false

        func validate() throws {
            guard !add.isEmpty || !remove.isEmpty else { throw ValidationError("give --add or --remove") }
            if let both = add.first(where: { path in remove.contains { fileURL($0) == fileURL(path) } }) {
                throw ValidationError("\(both) is given to both --add and --remove; give it to one of them")
            }
            _ = try expiry(now: Date())
        }

        /// When added keys expire.
        func expiry(now: Date) throws -> Date {
            if let expires {
                guard validFor == nil else { throw ValidationError("give --valid-for or --expires, not both") }
                guard let date = RFC3339.date(expires) else { throw ValidationError("--expires must be a time such as 2027-06-01T00:00:00Z (RFC 3339, UTC)") }
                guard date > now else { throw ValidationError("--expires must be in the future") }
                return date
            }
            let duration = try validity(validFor ?? "365d", of: "--valid-for")
            return now.addingTimeInterval(TimeInterval(duration.components.seconds))
        }

        @MainActor
        func run() async throws {
            try await reportingErrors {
                let root = try ChannelPrivateKey(contentsOf: fileURL(rootKey))
                let until = try expiry(now: Date())
                let changes = try add.map { ChannelKeysEditor.Change.add(try ChannelKeysEditor.channelKey(contentsOf: fileURL($0)), expires: until) }
                    + remove.map { ChannelKeysEditor.Change.remove(try ChannelKeysEditor.channelKey(contentsOf: fileURL($0))) }
                let keys = try ChannelKeysEditor(channel: fileURL(channel), rootKey: root).apply(changes)
                let file = fileURL(channel).appendingPathComponent(ChannelKeys.fileName).path
                if json {
                    try Terminal.out(json: Report(keys, file: file))
                } else {
                    let listed = keys.keys.map { "\($0.publicKey.keyID.prefix(16)) until \(RFC3339.string($0.expires))" }
                    try Terminal.out("Wrote \(file) version \(keys.version), signed by the root key \(root.publicKey.keyID.prefix(16)): "
                        + (listed.isEmpty ? "no channel keys" : "channel keys " + listed.joined(separator: ", "))
                        + (keys.revoked.isEmpty ? "" : "; \(keys.revoked.count) removed") + ".")
                }
            }
        }
    }
}

extension ReseedCommand.Keys {
    /// The `--json` object of `reseed keys`.
    struct Report: Encodable {
        struct Key: Encodable {
            var keyid: String
            var expires: String
        }

        var file: String
        var version: Int64
        var rootKeyID: String
        var keys: [Key]
        var revoked: [String]

        init(_ keys: ChannelKeys, file: String) {
            self.file = file
            version = keys.version
            rootKeyID = keys.signatures.first?.keyID ?? ""
            self.keys = keys.keys.map { Key(keyid: $0.publicKey.keyID, expires: RFC3339.string($0.expires)) }
            revoked = keys.revoked.map(\.keyID)
        }
    }
}
