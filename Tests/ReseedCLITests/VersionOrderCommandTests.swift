import Foundation
import Reseed
import ReseedTestSupport
import Testing

/// One version order for `package`, `publish` and `update`: SemVer 2.0, or dotted numbers such as
/// the calendar versions data releases use, compared number by number.
@Suite(.timeLimit(.minutes(10))) struct VersionOrderCommandTests {
    /// A project whose `reseed.json` names `version`, with one step per label in `labels`.
    static func writeProject(_ folder: URL, version: String, labels: [String]) throws {
        let migrations = folder.appendingPathComponent("Migrations")
        try FileManager.default.createDirectory(at: migrations, withIntermediateDirectories: true)
        try Data(#"{"name": "items", "version": "\#(version)", "migrations": "Migrations", "output": "SeedData"}"#.utf8)
            .write(to: folder.appendingPathComponent("reseed.json"))
        try Data("CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT NOT NULL);\n".utf8).write(to: migrations.appendingPathComponent("0001_item.sql"))
        for (index, label) in labels.enumerated() {
            try Data("INSERT INTO item (label) VALUES ('\(label)');\n".utf8)
                .write(to: migrations.appendingPathComponent(String(format: "%04d_rows.sql", index + 2)))
        }
    }

    @Test func calendarVersionsPackagePublishAndUpdateInOrder() throws {
        let sandbox = try ChannelSandbox()
        let project = sandbox.directory.appending("project")
        let privateKey = sandbox.directory.appending("channel.key").path, publicKey = sandbox.directory.appending("channel.pub").path
        #expect(try ReseedBinary.run(["keygen", "--private-key", privateKey, "--public-key", publicKey]).status == 0)
        let seedData = project.appendingPathComponent("SeedData")
        let bundled = sandbox.directory.appending("bundled")

        try Self.writeProject(project, version: "2024.1", labels: ["2024.1-1"])
        let first = try ReseedBinary.run(["package"], in: project)
        #expect(first.status == 0, "\(first.stderr)")
        try FileManager.default.copyItem(at: seedData, to: bundled)
        #expect(try ReseedBinary.run(["launch", "--seed", bundled.path, "--data-dir", sandbox.dataDirectory.path]).status == 0)
        #expect(try ReseedBinary.run(["publish", seedData.path, "--channel", sandbox.channel.path, "--private-key", privateKey]).status == 0)

        try Self.writeProject(project, version: "2024.2", labels: ["2024.1-1", "2024.2-1"])
        let second = try ReseedBinary.run(["package"], in: project)
        #expect(second.status == 0, "\(second.stderr)")
        let published = try ReseedBinary.run(["publish", seedData.path, "--channel", sandbox.channel.path, "--private-key", privateKey])
        #expect(published.status == 0, "\(published.stderr)")

        let update = try ReseedBinary.run(["update", "--channel", sandbox.server.url.absoluteString, "--public-key", publicKey,
                                           "--seed", bundled.path, "--data-dir", sandbox.dataDirectory.path, "--json", "--timeout", "120"])
        #expect(update.status == 0, "\(update.stderr)")
        let outcome = try jsonObject(update.stdout)
        #expect(outcome["outcome"] as? String == "updated")
        #expect(outcome["version"] as? String == "2024.2")
        #expect(outcome["previousVersion"] as? String == "2024.1")
        #expect(try sandbox.labels() == ["2024.1-1", "2024.2-1"])

        // 2024.1 again over 2024.2: refused, the channel unchanged; then on purpose.
        let channelFile = sandbox.channel.appendingPathComponent("channel.json")
        let offered = try Data(contentsOf: channelFile)
        let lower = try ReseedBinary.run(["publish", bundled.path, "--channel", sandbox.channel.path, "--private-key", privateKey])
        #expect(lower.status == 1)
        #expect(lower.stderr == "reseed: \(channelFile.path): the channel offers items 2024.2; 2024.1 is not newer, so publishing it would roll the channel back (devices that have 2024.2 refuse it); publish a higher version, or allow the downgrade on purpose (reseed publish --allow-downgrade)\n")
        #expect(try Data(contentsOf: channelFile) == offered)
        let allowed = try ReseedBinary.run(["publish", bundled.path, "--channel", sandbox.channel.path, "--private-key", privateKey, "--allow-downgrade", "--json"])
        #expect(allowed.status == 0, "\(allowed.stderr)")
        #expect(try jsonObject(allowed.stdout)["version"] as? String == "2024.1")
    }

    @Test func publishRefusesANegativeDeltaCountInASentence() throws {
        let sandbox = try ChannelSandbox()
        let seed = try sandbox.seed("1.0.0")
        let privateKey = sandbox.directory.appending("channel.key").path
        #expect(try ReseedBinary.run(["keygen", "--private-key", privateKey, "--public-key", sandbox.directory.appending("channel.pub").path]).status == 0)
        let publish = try ReseedBinary.run(["publish", seed.manifestURL.path, "--channel", sandbox.channel.path, "--private-key", privateKey, "--deltas", "-1"])
        #expect(publish.status != 0)
        #expect(publish.stderr.hasPrefix("Error: --deltas must be between 0 and \(ChannelManifest.maximumDeltas)\n"), "\(publish.stderr)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.channel.appendingPathComponent("channel.json").path))
    }

    @Test func packageRefusesAVersionThatCannotBeOrdered() throws {
        let directory = try TemporaryDirectory(prefix: "reseed-version")
        let project = directory.appending("project")
        try Self.writeProject(project, version: "banana", labels: ["a"])
        let configured = try ReseedBinary.run(["package"], in: project)
        #expect(configured.status == 1)
        let file = project.appendingPathComponent("reseed.json").standardizedFileURL.path
        #expect(configured.stderr == "reseed: \(file): \"version\": \"banana\" cannot be ordered, so no device could tell whether it is newer: a version is \(SeedVersion.grammar); fix reseed.json, or give the value as an option\n")
        #expect(!FileManager.default.fileExists(atPath: project.appendingPathComponent("SeedData").path))

        let flagged = try ReseedBinary.run(["package", "--version", "2024.1-spring"], in: project)
        #expect(flagged.status != 0)
        #expect(flagged.stderr.hasPrefix("Error: --version \"2024.1-spring\" cannot be ordered, so no device could tell whether it is newer: a version is \(SeedVersion.grammar)\n"), "\(flagged.stderr)")
        #expect(!FileManager.default.fileExists(atPath: project.appendingPathComponent("SeedData").path))

        // A calendar version is one.
        let calendar = try ReseedBinary.run(["package", "--version", "2024.07.2"], in: project)
        #expect(calendar.status == 0, "\(calendar.stderr)")
    }
}
