import Foundation
import Reseed
import ReseedPackaging
import ReseedTesting
import ReseedTestSupport
import Testing

/// A key file says which kind of key it holds, and a private key is refused wherever a public one
/// is expected (and the other way round), in one sentence naming the file and the kind found.
@Suite struct KeyKindTests {
    /// A root pair and a channel pair made by `reseed keygen`, and a channel folder.
    struct Keys {
        let directory: TemporaryDirectory
        var channel: String { path("channel") }
        var keysFile: URL { directory.appending("channel/keys.json") }

        init() throws {
            directory = try TemporaryDirectory(prefix: "reseed-key-kinds")
            for name in ["root", "channel"] {
                let made = try ReseedBinary.run(["keygen", "--private-key", path("\(name).key"), "--public-key", path("\(name).pub")])
                #expect(made.status == 0, "\(made.stderr)")
            }
        }

        func path(_ name: String) -> String { directory.appending(name).path }

        func text(_ name: String) throws -> String { try String(contentsOfFile: path(name), encoding: .utf8) }

        /// The key's base64 alone, as `reseed keygen` wrote key files before it marked them, with `mode`.
        @discardableResult
        func writeBare(_ name: String, from source: String, mode: Int) throws -> String {
            let base64 = try #require(try text(source).split(separator: " ").last).trimmingCharacters(in: .whitespacesAndNewlines)
            try Data((base64 + "\n").utf8).write(to: directory.appending(name))
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path(name))
            return base64
        }

        func keys(_ arguments: [String]) throws -> ReseedBinary.Result {
            try ReseedBinary.run(["keys", "--channel", channel, "--root-key", path("root.key")] + arguments)
        }

        /// The bare base64 of each private key: none may ever appear in the channel.
        func secrets() throws -> [String] {
            try ["root.key", "channel.key"].map { try #require(try text($0).split(separator: " ").last).trimmingCharacters(in: .whitespacesAndNewlines) }
        }
    }

    @Test func keygenMarksEachFileWithItsKindAndTheAppReadsBothForms() throws {
        let keys = try Keys()
        let privateLine = try keys.text("channel.key"), publicLine = try keys.text("channel.pub")
        #expect(privateLine.hasPrefix("reseed-private-key-ed25519 ") && privateLine.hasSuffix("\n"))
        #expect(publicLine.hasPrefix("reseed-public-key-ed25519 ") && publicLine.hasSuffix("\n"))
        let key = try ChannelPrivateKey(contentsOf: keys.directory.appending("channel.key"))
        #expect(publicLine == "reseed-public-key-ed25519 \(key.publicKey.base64)\n")
        // The app pins either the file's line or the base64 alone.
        #expect(try ChannelPublicKey(base64: publicLine) == key.publicKey)
        #expect(try ChannelPublicKey(base64: key.publicKey.base64) == key.publicKey)
        let refused = try #require(throws: ReseedError.self) { try ChannelPublicKey(base64: privateLine) }
        #expect(refused.description == "a private key (its line starts with reseed-private-key-ed25519) where a public key is expected: whoever reads it can sign what every copy of the app installs; give the public key file reseed keygen wrote beside it")
    }

    @Test func keysAddRefusesAPrivateKeyFile() throws {
        let keys = try Keys()
        let add = try keys.keys(["--add", keys.path("channel.key")])
        #expect(add.status == 1)
        #expect(add.stderr == "reseed: \(keys.path("channel.key")): a private key (its line starts with reseed-private-key-ed25519) where a public key is expected: whoever reads it can sign what every copy of the app installs; give the public key file reseed keygen wrote beside it\n")
        #expect(!FileManager.default.fileExists(atPath: keys.keysFile.path))
    }

