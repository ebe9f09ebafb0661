#if canImport(Glibc)
import Glibc
#endif
import Foundation
import GRDB
import Reseed
import ReseedPackaging
import ReseedTesting
import ReseedTestSupport
import Testing

/// `reseed keygen`, `publish` and `update`, run as the built binary against `channel_server.py`.
@Suite(.timeLimit(.minutes(10))) struct UpdateCommandTests {
    @Test func keygenRemovesTheTempFileAKilledKeygenLeft() throws {
        let sandbox = try TemporaryDirectory()
        let keys = sandbox.appending("keys")
        try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true)
        // What a keygen killed between writing and renaming leaves: a hidden copy of a private key.
        let leftover = keys.appendingPathComponent(".channel.key.reseed-tmp-00000000deadbeef")
        try Data("a private key\n".utf8).write(to: leftover)
        let made = try ReseedBinary.run(["keygen", "--private-key", keys.appendingPathComponent("channel.key").path,
                                         "--public-key", keys.appendingPathComponent("channel.pub").path])
        #expect(made.status == 0)
        #expect(!FileManager.default.fileExists(atPath: leftover.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: keys.path).sorted() == ["channel.key", "channel.pub"])
    }

    @Test func keygenRefusesToOverwriteAndMakesThePrivateKey0600() throws {
        let sandbox = try TemporaryDirectory()
        let keys = sandbox.appending("keys")
        let privateKey = keys.appendingPathComponent("channel.key")
        let publicKey = keys.appendingPathComponent("channel.pub")
        let made = try ReseedBinary.run(["keygen", "--private-key", privateKey.path, "--public-key", publicKey.path, "--json"])
        #expect(made.status == 0)
        #expect(made.stderr == "")
        let mode = try FileManager.default.attributesOfItem(atPath: privateKey.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let publicText = try String(contentsOf: publicKey, encoding: .utf8)
        #expect(publicText.hasSuffix("\n") && publicText.split(separator: "\n").count == 1)
        #expect(try "reseed-public-key-ed25519 " + #require(jsonObject(made.stdout)["publicKeyBase64"] as? String) + "\n" == publicText)
        #expect(try ChannelPrivateKey(contentsOf: privateKey).publicKey == ChannelPublicKey(contentsOf: publicKey))
        let secret = try Data(contentsOf: privateKey)

        // Either file existing stops it, and nothing is written.
        let again = try ReseedBinary.run(["keygen", "--private-key", privateKey.path, "--public-key", keys.appendingPathComponent("other.pub").path])
        #expect(again.status == 1)
        #expect(again.stdout == "")
        #expect(again.stderrLines.count == 1)
        #expect(again.stderr == "reseed: \(privateKey.path): refusing to overwrite an existing key file: file exists; remove it or choose another name\n")
        #expect(try Data(contentsOf: privateKey) == secret)
        #expect(!FileManager.default.fileExists(atPath: keys.appendingPathComponent("other.pub").path))

        let publicExists = try ReseedBinary.run(["keygen", "--private-key", keys.appendingPathComponent("new.key").path, "--public-key", publicKey.path])
        #expect(publicExists.status == 1)
        #expect(publicExists.stderr.contains("refusing to overwrite"))
        #expect(!FileManager.default.fileExists(atPath: keys.appendingPathComponent("new.key").path))
        #expect(try String(contentsOf: publicKey, encoding: .utf8) == publicText)
    }

    @Test func publishThenUpdateThroughTheBinary() throws {
        let sandbox = try ChannelSandbox()
        let keys = sandbox.directory.appending("keys")
        let privateKey = keys.appendingPathComponent("channel.key").path
        let publicKey = keys.appendingPathComponent("channel.pub").path
        #expect(try ReseedBinary.run(["keygen", "--private-key", privateKey, "--public-key", publicKey]).status == 0)
        let bundled = try sandbox.seed("1.0.0")
        let data = sandbox.dataDirectory.path
        #expect(try ReseedBinary.run(["launch", "--seed", bundled.manifestURL.path, "--data-dir", data]).status == 0)

        let newer = try sandbox.seed("1.1.0", rows: 4)
        let published = try ReseedBinary.run(["publish", newer.manifestURL.deletingLastPathComponent().path, "--channel", sandbox.channel.path, "--private-key", privateKey])
        #expect(published.status == 0)
        let size = { (name: String) in try #require(try FileManager.default.attributesOfItem(atPath: sandbox.channel.appendingPathComponent(name).path)[.size] as? Int) }
        #expect(published.stdout == "Published items 1.1.0 to \(sandbox.channel.path): items-1.1.0.sqlite (\(newer.manifest.size) bytes), "
            + "items-1.1.0.sqlite.gz (\(try size("items-1.1.0.sqlite.gz")) bytes), items-1.1.0.sqlite.xz (\(try size("items-1.1.0.sqlite.xz")) bytes), "
            + "channel.json signed, valid until \(try expiry(in: sandbox.channel)).\n")
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: sandbox.channel.path).filter { !$0.hasPrefix(".") })
                == ["channel.json", "channel.json.sig", "items-1.1.0.sqlite", "items-1.1.0.sqlite.gz", "items-1.1.0.sqlite.xz"])

        let update = ["update", "--channel", sandbox.server.url.absoluteString, "--public-key", publicKey,
                      "--seed", bundled.manifestURL.path, "--data-dir", data, "--json", "--timeout", "120"]
        let first = try ReseedBinary.run(update)
        #expect(first.status == 0)
        #expect(first.stderr == "")
        #expect(first.stdout.split(separator: "\n").count == 1)
        let updated = try jsonObject(first.stdout)
        #expect(updated["outcome"] as? String == "updated")
        #expect(updated["version"] as? String == "1.1.0")
        #expect(updated["previousVersion"] as? String == "1.0.0")
        // No earlier release in the channel: no delta; the compressed seed came down, in its smaller encoding
        // (for a seed this small, xz's headers make the gzip the smaller).
        #expect(updated["method"] as? String == "full")
        #expect(updated["fromContentHash"] as? String == bundled.manifest.contentHash)
        #expect((updated["downloadedBytes"] as? NSNumber)?.intValue == min(try size("items-1.1.0.sqlite.gz"), try size("items-1.1.0.sqlite.xz")))
        #expect(try sandbox.labels() == ["1.1.0-1", "1.1.0-2", "1.1.0-3", "1.1.0-4"])

        let second = try ReseedBinary.run(update)
        #expect(second.status == 0)
        let upToDate = try jsonObject(second.stdout)
        #expect(upToDate["outcome"] as? String == "upToDate")
        #expect(upToDate["version"] as? String == "1.1.0")
        #expect(upToDate["previousVersion"] as? String == "1.1.0")
        #expect(upToDate["notModified"] as? Bool == true)

        // The next launch keeps the download; `status` agrees.
        let launch = try ReseedBinary.run(["launch", "--seed", bundled.manifestURL.path, "--data-dir", data, "--json"])
        #expect(launch.status == 0)
        let launched = try jsonObject(launch.stdout)
        #expect(launched["outcome"] as? String == "upToDate")
        #expect(launched["version"] as? String == "1.1.0")
        #expect(launched["source"] as? String == "download")
        let status = try jsonObject(try ReseedBinary.run(["status", "--seed", bundled.manifestURL.path, "--data-dir", data, "--json"]).stdout)
        #expect(status["upToDate"] as? Bool == true)
        #expect(status["source"] as? String == "download")

        // Publishing the same seed again changes nothing.
        let again = try ReseedBinary.run(["publish", newer.manifestURL.path, "--channel", sandbox.channel.path, "--private-key", privateKey, "--json"])
        #expect(again.status == 0)
        #expect(try jsonObject(again.stdout)["copied"] as? Bool == false)
    }

    /// Like `ssh`: a private key its group or others may read or write is refused, with the fix in the message.
    @Test(arguments: [0o666, 0o644, 0o640, 0o620, 0o604])
    func publishRefusesAPrivateKeyOthersMayReadOrWrite(mode: Int) throws {
        let sandbox = try ChannelSandbox()
        let keys = sandbox.directory.appending("keys")
        let privateKey = keys.appendingPathComponent("channel.key")
        _ = try ChannelPrivateKey.generate(privateKeyFile: privateKey, publicKeyFile: keys.appendingPathComponent("channel.pub"))
        let seed = try sandbox.seed("1.1.0")
        let publish = ["publish", seed.manifestURL.path, "--channel", sandbox.channel.path, "--private-key", privateKey.path]
        try #require(chmod(privateKey.path, mode_t(mode)) == 0)

        let refused = try ReseedBinary.run(publish)
        #expect(refused.status == 1)
        #expect(refused.stdout == "")
        #expect(refused.stderr == "reseed: \(privateKey.path): the private key file's mode is \(String(mode, radix: 8)): its group or others may read or write it, and whoever reads it can sign what every copy of the app installs; make it private with: chmod 600 '\(privateKey.path)'\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.channel.path).isEmpty, "nothing is published")
        let error = #expect(throws: PackagingError.self) { try ChannelPrivateKey(contentsOf: privateKey) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.step == .readKey)

        try #require(chmod(privateKey.path, 0o600) == 0)
        #expect(try ReseedBinary.run(publish).status == 0)
        #expect(FileManager.default.fileExists(atPath: sandbox.channel.appendingPathComponent(ChannelManifest.fileName).path))
    }

    @Test func updateErrorsAreOneLineNamingTheStepAndTheURL() throws {
        let sandbox = try ChannelSandbox()
        let keys = sandbox.directory.appending("keys")
        let publicKey = keys.appendingPathComponent("channel.pub")
        _ = try ChannelPrivateKey.generate(privateKeyFile: keys.appendingPathComponent("other.key"), publicKeyFile: publicKey)
        let bundled = try sandbox.seed("1.0.0")
        let data = sandbox.dataDirectory.path
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0"))
        func update(_ channel: String, _ more: [String] = []) throws -> ReseedBinary.Result {
            try ReseedBinary.run(["update", "--channel", channel, "--public-key", publicKey.path, "--seed", bundled.manifestURL.path,
                                  "--data-dir", data, "--json", "--timeout", "120"] + more)
        }

        let wrongKey = try update(sandbox.server.url.absoluteString)
        #expect(wrongKey.status == 1)
        #expect(wrongKey.stdout == "")
        #expect(wrongKey.stderrLines.count == 1)
        #expect(wrongKey.stderr.hasPrefix("reseed: \(sandbox.server.url.absoluteString)channel.json: channel.json.sig is not a signature of channel.json by the app's public key"))
        #expect(wrongKey.stderr.hasSuffix("; check that the public key is the one made with the channel's private key\n"))

        let missing = try update(sandbox.server.url.absoluteString + "nowhere/")
        #expect(missing.status == 1)
        #expect(missing.stderrLines.count == 1)
        #expect(missing.stderr.lowercased() == "reseed: \(sandbox.server.url.absoluteString)nowhere/channel.json: HTTP 404 not found; check the channel's URL and the network, then try again\n".lowercased())

        try sandbox.server.set(["trickle": [ChannelManifest.fileName: 0.2]])
        let trickled = try update(sandbox.server.url.absoluteString, ["--manifest-deadline", "0.5"])
        #expect(trickled.status == 1)
        #expect(trickled.stderr == "reseed: \(sandbox.server.url.absoluteString)channel.json: the transfer took longer than 0.5 seconds in all (the server sends too slowly); check the channel's URL and the network, then try again\n")

        sandbox.server.stop()
        let refused = try update(sandbox.server.url.absoluteString)
        #expect(refused.status == 1)
        #expect(refused.stderrLines.count == 1)
        #expect(refused.stderr.hasPrefix("reseed: \(sandbox.server.url.absoluteString)channel.json: cannot connect: "), "\(refused.stderr)")
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])

        let bad = try ReseedBinary.run(["update", "--channel", "ftp://example.com/", "--public-key", publicKey.path])
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("--channel must be an http or https URL"))
    }
}

/// The `expires` of the channel's `channel.json`, as `reseed publish` prints it.
func expiry(in channel: URL) throws -> String {
    let url = channel.appendingPathComponent(ChannelManifest.fileName)
    let manifest = try ChannelManifest.decode(Array(try Data(contentsOf: url)), source: url.path)
    return try #require(manifest.expires.map(RFC3339.string))
}
