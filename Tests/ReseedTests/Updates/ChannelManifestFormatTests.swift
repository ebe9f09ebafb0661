import Foundation
import Reseed
import ReseedPackaging
import Testing

/// `channel.json` format 2: the content hash, the compressed seed and the deltas, read as a
/// format-1 reader would ignore them, and every bad field refused naming it.
struct ChannelManifestFormatTests {
    static let hash = String(repeating: "ab", count: 32)
    static let other = String(repeating: "cd", count: 32)

    static func text(_ extra: String) -> String {
        """
        {
          "format": 2,
          "minimumFormat": 1,
          "name": "items",
          "version": "1.1.0",
          "file": "items-1.1.0.sqlite",
          "size": 8192,
          "sha256": "\(hash)",
          "userVersion": 0,
          "applicationID": 0,
          "pageSize": 4096\(extra)
        }
        """
    }

    static func decode(_ extra: String) throws(ReseedError) -> ChannelManifest {
        try ChannelManifest.decode(Array(text(extra).utf8), source: "channel.json")
    }

    @Test func aFormat2ManifestRoundTripsThroughItsEncoding() throws {
        let manifest = try Self.decode("""
            ,
              "contentHash": "\(Self.other)",
              "compressed": {"encoding": "gzip", "file": "items-1.1.0.sqlite.gz", "size": 900, "sha256": "\(Self.hash)"},
              "deltas": [
                {"fromVersion": "1.0.0", "fromContentHash": "\(Self.other)", "encoding": "gzip", "file": "items-1.1.0.from-1.0.0.delta.gz", "size": 80, "sha256": "\(Self.hash)"}
              ]
            """)
        #expect(manifest.contentHash == Self.other)
        #expect(manifest.compressed == ChannelManifest.File(file: "items-1.1.0.sqlite.gz", size: 900, sha256: Self.hash))
        #expect(manifest.deltas.map(\.fromVersion) == ["1.0.0"])
        let again = try ChannelManifest.decode(Array(manifest.encoded()), source: "again")
        #expect(again == manifest)
        #expect(try ChannelManifest.decode(Array(again.encoded()), source: "twice").encoded() == manifest.encoded())
    }

    @Test func aFormat1ManifestHasNoneOfThem() throws {
        let manifest = try Self.decode("")
        #expect(manifest.contentHash == nil && manifest.compressed == nil && manifest.deltas.isEmpty)
    }

    @Test func anEntryInAnUnknownEncodingIsSkippedNotRefused() throws {
        let manifest = try Self.decode("""
            ,
              "compressed": {"encoding": "zstd", "file": "items.sqlite.zst", "size": 900, "sha256": "\(Self.hash)"},
              "deltas": [
                {"fromVersion": "1.0.0", "fromContentHash": "\(Self.other)", "encoding": "brotli", "file": "d.br", "size": 80, "sha256": "\(Self.hash)"},
                {"fromVersion": "0.9.0", "fromContentHash": "\(Self.hash)", "encoding": "gzip", "file": "d.gz", "size": 80, "sha256": "\(Self.hash)"}
              ]
            """)
        #expect(manifest.compressed == nil)
        #expect(manifest.deltas.map(\.fromVersion) == ["0.9.0"])
    }

    @Test(arguments: [
        (#", "contentHash": "ABC""#, "contentHash"),
        (#", "compressed": {"encoding": "gzip", "file": "../x", "size": 9, "sha256": "HASH"}"#, "compressed"),
        (#", "compressed": {"encoding": "gzip", "file": "x.gz", "size": 0, "sha256": "HASH"}"#, "compressed"),
        (#", "compressed": {"encoding": "gzip", "file": "x.gz", "size": 9}"#, "compressed"),
        (#", "compressed": [1]"#, "compressed"),
        (#", "deltas": {"a": 1}"#, "deltas"),
        (#", "deltas": [{"fromVersion": "1", "encoding": "gzip", "file": "d.gz", "size": 9, "sha256": "HASH"}]"#, "deltas[0]"),
        // A delta larger than the seed it leads to (8192 bytes) is refused.
        (#", "deltas": [{"fromVersion": "1", "fromContentHash": "HASH", "encoding": "gzip", "file": "d.gz", "size": 8193, "sha256": "HASH"}]"#, "deltas[0]"),
    ])
    func aBadFieldIsRefusedNamingIt(extra: String, field: String) {
        let error = #expect(throws: ReseedError.self) { try Self.decode(extra.replacingOccurrences(of: "HASH", with: Self.hash)) }
        #expect(error?.code == .invalidManifest)
        #expect(error?.message.contains("\"\(field)\"") == true, "\(error?.message ?? "")")
    }

    @Test func moreDeltasThanTheLimitAreRefused() {
        let entry = #"{"fromVersion": "1", "fromContentHash": "HASH", "encoding": "gzip", "file": "d.gz", "size": 9, "sha256": "HASH"}"#
        let many = Array(repeating: entry, count: ChannelManifest.maximumDeltas + 1).joined(separator: ", ")
        let error = #expect(throws: ReseedError.self) { try Self.decode(", \"deltas\": [\(many)]".replacingOccurrences(of: "HASH", with: Self.hash)) }
        #expect(error?.message.contains("at most \(ChannelManifest.maximumDeltas)") == true)
    }

    @Test func deltaFileNamesAreSafe() {
        #expect(ChannelManifest.deltaFileName(name: "items", version: "1.1.0", fromVersion: "1.0.0") == "items-1.1.0.from-1.0.0.delta.gz")
        #expect(ChannelManifest.deltaFileName(name: "items", version: "2.0/1", fromVersion: "1 0") == "items-2.0_1.from-1_0.delta.gz")
    }
}
