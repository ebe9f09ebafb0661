import Foundation
@testable import Reseed
import ReseedPackaging
import ReseedSystem
import Testing

@Suite struct ManifestTests {
    static let valid = SeedManifest(
        facts: SeedFacts(
            name: "triage", version: "2.0.0", file: "triage.sqlite", size: 8192,
            sha256: String(repeating: "ab", count: 32), userVersion: 3, applicationID: SeedMetadata.applicationID, pageSize: 4096),
        steps: [.init(id: "0001_schema.sql", checksum: String(repeating: "cd", count: 32))])

    func decode(_ text: String) throws(ReseedError) -> SeedManifest {
        try SeedManifest.decode(Array(text.utf8), path: "/bundle/triage.manifest.json")
    }

    func replacing(_ key: String, with json: String?) -> String {
        var manifest = Self.valid
        manifest.steps = []
        let encoded = String(decoding: manifest.encoded(), as: UTF8.self)
        let lines = encoded.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        return lines.compactMap { line in
            guard line.hasPrefix("  \"\(key)\":") else { return line }
            return json.map { "  \"\(key)\": \($0)" + (line.hasSuffix(",") ? "," : "") }
        }.joined(separator: "\n")
    }

    @Test func encodedManifestDecodesToTheSameValue() throws {
        #expect(try decode(String(decoding: Self.valid.encoded(), as: UTF8.self)) == Self.valid)
    }

    @Test func contentHashIsOptionalAndChecked() throws {
        // A manifest written before content hashes still reads, as format 1.
        #expect(try decode(String(decoding: Self.valid.encoded(), as: UTF8.self)).contentHash == nil)
        var hashed = Self.valid
        hashed.contentHash = String(repeating: "0f", count: 32)
        let text = String(decoding: hashed.encoded(), as: UTF8.self)
        #expect(text.contains("\"contentHash\": \"\(String(repeating: "0f", count: 32))\"\n}"))
        #expect(try decode(text) == hashed)
        for bad in ["\"ABC\"", "\"\(String(repeating: "0F", count: 32))\"", "42", "null"] {
            let broken = text.replacingOccurrences(of: "\"\(String(repeating: "0f", count: 32))\"", with: bad)
            let error = try #require(throws: ReseedError.self) { try decode(broken) }
            #expect(error.field == "contentHash")
        }
    }

    @Test(arguments: [
        ("\"../escape.sqlite\"", "file"), ("\"/etc/passwd\"", "file"), ("\"..\"", "file"), ("\"\"", "file"),
        ("\"a\\u0000b\"", "file"), ("\"dir\\\\file\"", "file"),
        // A "/" followed by a combining mark is one Character but still a "/" byte: "../" then a
        // name outside the seed's folder, which a check by Characters let through.
        ("\"../\\u0301x.sqlite\"", "file"), ("\"a/\\u0331b.sqlite\"", "file"),
    ])
    func fileThatIsNotAPlainNameIsRejected(json: String, field: String) throws {
        let error = try #require(throws: ReseedError.self) { try decode(replacing("file", with: json)) }
        #expect(error.code == .invalidManifest)
        #expect(error.field == field)
        #expect(error.path == "/bundle/triage.manifest.json")
        #expect(error.description.contains("file"))
    }

    @Test(arguments: [
        ("format", "2"), ("format", "\"1\""), ("size", "-1"), ("size", "2199023255552"), ("size", "1000"),
        ("pageSize", "1000"), ("sha256", "\"xyz\""), ("name", "\"../x\""), ("name", "\".hidden\""), ("version", "\"\""),
        ("userVersion", "1.5"), ("steps", "{}"),
    ])
    func badFieldIsRejectedNamingIt(field: String, json: String) throws {
        let error = try #require(throws: ReseedError.self) { try decode(replacing(field, with: json)) }
        #expect(error.code == .invalidManifest)
        #expect(error.field == field)
    }

    @Test(arguments: ["format", "name", "version", "file", "size", "sha256", "userVersion", "applicationID", "pageSize"])
    func missingFieldIsRejectedNamingIt(field: String) throws {
        let error = try #require(throws: ReseedError.self) { try decode(replacing(field, with: nil)) }
        #expect(error.field == field)
        #expect(error.message.contains("missing"))
    }

