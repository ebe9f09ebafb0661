#if canImport(CLzma)
import Foundation
import Reseed
import ReseedPackaging
import ReseedTestSupport
import Testing

/// A channel offering each file in two encodings (gzip, and xz beside it): the updater downloads the
/// smallest it reads, older readers keep reading gzip, and an old manifest without xz still works.
@Suite(.timeLimit(.minutes(10))) struct ChannelEncodingTests {
    static let hash = String(repeating: "ab", count: 32)
    static let other = String(repeating: "cd", count: 32)

    static func file(_ encoding: String, _ size: Int64, _ name: String? = nil) -> ChannelManifest.File {
        ChannelManifest.File(encoding: encoding, file: name ?? "f.\(encoding)", size: size, sha256: hash)
    }

    /// The choice, as a table: the smallest encoding, the listed one on a tie, and never an alternative's alternatives.
    @Test(arguments: [
        ([], "gzip"),
        ([("xz", 60)], "xz"),
        ([("xz", 100)], "gzip"),
        ([("xz", 140)], "gzip"),
        ([("xz", 70), ("zz", 50)], "zz"),
        ([("zz", 50), ("xz", 50)], "zz"),
    ] as [([(String, Int64)], String)])
    func theSmallestEncodingIsChosen(alternatives: [(String, Int64)], chosen: String) {
        var gzip = Self.file("gzip", 100)
        gzip.alternatives = alternatives.map { Self.file($0.0, $0.1) }
        #expect(gzip.smallest.encoding == chosen)
        #expect(gzip.smallest.alternatives.isEmpty)
        #expect(gzip.encodings.count == alternatives.count + 1)
    }

    static func decode(_ extra: String) throws(ReseedError) -> ChannelManifest {
        try ChannelManifest.decode(Array(ChannelManifestFormatTests.text(extra).utf8), source: "channel.json")
    }

    @Test func alternativesAreReadAndRoundTripThroughTheEncoding() throws {
        let manifest = try Self.decode("""
            ,
              "compressed": {"encoding": "gzip", "file": "s.gz", "size": 900, "sha256": "\(Self.hash)",
                             "alternatives": [{"encoding": "xz", "file": "s.xz", "size": 600, "sha256": "\(Self.other)"}]},
              "deltas": [
                {"fromVersion": "1.0.0", "fromContentHash": "\(Self.other)", "encoding": "gzip", "file": "d.gz", "size": 80, "sha256": "\(Self.hash)",
                 "alternatives": [{"encoding": "zstd", "file": "d.zst", "size": 40, "sha256": "\(Self.hash)"},
                                  {"encoding": "xz", "file": "d.xz", "size": 70, "sha256": "\(Self.other)"}]}
              ]
            """)
        let compressed = try #require(manifest.compressed)
        #expect(compressed.encodings.map(\.file) == ["s.gz", "s.xz"])
        #expect(compressed.smallest.file == "s.xz")
        // The unknown zstd is skipped: xz is the smallest this Reseed reads.
        #expect(manifest.deltas.first?.file.encodings.map(\.file) == ["d.gz", "d.xz"])
        #expect(manifest.deltas.first?.file.smallest.file == "d.xz")
        let again = try ChannelManifest.decode(Array(manifest.encoded()), source: "again")
        #expect(again == manifest)
        // The gzip object keeps its own four members first: what a reader older than xz reads, ignoring the rest.
        let text = String(decoding: manifest.encoded(), as: UTF8.self)
        #expect(text.contains(#""compressed": {"encoding": "gzip", "file": "s.gz", "size": 900, "sha256": ""# + Self.hash + #"", "alternatives": ["#))
    }

    /// An alternative in an encoding this Reseed does not read leaves the file exactly as a reader
    /// that knows no alternatives sees it; a file in an unknown encoding with a readable alternative is that alternative.
    @Test func unknownEncodingsOnEitherSideAreSkipped() throws {
        let plain = try Self.decode(#", "compressed": {"encoding": "gzip", "file": "s.gz", "size": 900, "sha256": "\#(Self.hash)"}"#)
        let withUnknown = try Self.decode("""
            , "compressed": {"encoding": "gzip", "file": "s.gz", "size": 900, "sha256": "\(Self.hash)",
                             "alternatives": [{"encoding": "brotli", "file": "s.br", "size": 5, "sha256": "\(Self.hash)"}]}
            """)
        #expect(withUnknown == plain)
        let swapped = try Self.decode("""
            , "compressed": {"encoding": "brotli", "file": "s.br", "size": 5, "sha256": "\(Self.hash)",
                             "alternatives": [{"encoding": "xz", "file": "s.xz", "size": 600, "sha256": "\(Self.hash)"}]}
            """)
        #expect(swapped.compressed?.encodings.map(\.file) == ["s.xz"])
    }

    @Test(arguments: [
        (#", "compressed": {"encoding": "gzip", "file": "s.gz", "size": 9, "sha256": "HASH", "alternatives": {"a": 1}}"#, "compressed.alternatives"),
        (#", "compressed": {"encoding": "gzip", "file": "s.gz", "size": 9, "sha256": "HASH", "alternatives": [{"encoding": "xz", "file": "../s.xz", "size": 9, "sha256": "HASH"}]}"#,
         "compressed.alternatives[0]"),
        (#", "compressed": {"encoding": "gzip", "file": "s.gz", "size": 9, "sha256": "HASH", "alternatives": [ALT, ALT, ALT, ALT, ALT]}"#, "compressed.alternatives"),
    ])
    func aBadAlternativeIsRefusedNamingIt(extra: String, field: String) {
        let alternative = #"{"encoding": "xz", "file": "s.xz", "size": 9, "sha256": "HASH"}"#
        let text = extra.replacingOccurrences(of: "ALT", with: alternative).replacingOccurrences(of: "HASH", with: Self.hash)
        let error = #expect(throws: ReseedError.self) { try Self.decode(text) }
        #expect(error?.code == .invalidManifest)
        #expect(error?.message.contains("\"\(field)\"") == true, "\(error?.message ?? "")")
    }


    /// The path the update asked for after `before` requests, past the manifest, its signature and keys.json.
    func downloads(_ sandbox: ChannelSandbox, after before: Int) throws -> [String] {
        try sandbox.server.requests().dropFirst(before).map(\.path).filter { !["/channel.json", "/channel.json.sig", "/keys.json"].contains($0) }
    }

    /// Publish writes `.xz` beside every `.gz`; an app that was never installed from the channel
    /// downloads the xz seed (the smaller), over the real HTTP server, and ends with the same store.
    @Test func theFullSeedArrivesAsXzOverHTTP() async throws {
        let sandbox = try ChannelSandbox()
        let bundled = try sandbox.release("1.0.0", generation: 0)
        try sandbox.launch(bundled)
        let offered = try sandbox.release("1.1.0", generation: 1)
        let published = try sandbox.publish(offered, compressed: true)
        let compressed = try #require(published.manifest.compressed)
        let xz = try #require(compressed.alternatives.first)
        #expect(compressed.encoding == "gzip" && compressed.file == "items-1.1.0.sqlite.gz")
        #expect(xz.encoding == "xz" && xz.file == "items-1.1.0.sqlite.xz")
        #expect(xz.size < compressed.size)
        #expect(try fileSHA256(sandbox.channel.appendingPathComponent(xz.file)) == xz.sha256)
        let before = try sandbox.server.requests().count

        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.action == .updated && outcome.method == .full)
        #expect(outcome.downloadedBytes == xz.size)
        #expect(try downloads(sandbox, after: before) == ["/" + xz.file])
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash)
        #expect(try sandbox.recorded() == ("1.1.0", .download))
        #expect(try sandbox.downloadFiles().isEmpty)
    }

    @Test func theDeltaArrivesAsXzAndEndsIdentical() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let (bundled, offered, published) = try installedAndPublished(sandbox)
        let delta = try #require(published.manifest.deltas.first)
        #expect(delta.file.file == "items-1.1.0.from-1.0.0.delta.gz")
        let xz = try #require(delta.file.alternatives.first)
        #expect(xz.file == "items-1.1.0.from-1.0.0.delta.xz")
        let before = try sandbox.server.requests().count

        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.method == .delta, "\(outcome.deltaFailure ?? "")")
        #expect(outcome.downloadedBytes == delta.file.smallest.size)
        #expect(try downloads(sandbox, after: before) == ["/" + delta.file.smallest.file])
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash)
        #expect(try sandbox.recordedContentHash() == offered.manifest.contentHash)
        #expect(try sandbox.downloadFiles().isEmpty)
    }

    /// A manifest from a publisher older than xz (no alternatives, no .xz files): the update reads gzip as before.
    @Test func anOldManifestWithoutXzStillUpdates() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let (bundled, offered, published) = try installedAndPublished(sandbox)
        try sandbox.forgeManifest { manifest in
            manifest.compressed?.alternatives = []
            for index in manifest.deltas.indices { manifest.deltas[index].file.alternatives = [] }
        }
        for file in published.manifest.deltas.flatMap(\.file.alternatives) + (published.manifest.compressed?.alternatives ?? []) {
            try FileManager.default.removeItem(at: sandbox.channel.appendingPathComponent(file.file))
        }
        let delta = try #require(published.manifest.deltas.first)
        let before = try sandbox.server.requests().count

        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.method == .delta, "\(outcome.deltaFailure ?? "")")
        #expect(try downloads(sandbox, after: before) == ["/" + delta.file.file])
        #expect(outcome.downloadedBytes == delta.file.size)
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash)
    }

    /// The xz delta damaged on the server: it fails its signed SHA-256, and the update falls back to
    /// the full seed (in xz) as for any delta; no second delta encoding is tried.
    @Test func aDamagedXzDeltaFallsBackToTheFullSeed() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let (bundled, offered, published) = try installedAndPublished(sandbox)
        let delta = try #require(published.manifest.deltas.first?.file.smallest)
        let compressed = try #require(published.manifest.compressed?.smallest)
        #expect(delta.encoding == "xz" && compressed.encoding == "xz")
        let url = sandbox.channel.appendingPathComponent(delta.file)
        var bytes = try Data(contentsOf: url)
        bytes[bytes.count / 2] ^= 0x40
        try bytes.write(to: url)
        let before = try sandbox.server.requests().count

        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.method == .full)
        #expect(outcome.deltaFailure?.contains("SHA-256") == true, "\(outcome.deltaFailure ?? "nil")")
        #expect(try downloads(sandbox, after: before) == ["/" + delta.file, "/" + compressed.file])
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash)
        #expect(try sandbox.downloadFiles().isEmpty)
    }
}
#endif