    /// A bare line cannot say its kind: one only its owner may read is refused, and one that derives
    /// the public key of the root or of a listed key is recognised as that key's private half.
    @Test func keysAddRefusesALegacyFileThatMayBeAPrivateKey() throws {
        let keys = try Keys()
        try keys.writeBare("legacy-channel.key", from: "channel.key", mode: 0o600)
        let ownerOnly = try keys.keys(["--add", keys.path("legacy-channel.key")])
        #expect(ownerOnly.status == 1)
        #expect(ownerOnly.stderrLines.count == 1)
        #expect(ownerOnly.stderr.hasPrefix("reseed: \(keys.path("legacy-channel.key")): keys.json is read by everyone, and this file may be a private key"), "\(ownerOnly.stderr)")
        #expect(ownerOnly.stderr.contains("chmod 644"))

        // A bare public key others may read is listed, as before.
        let base64 = try keys.writeBare("legacy-channel.pub", from: "channel.pub", mode: 0o644)
        let listed = try keys.keys(["--add", keys.path("legacy-channel.pub")])
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(try String(contentsOf: keys.keysFile, encoding: .utf8).contains(base64))

        // The private half of the listed key, or of the root key, even when others may read it.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: keys.path("legacy-channel.key"))
        try keys.writeBare("legacy-root.key", from: "root.key", mode: 0o644)
        for (file, role) in [("legacy-channel.key", "the channel key"), ("legacy-root.key", "the root key")] {
            let add = try keys.keys(["--add", keys.path(file)])
            #expect(add.status == 1)
            #expect(add.stderrLines.count == 1)
            #expect(add.stderr.contains("is the private key of \(role) "), "\(add.stderr)")
        }
        let published = try String(contentsOf: keys.keysFile, encoding: .utf8)
        for secret in try keys.secrets() { #expect(!published.contains(secret)) }
    }

    @Test func theRootKeyMustBeAPrivateKey() throws {
        let keys = try Keys()
        let marked = try ReseedBinary.run(["keys", "--channel", keys.channel, "--root-key", keys.path("root.pub"), "--add", keys.path("channel.pub")])
        #expect(marked.status == 1)
        #expect(marked.stderr == "reseed: \(keys.path("root.pub")): a public key (its line starts with reseed-public-key-ed25519) where a private key is expected; give the private key file reseed keygen wrote beside it\n")
        // A bare line others may read: no longer only "chmod 600", since it may be the public half.
        try keys.writeBare("legacy-root.pub", from: "root.pub", mode: 0o644)
        let bare = try ReseedBinary.run(["keys", "--channel", keys.channel, "--root-key", keys.path("legacy-root.pub"), "--add", keys.path("channel.pub")])
        #expect(bare.status == 1)
        #expect(bare.stderrLines.count == 1)
        #expect(bare.stderr.contains("\(keys.path("legacy-root.pub")): a private key must be readable by its owner only, and this file's mode is 644"), "\(bare.stderr)")
        #expect(bare.stderr.contains("so it may be the public key; if it is the public key, give the private key file reseed keygen wrote beside it"), "\(bare.stderr)")
        #expect(!FileManager.default.fileExists(atPath: keys.keysFile.path))
    }

    @Test func updateRefusesAPrivateKeyAsThePinnedKey() throws {
        let keys = try Keys()
        let seed = try SeedFixture(name: "items", version: "1.0.0", sql: ["CREATE TABLE item (id INTEGER PRIMARY KEY)"]).build(in: keys.directory.appending("seed"))
        let update = try ReseedBinary.run(["update", "--channel", "http://127.0.0.1:1/", "--public-key", keys.path("root.key"),
                                           "--seed", seed.manifestURL.path, "--data-dir", keys.path("data")])
        #expect(update.status == 1)
        #expect(update.stderr == "reseed: \(keys.path("root.key")): a private key (its line starts with reseed-private-key-ed25519) where a public key is expected: whoever reads it can sign what every copy of the app installs; give the public key file reseed keygen wrote beside it\n")
    }

    @Test func oneRunDoesNotBothAddAndRemoveAKey() throws {
        let keys = try Keys()
        let samePath = try keys.keys(["--add", keys.path("channel.pub"), "--remove", keys.path("channel.pub")])
        #expect(samePath.status != 0)
        #expect(samePath.stderr.contains("is given to both --add and --remove; give it to one of them"), "\(samePath.stderr)")
        // The same key under two names.
        try FileManager.default.copyItem(atPath: keys.path("channel.pub"), toPath: keys.path("copy.pub"))
        let sameKey = try keys.keys(["--add", keys.path("channel.pub"), "--remove", keys.path("copy.pub")])
        #expect(sameKey.status == 1)
        #expect(sameKey.stderrLines.count == 1)
        #expect(sameKey.stderr.contains("is both added and removed in one run; nothing was written; give it to --add or to --remove, not both"), "\(sameKey.stderr)")
        #expect(!FileManager.default.fileExists(atPath: keys.keysFile.path))
    }
}
