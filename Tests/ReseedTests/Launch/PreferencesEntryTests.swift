import Foundation
import Logging
@testable import Reseed
import ReseedTestSupport
import Testing

/// The store's entry in the preferences, typed: every field Reseed keeps is read as its type
/// (a malformed one as nil), and writing any of them keeps every other byte of the file.
@Suite struct PreferencesEntryTests {
    static let hash = String(repeating: "ab", count: 32)

    @Test func everyFieldIsReadTypedAndAMalformedOneAsNil() throws {
        let text = """
            {"reseed": {"items": {"version": "2.0.0", "source": "download", "userStore": "items-user",
              "contentHash": "\(Self.hash)", "userStoreChecked": "f1", "later": [1, 2],
              "channel": {"url": "https://x.test/items/", "etag": "\\"e1\\"", "version": "2.0.0"}},
             "bad": {"version": 2, "source": "elsewhere", "contentHash": "ABC", "channel": {"url": "u"}}}}
            """
        let entries = PreferencesFile.parse(Array(text.utf8)).entries
        let items = try #require(entries["items"])
        #expect(items.version == "2.0.0")
        #expect(items.source == .download)
        #expect(items.userStore == "items-user")
        #expect(items.contentHash == Self.hash)
        #expect(items.userStoreChecked == "f1")
        #expect(items.channel == ChannelValidators(url: "https://x.test/items/", etag: "\"e1\"", lastModified: nil, version: "2.0.0"))
        let bad = try #require(entries["bad"])
        #expect(bad.version == nil && bad.source == nil && bad.contentHash == nil && bad.channel == nil && bad.userStore == nil)
    }

    @Test func writingEveryFieldKeepsTheOtherBytes() throws {
        let directory = try TemporaryDirectory(prefix: "reseed-prefs")
        let url = directory.appending("preferences.json")
        let original = """
            {
              "theme": "dark",   "reseed": {"items": {"version": "1.0.0", "future": {"a": [1, 2.50, "x"]}}, "other": {"version": "9"}},
              "z": null
            }

            """
        try Data(original.utf8).write(to: url)
        let preferences = PreferencesFile(url: url)
        let validators = ChannelValidators(url: "https://x.test/", etag: "\"e\"", lastModified: nil, version: "2.0.0")
        _ = try preferences.record(
            [.version("2.0.0"), .source(.download), .userStore("items-user"), .contentHash(Self.hash), .userStoreChecked("f2"), .channel(validators)],
            for: "items", timeout: .seconds(5), logger: Logger(label: "test"))
        let written = try String(contentsOf: url, encoding: .utf8)
        #expect(written.contains(#""future": {"a": [1, 2.50, "x"]}"#))
        #expect(written.hasPrefix("{\n  \"theme\": \"dark\",   \"reseed\": {\"items\": {\"version\": \"2.0.0\""))
        #expect(written.contains(#""other": {"version": "9"}}"#))
        #expect(written.hasSuffix("\"z\": null\n}\n"))
        let entry = try #require(preferences.readEntries().entries["items"])
        #expect(entry.version == "2.0.0" && entry.source == .download && entry.userStore == "items-user")
        #expect(entry.contentHash == Self.hash && entry.userStoreChecked == "f2" && entry.channel == validators)

        _ = try preferences.record([.version("3.0.0")], for: "items", clearing: [.contentHash, .userStore], timeout: .seconds(5), logger: Logger(label: "test"))
        let cleared = try #require(preferences.readEntries().entries["items"])
        #expect(cleared.version == "3.0.0" && cleared.contentHash == nil && cleared.userStore == nil && cleared.channel == validators)
    }
}
