import ArgumentParser
import Foundation
import Reseed
import ReseedPackaging

extension ReseedCommand {
    struct Publish: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy a seed into a channel folder and write the signed channel.json that offers it.",
            discussion: """
                The seed is copied in as <name>-<version>.sqlite (checked against its manifest) and compressed \
                (\(SeedManifest.Compression.published.map(\.rawValue).joined(separator: " and "))) beside it, apps taking the smallest they read; for each of the last --deltas releases the channel offered whose seed file is still in the \
                folder, a row-level delta to the new seed is built, checked and compressed; then \
                channel.json.sig and channel.json are replaced atomically, so that a publish killed at any moment \
                leaves a pair that verifies. channel.json expires --valid-for from now (default 30d; apps refuse one valid \
                longer than their maximum validity, 90 days by default): re-sign it on a \
                schedule by publishing the same seed again, which changes nothing else. A seed whose version is not newer \
                than the channel's (SemVer 2.0, or dotted numbers such as 2024.07.2 compared number by number) is \
                refused unless --allow-downgrade. When the folder has a keys.json \
                (reseed keys), the private key must be a listed, unexpired channel key, keys.json must not have expired, \
                and channel.json names it (its version and SHA-256) and the channel's name it states: publish again \
                after each reseed keys. Serve the folder from \
                any static HTTP host; apps update from it with `reseed update` or ChannelUpdater.
                """)

        @Argument(help: ArgumentHelp("The seed: its manifest, or a folder holding one.", valueName: "seed"))
        var seed: String

        @Option(help: ArgumentHelp("The channel folder (created when missing).", valueName: "dir"))
        var channel: String

        @Option(name: .customLong("private-key"), help: ArgumentHelp("The private key file from `reseed keygen`.", valueName: "path"))
        var privateKey: String

        // Unconditional: `--deltas -1` reaches validate() as a value, not as an unknown option.
        @Option(parsing: .unconditional, help: ArgumentHelp("How many earlier releases of the channel get a row-level delta to this seed (0: none).", valueName: "n"))
        var deltas = 5

        @Option(name: .customLong("valid-for"),
                help: ArgumentHelp("How long apps accept the signed channel.json: a number and d, h, m or s (30d, 12h, 4s).", valueName: "duration"))
        var validFor = "30d"

        @Flag(name: .customLong("allow-downgrade"),
              help: "Publish even when the seed's version is not newer than the one the channel offers (a deliberate roll-back).")
        var allowDowngrade = false

        @Flag(name: .customLong("no-compress"), help: "Do not publish the compressed (\(SeedManifest.Compression.published.map(\.rawValue).joined(separator: ", "))) seed beside it (for data that does not compress).")
        var noCompress = false

        @Flag(help: "Print one JSON object on stdout.")
        var json = false

        func validate() throws {
            guard (0...ChannelManifest.maximumDeltas).contains(deltas) else {
                throw ValidationError("--deltas must be between 0 and \(ChannelManifest.maximumDeltas)")
            }
            _ = try validity(validFor, of: "--valid-for")
        }

        @MainActor
        func run() async throws {
            try await reportingErrors {
                let key = try ChannelPrivateKey(contentsOf: fileURL(privateKey))
                var publisher = ChannelPublisher(channel: fileURL(channel), privateKey: key)
                publisher.deltas = deltas
                publisher.compresses = !noCompress
                publisher.allowsDowngrade = allowDowngrade
                publisher.validFor = try validity(validFor, of: "--valid-for")
                let published = try publisher.publish(try Seed(at: fileURL(seed)))
                let manifest = published.manifest
                if json {
                    try Terminal.out(json: Report(published))
                } else {
                    var lines = ["Published \(manifest.name) \(manifest.version) to \(fileURL(channel).path): \(manifest.file) (\(manifest.size) bytes"
                        + (published.copied ? "" : ", already there") + ")"
                        + (manifest.compressed?.encodings ?? []).map { ", \($0.file) (\($0.size) bytes)" }.joined() + ", \(ChannelManifest.fileName) signed" + (manifest.expires.map { ", valid until \(RFC3339.string($0))" } ?? "") + "."]
                    for delta in manifest.deltas {
                        let built = published.deltaContents.first { $0.fromVersion == delta.fromVersion }?.built
                        lines.append("  delta from \(delta.fromVersion): " + delta.file.encodings.map { "\($0.file) (\($0.size) bytes" }.joined(separator: "), ")
                            + SeedDeltaBuilder.formatLabel(format: built?.format, tables: built?.tables ?? [], schemaObjects: built?.schemaObjects ?? [], numbered: false) + ")")
                        if let built { lines += SeedDeltaBuilder.contentLines(tables: built.tables, schemaObjects: built.schemaObjects, indent: "    ") }
                        if delta.metadataOnly != nil { lines.append("    only Reseed's metadata changed: apps of this Reseed make this delta themselves and download nothing") }
                    }
                    for skipped in published.skippedDeltas {
                        lines.append("  no delta from \(skipped.fromVersion): \(skipped.reason)")
                    }
                    try Terminal.out(lines.joined(separator: "\n"))
                }
            }
        }
    }
}

