import ArgumentParser
import Foundation
import Reseed
import ReseedPackaging

extension ReseedCommand {
    struct Keys: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add or remove the channel keys a channel's keys.json lists, signed by the root key the app pins; name the channel; re-sign it.",
            discussion: """
                keys.json lists the channel keys that may sign channel.json (reseed publish), each with its own expiry; \
                the root key signs it, and apps pin the root's public key (reseed update --public-key). Each run writes \
                a new keys.json one version higher (apps refuse an older one), durably and under the lock reseed publish \
                takes. A removed key is listed as revoked: apps refuse what it signs, and a release it signed loses its \
                standing on devices (the next release signed by a valid key installs even if lower). Keep the root \
                key offline. keys.json is read by everyone: a private key file given to --add or --remove is refused, \
                as is a bare base64 file (written before key files said their kind) that only its owner may read. \
                keys.json itself expires --valid-for after the run (default 365d): a run with no --add or --remove \
                re-signs it and changes nothing else. --channel-name signs the channel's name in (reseed publish copies it \
                into channel.json; apps refuse another name than the one they pin or first verified); changing it needs \
                --rename-channel. Give --root-key once per root that signs: --threshold roots must sign from then on, and \
                --new-root (repeatable) moves devices to new root keys, signed by the current roots and --threshold of the new ones.
                """)

        @Option(help: ArgumentHelp("The channel folder (created when missing).", valueName: "dir"))
        var channel: String

        @Option(name: .customLong("root-key"), help: ArgumentHelp("A root private key file from `reseed keygen` (repeat for each root that signs).", valueName: "path"))
        var rootKey: [String] = []

        @Option(help: ArgumentHelp("A channel public key file to list (repeat for several).", valueName: "path"))
        var add: [String] = []

        @Option(help: ArgumentHelp("A listed channel public key file to remove (repeat for several).", valueName: "path"))
        var remove: [String] = []

        @Option(name: .customLong("valid-for"),
                help: ArgumentHelp("How long the added keys and keys.json itself stay valid: a number and d, h, m or s (default 365d).", valueName: "duration"))
        var validFor: String?

        @Option(help: ArgumentHelp("When the added keys and keys.json expire instead: 2027-06-01T00:00:00Z (RFC 3339, UTC).", valueName: "time"))
        var expires: String?

        @Option(name: .customLong("channel-name"), help: ArgumentHelp("The channel's name to sign in (letters, digits, '.', '_', '-').", valueName: "name"))
        var channelName: String?

        @Flag(name: .customLong("rename-channel"), help: "Let --channel-name replace the name keys.json has (apps that verified the old name refuse the new one).")
        var renameChannel = false

        @Option(help: ArgumentHelp("How many root keys must sign keys.json from now on (default: as now; 1 for a new file).", valueName: "n"))
        var threshold: Int?

        @Option(name: .customLong("new-root"), help: ArgumentHelp("A public key file of a root devices trust from now on (repeat for each; a rotation).", valueName: "path"))
        var newRoot: [String] = []

        @Flag(help: "Print one JSON object on stdout.")
        var json = false

        func validate() throws {
            guard !rootKey.isEmpty else { throw ValidationError("give --root-key") }
            if let threshold, !(1...ChannelKeys.maximumSignatures).contains(threshold) {
                throw ValidationError("--threshold must be between 1 and \(ChannelKeys.maximumSignatures)")
            }
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
                let roots = try rootKey.map { try ChannelPrivateKey(contentsOf: fileURL($0)) }
                let root = roots[0]
                let until = try expiry(now: Date())
                let changes = try add.map { ChannelKeysEditor.Change.add(try ChannelKeysEditor.channelKey(contentsOf: fileURL($0)), expires: until) }
                    + remove.map { ChannelKeysEditor.Change.remove(try ChannelKeysEditor.channelKey(contentsOf: fileURL($0))) }
                var editor = ChannelKeysEditor(channel: fileURL(channel), rootKey: root)
                editor.additionalRootKeys = Array(roots.dropFirst())
                editor.expires = until
                editor.channelName = channelName
                editor.renamesChannel = renameChannel
                editor.threshold = threshold
                if !newRoot.isEmpty { editor.rootRotation = try newRoot.map { try ChannelPublicKey(contentsOf: fileURL($0)) } }
                let keys = try editor.apply(changes)
                let file = fileURL(channel).appendingPathComponent(ChannelKeys.fileName).path
                if json {
                    try Terminal.out(json: Report(keys, file: file))
                } else {
                    let listed = keys.keys.map { "\($0.publicKey.keyID.prefix(16)) until \(RFC3339.string($0.expires))" }
                    var line = "Wrote \(file) version \(keys.version), signed by the root key \(root.publicKey.keyID.prefix(16)): "
                    line += listed.isEmpty ? "no channel keys" : "channel keys " + listed.joined(separator: ", ")
                    if !keys.revoked.isEmpty { line += "; \(keys.revoked.count) removed" }
                    if let name = keys.channelName { line += "; channel '\(name)'" }
                    if let expires = keys.expires { line += "; valid until \(RFC3339.string(expires))" }
                    try Terminal.out(line + ".")
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
        @NullWhenNil var channel: String?
        @NullWhenNil var expires: String?
        var threshold: Int

        init(_ keys: ChannelKeys, file: String) {
            self.file = file
            version = keys.version
            rootKeyID = keys.signatures.first?.keyID ?? ""
            self.keys = keys.keys.map { Key(keyid: $0.publicKey.keyID, expires: RFC3339.string($0.expires)) }
            revoked = keys.revoked.map(\.keyID)
            channel = keys.channelName
            expires = keys.expires.map(RFC3339.string)
            threshold = keys.threshold
        }
    }
}
