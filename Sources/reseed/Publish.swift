import ArgumentParser
import Foundation
import Reseed
import ReseedPackaging

extension ReseedCommand {
    struct Publish: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy a seed into a channel folder and write the signed channel.json that offers it.",
            discussion: """
                The seed is copied in as <name>-<version>.sqlite (checked against its manifest), then \
                channel.json.sig and channel.json are replaced atomically, in that order. Serve the folder from \
                any static HTTP host; apps update from it with `reseed update` or ChannelUpdater.
                """)

        @Argument(help: ArgumentHelp("The seed: its manifest, or a folder holding one.", valueName: "seed"))
        var seed: String

        @Option(help: ArgumentHelp("The channel folder (created when missing).", valueName: "dir"))
        var channel: String

        @Option(name: .customLong("private-key"), help: ArgumentHelp("The private key file from `reseed keygen`.", valueName: "path"))
        var privateKey: String

        @Flag(help: "Print one JSON object on stdout.")
        var json = false

        @MainActor
        func run() async throws {
            try await reportingErrors {
                let key = try ChannelPrivateKey(contentsOf: fileURL(privateKey))
                let published = try ChannelPublisher(channel: fileURL(channel), privateKey: key).publish(try Seed(at: fileURL(seed)))
                let manifest = published.manifest
                if json {
                    try Terminal.out(json: Report(
                        name: manifest.name, version: manifest.version, file: published.seedURL.path, size: manifest.size,
                        sha256: manifest.sha256, manifest: published.manifestURL.path, copied: published.copied))
                } else {
                    try Terminal.out("Published \(manifest.name) \(manifest.version) to \(fileURL(channel).path): \(manifest.file) (\(manifest.size) bytes"
                        + (published.copied ? "" : ", already there") + "), \(ChannelManifest.fileName) signed.")
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
    }
}