extension ReseedCommand.Publish {
    /// The `--json` object of `reseed publish`.
    struct Report: Encodable {
        var name: String
        var version: String
        /// The seed file in the channel folder.
        var file: String
        var size: Int64
        var sha256: String
        /// The channel manifest written.
        var manifest: String
        /// False when the channel already held the seed.
        var copied: Bool
        /// The compressed seed file and its size.
        @NullWhenNil var compressedFile: String?
        @NullWhenNil var compressedSize: Int64?
        /// The compressed seed in the other encodings (xz), which apps that read them take when smaller.
        var compressedAlternatives: [Encoded]
        @NullWhenNil var contentHash: String?
        /// When the signed channel.json expires (RFC 3339, UTC).
        @NullWhenNil var expires: String?
        /// The deltas published to this seed.
        var deltas: [Delta]
        /// The earlier releases that got no delta, and why.
        var skippedDeltas: [Skipped]

        struct Delta: Encodable {
            var fromVersion: String
            var fromContentHash: String
            var file: String
            var size: Int64
            /// The delta in the other encodings (xz).
            var alternatives: [Encoded]
            /// 1 without schema changes, 2 with them, 3 with rows matched by content.
            @NullWhenNil var format: Int?
            /// What it carries per table, and why.
            var tables: [SeedDeltaBuilder.TableCounts]
            /// The indexes, views and triggers it drops or creates.
            var schemaObjects: [SeedDeltaBuilder.SchemaObjectChange]
            /// When only Reseed's metadata changed, the values the manifest's entry carries (apps of this Reseed download nothing).
            @NullWhenNil var metadata: [String: String]?
        }

        /// A channel file in another encoding: its name in the channel folder and its size.
        struct Encoded: Encodable {
            var encoding: String
            var file: String
            var size: Int64
        }

        struct Skipped: Encodable {
            var fromVersion: String
            var reason: String
        }

        init(_ published: ChannelPublisher.Result) {
            let manifest = published.manifest
            name = manifest.name
            version = manifest.version
            file = published.seedURL.path
            size = manifest.size
            sha256 = manifest.sha256
            self.manifest = published.manifestURL.path
            copied = published.copied
            compressedFile = manifest.compressed.map { _ in published.compressedURL.path }
            compressedSize = manifest.compressed?.size
            let encoded = { (file: ChannelManifest.File) in Encoded(encoding: file.encoding, file: file.file, size: file.size) }
            compressedAlternatives = (manifest.compressed?.alternatives ?? []).map(encoded)
            contentHash = manifest.contentHash
            expires = manifest.expires.map(RFC3339.string)
            deltas = manifest.deltas.map { delta in
                let built = published.deltaContents.first { $0.fromVersion == delta.fromVersion }?.built
                return Delta(
                    fromVersion: delta.fromVersion, fromContentHash: delta.fromContentHash, file: delta.file.file, size: delta.file.size, alternatives: delta.file.alternatives.map(encoded),
                    format: built?.format, tables: built?.tables ?? [], schemaObjects: built?.schemaObjects ?? [], metadata: delta.metadataOnly?.values)
            }
            skippedDeltas = published.skippedDeltas.map { Skipped(fromVersion: $0.fromVersion, reason: $0.reason) }
        }
    }
}
