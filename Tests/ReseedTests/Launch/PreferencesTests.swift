import Foundation
import Reseed
import ReseedTesting
import Testing

@Suite struct PreferencesTests {
    @Test func otherKeysOfTheFileAreKeptByteForByte() throws {
        let sandbox = try LaunchSandbox()
        try FileManager.default.createDirectory(at: sandbox.dataDirectory, withIntermediateDirectories: true)
        let original = """
            {
              "theme": "dark",
              "ratio": 1.0,
              "big": 12345678901234567890,
              "escaped": "caf\\u00e9 \\/ ok",
              "nested": {"b": [1, 2, {"c": null}], "a": true},
              "reseed": {"other": {"version": "9", "note": "kept"}}
            }

            """
        try Data(original.utf8).write(to: sandbox.preferencesURL)
        let first = try sandbox.seed("1.0.0")
        let firstHash = try #require(first.manifest.contentHash)
        try sandbox.install(first)
        let written = withoutInstallFields(try String(contentsOf: sandbox.preferencesURL, encoding: .utf8))
        let expected = original.replacingOccurrences(
            of: #""reseed": {"other": {"version": "9", "note": "kept"}}"#,
            with: #""reseed": {"other": {"version": "9", "note": "kept"}, "items": {"version": "1.0.0", "source": "bundle", "contentHash": ""#
                + firstHash + #""}}"#)
        #expect(written == expected)

        let second = try sandbox.seed("2.0.0")
        try sandbox.install(second)
        let rewritten = withoutInstallFields(try String(contentsOf: sandbox.preferencesURL, encoding: .utf8))
        #expect(rewritten == expected.replacingOccurrences(of: #""items": {"version": "1.0.0", "source": "bundle", "contentHash": ""# + firstHash,
                                                           with: #""items": {"version": "2.0.0", "source": "bundle", "contentHash": ""# + (second.manifest.contentHash ?? "")))
    }

    @Test func filePermissionsSurviveARewrite() throws {
        let sandbox = try LaunchSandbox()
        try FileManager.default.createDirectory(at: sandbox.dataDirectory, withIntermediateDirectories: true)
        try Data(#"{"token": "secret"}"#.utf8).write(to: sandbox.preferencesURL)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: sandbox.preferencesURL.path)
        try sandbox.install(try sandbox.seed("1.0.0"))
        let mode = try FileManager.default.attributesOfItem(atPath: sandbox.preferencesURL.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test(arguments: ["{not json", "[1, 2, 3]", "", "\"just a string\"", "{\"a\": 1} trailing"])
    func corruptPreferencesAreMovedAsideAndTheSeedInstalled(content: String) throws {
        let sandbox = try LaunchSandbox()
        try FileManager.default.createDirectory(at: sandbox.dataDirectory, withIntermediateDirectories: true)
        try Data(content.utf8).write(to: sandbox.preferencesURL)
        let outcome = try sandbox.install(try sandbox.seed("1.0.0"))
        #expect(outcome.action == .installed)
        #expect(outcome.reason == .preferencesCorrupt)
        let aside = try #require(outcome.preferencesMovedAside)
        #expect(aside.lastPathComponent.hasPrefix("preferences.json.corrupt-"))
        #expect(try Data(contentsOf: aside) == Data(content.utf8))
        #expect(try sandbox.recordedVersion() == "1.0.0")
    }

    @Test func corruptPreferencesNextToTheShippedStoreKeepTheStore() throws {
        let sandbox = try LaunchSandbox()
        let seed = try sandbox.seed("1.0.0")
        try sandbox.install(seed)
        // The user's own write must survive: the store is kept, only the version is recorded again.
        let queue = try DatabaseQueueOpener.open(sandbox.storeURL)
        try queue.write { try $0.execute(sql: "INSERT INTO item (label) VALUES ('user')") }
        try queue.close()
        let before = try fileIdentity(sandbox.storeURL)
        try Data("{\"reseed\": ".utf8).write(to: sandbox.preferencesURL)
        let outcome = try sandbox.install(seed)
        #expect(outcome.action == .repaired)
        #expect(outcome.reason == .preferencesCorrupt)
        #expect(outcome.preferencesMovedAside != nil)
        #expect(try fileIdentity(sandbox.storeURL).inode == before.inode)
        #expect(try sandbox.labels().last == "user")
        #expect(try sandbox.recordedVersion() == "1.0.0")
    }

    @Test func missingPreferencesNextToTheShippedStoreKeepTheStore() throws {
        let sandbox = try LaunchSandbox()
        let seed = try sandbox.seed("1.0.0")
        try sandbox.install(seed)
        try FileManager.default.removeItem(at: sandbox.preferencesURL)
        let outcome = try sandbox.install(seed)
        #expect(outcome.action == .repaired)
        #expect(outcome.reason == .preferencesMissing)
        #expect(try sandbox.recordedVersion() == "1.0.0")
    }

    @Test func missingPreferencesNextToAnotherVersionInstall() throws {
        let sandbox = try LaunchSandbox()
        try sandbox.install(try sandbox.seed("1.0.0"))
        try FileManager.default.removeItem(at: sandbox.preferencesURL)
        let outcome = try sandbox.install(try sandbox.seed("2.0.0"))
        #expect(outcome.action == .installed)
        #expect(outcome.reason == .preferencesMissing)
        #expect(outcome.previousVersion == "1.0.0")
        #expect(outcome.change == .upgrade)
        #expect(try sandbox.labels().first == "2.0.0-1")
    }

    @Test func customPreferencesLocationIsUsed() throws {
        let sandbox = try LaunchSandbox()
        let custom = sandbox.directory.appending("settings/app.json")
        let launcher = sandbox.launcher(try sandbox.seed("1.0.0")) { $0.preferencesURL = custom }
        _ = try launcher.prepare()
        #expect(try PreferencesFile(url: custom).recordedVersion(of: "items") == "1.0.0")
        #expect(!FileManager.default.fileExists(atPath: sandbox.preferencesURL.path))
    }
}

import GRDB

enum DatabaseQueueOpener {
    static func open(_ url: URL) throws -> DatabaseQueue { try DatabaseQueue(path: url.path) }
}
