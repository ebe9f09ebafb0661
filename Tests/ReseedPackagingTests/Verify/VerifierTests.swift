import Foundation
import GRDB
import Reseed
import ReseedPackaging
import ReseedSystem
import Testing

@Suite struct VerifierTests {
    func built() throws -> (MigrationsSandbox, SeedBuilder.Result) {
        let sandbox = try MigrationsSandbox(BuildTests.steps)
        return (sandbox, try sandbox.build())
    }

    /// The report of verifying `result`'s seed after its manifest was given the file's new size and
    /// SHA-256 (a seed changed under a manifest that follows its bytes only).
    func verifiedWithTheManifestUpdatedForItsBytes(_ result: SeedBuilder.Result) throws -> SeedVerifier.Report {
        var manifest = result.manifest
        let facts = try FileFacts(path: result.seedURL.path)
        manifest.size = facts.size
        manifest.sha256 = facts.sha256
        try manifest.encoded().write(to: result.manifestURL)
        return try SeedVerifier(seed: result.manifestURL).verify()
    }

    @Test func freshBuildVerifiesClean() throws {
        let (sandbox, result) = try built()
        let report = try SeedVerifier(seed: result.manifestURL).verify(migrations: sandbox.migrations)
        #expect(report.findings.isEmpty)
    }

    @Test func editedAddedAndMissingStepsAreEachReported() throws {
        let (sandbox, result) = try built()
        try sandbox.write("0002_parent.csv", "id,name\n1,one\n2,TWO\n")
        try FileManager.default.removeItem(at: sandbox.migrations.appendingPathComponent("0004_index.sql"))
        try sandbox.write("0005_more.sql", "SELECT 1;")
        let report = try SeedVerifier(seed: result.output()).verify(migrations: sandbox.migrations)
        let byKind = Dictionary(grouping: report.findings, by: \.kind).mapValues { $0.compactMap(\.step) }
        #expect(byKind[.stepEdited] == ["0002_parent.csv"])
        #expect(byKind[.stepMissing] == ["0004_index.sql"])
        #expect(byKind[.stepAdded] == ["0005_more.sql"])
        #expect(report.findings.count == 3)
    }

    @Test func checkoutWithWindowsLineEndingsIsNotAnEdit() throws {
        let (sandbox, result) = try built()
        let original = try String(contentsOf: sandbox.migrations.appendingPathComponent("0001_schema.sql"), encoding: .utf8)
        try sandbox.write("0001_schema.sql", "\u{FEFF}" + original.replacingOccurrences(of: "\n", with: "\r\n"))
        #expect(try SeedVerifier(seed: result.manifestURL).verify(migrations: sandbox.migrations).isClean)
    }

    @Test func tamperedSeedIsReported() throws {
        let (sandbox, result) = try built()
        defer { withExtendedLifetime(sandbox) {} }
        var bytes = try Data(contentsOf: result.seedURL)
        bytes[bytes.count - 10] ^= 0xFF
        try bytes.write(to: result.seedURL)
        let report = try SeedVerifier(seed: result.manifestURL).verify()
        #expect(report.findings.map(\.kind).contains(.checksumMismatch))
    }

    @Test func builtManifestCarriesTheContentHash() throws {
        let (sandbox, result) = try built()
        defer { withExtendedLifetime(sandbox) {} }
        let recorded = try #require(result.manifest.contentHash)
        #expect(recorded == (try SeedContentHash.compute(path: result.seedURL.path)))
        #expect(try SeedManifest.read(from: result.manifestURL).contentHash == recorded)
    }

    @Test func tamperedContentHashIsReportedWithBothHashes() throws {
        let (sandbox, result) = try built()
        defer { withExtendedLifetime(sandbox) {} }
        let actual = try #require(result.manifest.contentHash)
        var manifest = result.manifest
        manifest.contentHash = String(repeating: "0", count: 64)
        try manifest.encoded().write(to: result.manifestURL)
        let report = try SeedVerifier(seed: result.manifestURL).verify()
        #expect(report.findings.map(\.kind) == [.contentHashMismatch])
        #expect(report.findings.first?.message.contains(actual) == true)
        #expect(report.findings.first?.message.contains(String(repeating: "0", count: 64)) == true)
    }

    /// A seed SQLite cannot read (its schema page overwritten, the manifest updated for its bytes):
    /// one finding, one sentence, with SQLite's words and without a second sentence nested in it.
    @Test func contentThatCannotBeReadIsOneFindingInOneSentence() throws {
        let (sandbox, result) = try built()
        defer { withExtendedLifetime(sandbox) {} }
        let handle = try FileHandle(forWritingTo: result.seedURL)
        try handle.seek(toOffset: 100)
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 400))
        try handle.close()
        let report = try verifiedWithTheManifestUpdatedForItsBytes(result)
        let findings = report.findings.filter { $0.kind == .contentHashMismatch }
        #expect(findings.count == 1, "\(report.findings)")
        let message = try #require(findings.first?.message)
        #expect(message.hasPrefix("the content hash of \(result.manifest.file) cannot be computed, so it is not the manifest's \(result.manifest.contentHash ?? "")"), "\(message)")
        #expect(message.contains("malformed") && !message.contains("(") && !message.contains(result.seedURL.path), "\(message)")
    }

    @Test func changedRowsUnderAnUnchangedFileHashAreReported() throws {
        // A seed rewritten with other rows and a manifest updated for its bytes only: the content hash tells.
        let (sandbox, result) = try built()
        defer { withExtendedLifetime(sandbox) {} }
        let queue = try DatabaseQueue(path: result.seedURL.path)
        try queue.write { try $0.execute(sql: "UPDATE parent SET name = 'changed' WHERE id = 1") }
        try queue.close()
        let report = try verifiedWithTheManifestUpdatedForItsBytes(result)
        #expect(report.findings.map(\.kind) == [.contentHashMismatch])
    }

    @Test func manifestWithoutContentHashIsANoteNotAFinding() throws {
        let (sandbox, result) = try built()
        defer { withExtendedLifetime(sandbox) {} }
        var manifest = result.manifest
        manifest.contentHash = nil
        try manifest.encoded().write(to: result.manifestURL)
        let report = try SeedVerifier(seed: result.manifestURL).verify()
        #expect(report.isClean)
        #expect(report.notes.count == 1)
        #expect(report.notes.first?.contains("no content hash") == true)
    }

    @Test func manifestOfAnotherVersionIsReported() throws {
        let (sandbox, result) = try built()
        defer { withExtendedLifetime(sandbox) {} }
        var manifest = result.manifest
        manifest.version = "9.9.9"
        try manifest.encoded().write(to: result.manifestURL)
        let report = try SeedVerifier(seed: result.manifestURL).verify()
        #expect(report.findings.map(\.kind) == [.metadataMismatch])
    }
}

extension SeedBuilder.Result {
    /// The folder holding the seed and its manifest.
    func output() -> URL { manifestURL.deletingLastPathComponent() }
}
