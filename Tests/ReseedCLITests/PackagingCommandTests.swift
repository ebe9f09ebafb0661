import Foundation
import GRDB
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

    /// `reseed.json`'s `userVersion`, `applicationID` and `analyze` reach the seed's header and
    /// statistics, and the build stays reproducible.
    @Test func headerValuesAndAnalyzeComeFromTheProjectFile() throws {
        let sandbox = try example()
        let config = try String(contentsOf: sandbox.appending("reseed.json"), encoding: .utf8)
            .replacingOccurrences(of: "\"version\": \"2.0.0\",", with: "\"version\": \"2.0.0\", \"userVersion\": 12, \"applicationID\": -7, \"analyze\": true,")
        try config.write(to: sandbox.appending("reseed.json"), atomically: true, encoding: .utf8)
        let result = try ReseedBinary.run(["package"], in: sandbox.url)
        #expect(result.status == 0, "\(result.stderr)")
        let seed = sandbox.appending("SeedData/triage.sqlite")
        let bytes = try Data(contentsOf: seed)
        let queue = try DatabaseQueue(path: seed.path, configuration: { var c = Configuration(); c.readonly = true; return c }())
        let (userVersion, applicationID, statistics) = try queue.read { db in
            (try Int.fetchOne(db, sql: "PRAGMA user_version"), try Int.fetchOne(db, sql: "PRAGMA application_id"),
             try String.fetchAll(db, sql: "SELECT DISTINCT tbl FROM sqlite_stat1 ORDER BY tbl"))
        }
        try queue.close()
        #expect(userVersion == 12)
        #expect(applicationID == -7)
        #expect(statistics.contains("injury_category"))
        let manifest = try SeedManifest.read(from: sandbox.appending("SeedData/triage.manifest.json"))
        #expect(manifest.facts.userVersion == 12 && manifest.facts.applicationID == -7)
        let again = try ReseedBinary.run(["package"], in: sandbox.url)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try Data(contentsOf: seed) == bytes)
    }

    /// `--compress`: the example as gzip, reproducibly; verify, launch, diff and publish read the database it holds.
    @Test func compressedExampleVerifiesLaunchesAndPublishes() throws {
        let sandbox = try example()
        let root = ReseedBinary.packageRoot
        let result = try ReseedBinary.run(["package", "--compress"], in: sandbox.url)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("SeedData/triage.sqlite.gz"))
        let names = try FileManager.default.contentsOfDirectory(atPath: sandbox.appending("SeedData").path).sorted()
        #expect(names == ["triage.manifest.json", "triage.sqlite.gz"])
        let manifest = try SeedManifest.read(from: sandbox.appending("SeedData/triage.manifest.json"))
        let committed = try SeedManifest.read(from: root.appendingPathComponent("SeedData/triage.manifest.json"))
        #expect(manifest.compression == .gzip)
        #expect(manifest.file == "triage.sqlite.gz")
        #expect(manifest.facts.sha256 == committed.facts.sha256)
        #expect(manifest.facts.size == committed.facts.size)
        // gzip(1) gives back the committed database; packaging again gives the same bytes.
        let compressed = try Data(contentsOf: sandbox.appending("SeedData/triage.sqlite.gz"))
        let again = try ReseedBinary.run(["package", "--compress"], in: sandbox.url)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try Data(contentsOf: sandbox.appending("SeedData/triage.sqlite.gz")) == compressed)
        let gunzip = try ReseedBinary.start(["-c", "gzip -dc SeedData/triage.sqlite.gz | cmp - '\(root.path)/SeedData/triage.sqlite'"],
                                            in: sandbox.url, executable: URL(fileURLWithPath: "/bin/sh")).wait()
        #expect(gunzip.status == 0, "\(gunzip.stdout)\(gunzip.stderr)")

        let verify = try ReseedBinary.run(["verify", "SeedData", "--migrations", "Migrations"], in: sandbox.url)
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        let diff = try ReseedBinary.run(["diff", root.appendingPathComponent("SeedData/triage.sqlite").path, "SeedData/triage.sqlite.gz", "--json"], in: sandbox.url)
        #expect(diff.status == 0, "\(diff.stderr)")
        // The same database: no table or schema object differs.
        let report = try jsonObject(diff.stdout)
        #expect((report["tables"] as? [Any])?.isEmpty == true && (report["schema"] as? [Any])?.isEmpty == true, "\(diff.stdout)")

        try FileManager.default.copyItem(at: root.appendingPathComponent("UserMigrations"), to: sandbox.appending("UserMigrations"))
        let launch = try ReseedBinary.run(["launch", "--json"], in: sandbox.url)
        #expect(launch.status == 0, "\(launch.stderr)")
        #expect(try jsonObject(launch.stdout)["outcome"] as? String == "installed")
        let queue = try DatabaseQueue(path: sandbox.appending(".reseed-data/triage.sqlite").path)
        #expect(try queue.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM injury_category") } == 8)
        try queue.close()

        let keys = try ReseedBinary.run(["keygen", "--private-key", "channel.key", "--public-key", "channel.pub"], in: sandbox.url)
        #expect(keys.status == 0, "\(keys.stderr)")
        let publish = try ReseedBinary.run(["publish", "SeedData", "--channel", "site", "--private-key", "channel.key"], in: sandbox.url)
        #expect(publish.status == 0, "\(publish.stderr)")
        #expect(try Data(contentsOf: sandbox.appending("site/triage-2.0.0.sqlite")) == Data(contentsOf: root.appendingPathComponent("SeedData/triage.sqlite")))

        // Without --compress again: the database comes back, the gzip goes.
        let plain = try ReseedBinary.run(["package"], in: sandbox.url)
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.appending("SeedData").path).sorted() == ["triage.manifest.json", "triage.sqlite"])
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