    @Test(arguments: [
        ("2" + String(repeating: "\u{301}", count: 10_000), "bytes of UTF-8"),
        (String(repeating: "9", count: 65), "65 bytes"),
        ("2.0\u{7F}", "U+007F, a control character"),
        ("2.0\u{85}", "U+0085, a control character"),
        ("2.0\u{2028}", "U+2028, a separator character"),
        ("2.0 beta", "U+0020, a separator character"),
        ("2.0\u{200B}", "U+200B, a format character"),
        ("2.0\u{E000}", "not an assigned character"),
    ])
    func versionOutsideTheLimitsIsRejected(version: String, why: String) throws {
        #expect(SeedManifest.versionProblem(version)?.contains(why) == true)
        let error = try #require(throws: ReseedError.self) { try decode(replacing("version", with: JSONNode.quote(version))) }
        #expect(error.field == "version")
        #expect(error.message.contains(why))
        #expect(error.description.utf8.count < 400)
    }

    @Test(arguments: ["2.0.0", "1.0.0-beta.1+exp.sha.5114f85", "2026.11-été", String(repeating: "é", count: 32)])
    func versionsWithinTheLimitsAreAccepted(version: String) throws {
        #expect(SeedManifest.versionProblem(version) == nil)
        #expect(try decode(replacing("version", with: JSONNode.quote(version))).version == version)
    }

    @Test func longestNameAndVersionFitEveryDerivedFileName() throws {
        let name = String(repeating: "n", count: SeedManifest.maximumNameBytes)
        let version = String(repeating: "v", count: SeedManifest.maximumVersionBytes)
        #expect(SeedManifest.isValidStoreName(name))
        #expect(!SeedManifest.isValidStoreName(name + "n"))
        #expect(SeedManifest.versionProblem(version) == nil)
        let derived = [
            ChannelManifest.seedFileName(name: name, version: version),
            ".\(name).sqlite.reseed-download-\(String(repeating: "f", count: 16)).etag",
            "\(name).sqlite.invalid-20261123T000000Z-0123abcd",
        ]
        let temporaries = derived.map { ".\($0).reseed-tmp-\(String(repeating: "f", count: 16))" }
        for file in derived + temporaries {
            #expect(file.utf8.count <= 255, "\(file.utf8.count) bytes")
        }
    }

    @Test func manifestOverOneMebibyteIsRefusedUnread() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("manifest-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("big.manifest.json")
        try Data(repeating: 0x20, count: (1 << 20) + 1).write(to: url)
        let error = try #require(throws: ReseedError.self) { try SeedManifest.read(from: url) }
        #expect(error.code == .invalidManifest)
        #expect(error.message.contains("limit"))
    }

    @Test func notJSONIsRejectedWithWhere() throws {
        let error = try #require(throws: ReseedError.self) { try decode("{\"format\": 1,\n  oops}") }
        #expect(error.code == .invalidManifest)
        #expect(error.message.contains("line 2"))
    }

    @Test func folderWithTwoManifestsAsksWhichOne() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("manifests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Self.valid.encoded().write(to: directory.appendingPathComponent("a.manifest.json"))
        try Self.valid.encoded().write(to: directory.appendingPathComponent("b.manifest.json"))
        let error = try #require(throws: ReseedError.self) { try Seed(at: directory) }
        #expect(error.code == .seedNotFound)
        #expect(error.message.contains("2 manifests"))
    }

    /// The database file names its seed too: the manifest beside it, if it names that file.
    @Test func theSeedDatabaseFileFindsItsManifestBesideIt() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("manifests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = directory.appendingPathComponent("triage.sqlite")
        try Data().write(to: database)
        let missing = try #require(throws: ReseedError.self) { try Seed(at: database) }
        #expect(missing.code == .seedNotFound)
        #expect(missing.message == "this is a seed database; its manifest triage.manifest.json is not beside it")

        try Self.valid.encoded().write(to: directory.appendingPathComponent("triage.manifest.json"))
        let seed = try Seed(at: database)
        #expect(seed.manifest == Self.valid)
        #expect(seed.fileURL.lastPathComponent == "triage.sqlite")

        var other = Self.valid
        other.file = "other.sqlite"
        try other.encoded().write(to: directory.appendingPathComponent("triage.manifest.json"))
        let mismatch = try #require(throws: ReseedError.self) { try Seed(at: database) }
        #expect(mismatch.code == .seedNotFound)
        #expect(mismatch.message.contains("names another file: other.sqlite"))
    }

    @Test func semanticVersionOrderFollowsTheSpecification() {
        let ordered = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.10.0", "2.0.0"]
        for (older, newer) in zip(ordered, ordered.dropFirst()) {
            #expect(SeedVersion(newer).change(from: SeedVersion(older)) == .upgrade, "\(older) < \(newer)")
            #expect(SeedVersion(older).change(from: SeedVersion(newer)) == .downgrade, "\(newer) > \(older)")
        }
        #expect(SeedVersion("1.0.0+build.1").change(from: SeedVersion("1.0.0+build.2")) == nil)
        #expect(!SeedVersion("2026-spring").isOrdered)
    }
}
