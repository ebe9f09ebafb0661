import ArgumentParser
import Foundation
import Reseed
import ReseedPackaging

extension ReseedCommand {
    struct Keygen: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make the Ed25519 key pair that signs a channel: a private key for publishing, a public key for the app.",
            discussion: """
                Each file holds one line that names its kind, then the base64 of the key's 32 raw bytes: \
                reseed-private-key-ed25519 <base64> and reseed-public-key-ed25519 <base64>, so that a private key \
                given where a public one is expected (reseed keys --add, reseed update --public-key) is refused. \
                The private key file is created with mode 0600; keep it out of the app and out of the repository. Neither file is ever overwritten: \
                when either exists, nothing is written and the exit status is 1.
                """)

        @Option(name: .customLong("private-key"), help: ArgumentHelp("Where to write the private key (must not exist).", valueName: "path"))
        var privateKey: String

        @Option(name: .customLong("public-key"), help: ArgumentHelp("Where to write the public key (must not exist).", valueName: "path"))
        var publicKey: String

        @Flag(help: "Print one JSON object on stdout.")
        var json = false

        func validate() throws {
            if fileURL(privateKey) == fileURL(publicKey) { throw ValidationError("--private-key and --public-key must name two files") }
        }

        @MainActor
        func run() async throws {
            try await reportingErrors {
                let privateURL = fileURL(privateKey)
                let publicURL = fileURL(publicKey)
                let key = try ChannelPrivateKey.generate(privateKeyFile: privateURL, publicKeyFile: publicURL)
                if json {
                    try Terminal.out(json: Report(privateKey: privateURL.path, publicKey: publicURL.path, publicKeyBase64: key.publicKey.base64))
                } else {
                    try Terminal.out("Wrote the private key to \(privateURL.path) (mode 0600: keep it secret) and the public key to \(publicURL.path).")
                    try Terminal.out("Public key for the app: \(key.publicKey.base64)")
                }
            }
        }
    }
}

extension ReseedCommand.Keygen {
    /// The `--json` object of `reseed keygen`: the two files and the public key for the app.
    struct Report: Encodable {
        var privateKey: String
        var publicKey: String
        var publicKeyBase64: String
    }
}
