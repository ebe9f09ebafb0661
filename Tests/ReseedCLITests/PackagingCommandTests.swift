import Foundation
import Reseed
import ReseedPackaging
import ReseedTesting
import ReseedTestSupport
import Testing

@Suite struct PackagingCommandTests {
    /// A copy of this repository's example: reseed.json, SeedData/, and Migrations/ (only the steps up to `lastStep`).
    func example(upTo lastStep: Int? = nil, version: String? = nil) throws -> TemporaryDirectory {
        let sandbox = try TemporaryDirectory(prefix: "reseed-example")
        let root = ReseedBinary.packageRoot
        for item in ["reseed.json", "SeedData"] {
            try FileManager.default.copyItem(at: root.appendingPathComponent(item), to: sandbox.appending(item))
        }
        try FileManager.default.createDirectory(at: sandbox.appending("Migrations"), withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Migrations").path) {
            if let lastStep, let number = Int(name.prefix(4)), number > lastStep { continue }
            try FileManager.default.copyItem(at: root.appendingPathComponent("Migrations/\(name)"), to: sandbox.appending("Migrations/\(name)"))
        }
        if let version {
            let config = try String(contentsOf: sandbox.appending("reseed.json"), encoding: .utf8)
                .replacingOccurrences(of: "\"version\": \"2.0.0\"", with: "\"version\": \"\(version)\"")
            try config.write(to: sandbox.appending("reseed.json"), atomically: true, encoding: .utf8)
        }
        return sandbox
    }

    @Test func packageWithNoFlagsRebuildsTheCommittedExample() throws {
        let sandbox = try example()
        let result = try ReseedBinary.run(["package"], in: sandbox.url)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("Built triage 2.0.0: "))
        let root = ReseedBinary.packageRoot
        #expect(try Data(contentsOf: sandbox.appending("SeedData/triage.sqlite")) == Data(contentsOf: root.appendingPathComponent("SeedData/triage.sqlite")))
        #expect(try Data(contentsOf: sandbox.appending("SeedData/triage.manifest.json")) == Data(contentsOf: root.appendingPathComponent("SeedData/triage.manifest.json")))
    }

    @Test func packageErrorNamesTheFileAndLine() throws {
        let sandbox = try example()
        try Data("id,level_id,sign\n99,1\n".utf8).write(to: sandbox.appending("Migrations/0009_vital_sign_threshold.csv"))
        let result = try ReseedBinary.run(["package", "--version", "2.1.0"], in: sandbox.url)
        #expect(result.status == 1)
        #expect(result.stderrLines.count == 1)
        #expect(result.stderr.contains("0009_vital_sign_threshold.csv:2: record has 2 fields, the header has 3"))
        // The earlier artifact is untouched.
        let manifest = try SeedManifest.read(from: sandbox.appending("SeedData/triage.manifest.json"))
        #expect(manifest.version == "2.0.0")
    }

    @Test func verifyListsEveryFindingAndExitsOne() throws {
        let sandbox = try example()
        let clean = try ReseedBinary.run(["verify", "SeedData", "--migrations", "Migrations"], in: sandbox.url)
        #expect(clean.status == 0, "\(clean.stdout)\(clean.stderr)")
        try Data("id,code,name,color,max_wait_minutes\n1,T1,Immediate,red,5\n".utf8)
            .write(to: sandbox.appending("Migrations/0002_triage_level.csv"))
        try Data("SELECT 1;".utf8).write(to: sandbox.appending("Migrations/0009_extra.sql"))
        let result = try ReseedBinary.run(["verify", "SeedData", "--migrations", "Migrations", "--json"], in: sandbox.url)
        #expect(result.status == 1)
        let report = try jsonObject(result.stdout)
        #expect(report["ok"] as? Bool == false)
        let findings = report["findings"] as? [[String: Any]] ?? []
        #expect(findings.compactMap { $0["kind"] as? String }.sorted() == ["stepAdded", "stepEdited"])
        #expect(findings.compactMap { $0["step"] as? String }.sorted() == ["0002_triage_level.csv", "0009_extra.sql"])
        #expect(result.stderr.contains("2 findings"))
    }

    @Test func verifyChecksTheContentHashAndNotesItsAbsence() throws {
        let sandbox = try example()
        let manifestURL = sandbox.appending("SeedData/triage.manifest.json")
        var manifest = try SeedManifest.read(from: manifestURL)
        let recorded = try #require(manifest.contentHash)

        manifest.contentHash = nil
        try manifest.encoded().write(to: manifestURL)
        let old = try ReseedBinary.run(["verify", "SeedData"], in: sandbox.url)
        #expect(old.status == 0, "\(old.stderr)")
        #expect(old.stderr.contains("note: no content hash"))

        manifest.contentHash = String(repeating: "f", count: 64)
        try manifest.encoded().write(to: manifestURL)
        let tampered = try ReseedBinary.run(["verify", "SeedData"], in: sandbox.url)
        #expect(tampered.status == 1)
        #expect(tampered.stdout.contains("contentHashMismatch: triage.sqlite has content hash \(recorded), the manifest says \(String(repeating: "f", count: 64))"))
    }

    @Test func diffShowsWhatReleaseTwoChanged() throws {
        let sandbox = try example(upTo: 4, version: "1.0.0")
        let built = try ReseedBinary.run(["package", "--output", "Release1"], in: sandbox.url)
        #expect(built.status == 0, "\(built.stderr)")
        let newSeed = ReseedBinary.packageRoot.appendingPathComponent("SeedData/triage.sqlite").path
        let result = try ReseedBinary.run(["diff", "Release1/triage.sqlite", newSeed, "--json"], in: sandbox.url)
        #expect(result.status == 0, "\(result.stderr)")
        let diff = try jsonObject(result.stdout)
        let schema = diff["schema"] as? [[String: Any]] ?? []
        let added = Set(schema.filter { $0["kind"] as? String == "added" }.compactMap { $0["name"] as? String })
        #expect(added.isSuperset(of: ["vital_sign_threshold", "icd10_block", "protocol_by_category", "protocol_summary"]))
        let tables = diff["tables"] as? [[String: Any]] ?? []
        let levels = tables.first { $0["name"] as? String == "triage_level" }
        #expect(levels?["changed"] as? Int == 1)
        #expect((diff["old"] as? [String: Any])?["version"] as? String == "1.0.0")
        #expect((diff["new"] as? [String: Any])?["version"] as? String == "2.0.0")

        let text = try ReseedBinary.run(["diff", "Release1/triage.sqlite", newSeed], in: sandbox.url)
        #expect(text.status == 0)
        #expect(text.stdout.contains("triage_level"))
    }
}
