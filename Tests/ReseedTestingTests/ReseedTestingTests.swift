import Foundation
import Reseed
import ReseedTesting
import ReseedTestSupport
import Testing

@Suite struct ReseedTestingTests {
    /// Three releases of a `triage` seed, kept as an app would keep them: one folder each.
    static func releases(in folder: URL) throws -> [Seed] {
        for (version, levels) in [("1.0.0", 2), ("1.1.0", 3), ("2.0.0", 4)] {
            var fixture = SeedFixture(name: "triage", version: version, sql: [
                "CREATE TABLE level (id INTEGER PRIMARY KEY, name TEXT NOT NULL)",
                "CREATE TABLE favorite (id INTEGER PRIMARY KEY, level_id INTEGER REFERENCES level(id))",
            ])
            fixture = try fixture.adding(rows: (1...levels).map { ["id": $0, "name": "level \($0)"] }, to: "level")
            _ = try fixture.build(in: folder.appendingPathComponent(version))
        }
        return try SeedCheck.releases(in: folder)
    }

    @Test func fixtureRowsAndFreshInstallReport() throws {
        let work = try TemporaryDirectory()
        let releases = try Self.releases(in: work.appending("Releases"))
        #expect(releases.map(\.manifest.version) == ["1.0.0", "1.1.0", "2.0.0"])
        let sandbox = try ReseedSandbox(seed: releases[2].manifestURL)
        let report = try sandbox.launch()
        #expect(report.outcome.action == .installed)
        #expect(report.outcome.reason == .fresh)
        #expect(report.rowCounts == ["favorite": 0, "level": 4])
        #expect(report.isConsistent)
    }

    @Test func upgradeFromEveryReleaseWithUncheckpointedWrites() throws {
        let work = try TemporaryDirectory()
        let releases = try Self.releases(in: work.appending("Releases"))
        let shipped = releases.last!
        for release in releases {
            let sandbox = try ReseedSandbox(seed: shipped.manifestURL)
            try sandbox.recreateDevice(after: release.manifestURL, userWrites: ["INSERT INTO favorite (level_id) VALUES (1)"],
                                       state: .init(uncheckpointedWrites: true))
            #expect(FileManager.default.fileExists(atPath: sandbox.dataDirectory.appendingPathComponent("triage.sqlite-wal").path))
            let report = try sandbox.launch()
            #expect(report.isConsistent)
            #expect(report.outcome.previousVersion == release.manifest.version)
            if release.manifest.version == shipped.manifest.version {
                #expect(report.outcome.action == .upToDate)
                #expect(report.rowCounts["favorite"] == 1, "the user's row survives when nothing is installed")
            } else {
                #expect(report.outcome.action == .installed)
                #expect(report.outcome.change == .upgrade)
                #expect(report.rowCounts["favorite"] == 0)
            }
        }
    }

    @Test func corruptPreferencesAndLeftoverFilesOnTheDevice() throws {
        let work = try TemporaryDirectory()
        let releases = try Self.releases(in: work.appending("Releases"))
        let sandbox = try ReseedSandbox(seed: releases[2].manifestURL)
        try sandbox.recreateDevice(after: releases[0].manifestURL, state: .init(corruptPreferences: true, leftoverTemporaryFile: true))
        let report = try sandbox.launch()
        #expect(report.outcome.reason == .preferencesCorrupt)
        #expect(report.outcome.preferencesMovedAside != nil)
        #expect(report.outcome.removedLeftovers.count == 1)
        #expect(report.isConsistent)
    }

    @Test func badSeedIsRefusedAndTheDeviceKeepsItsStore() throws {
        let work = try TemporaryDirectory()
        let releases = try Self.releases(in: work.appending("Releases"))
        var bytes = try Data(contentsOf: releases[2].fileURL)
        bytes[bytes.count - 1] ^= 0xFF
        try bytes.write(to: releases[2].fileURL)
        var configuration = Launcher.Configuration()
        configuration.verification = .checksum
        let sandbox = try ReseedSandbox(seed: releases[2].manifestURL, configuration: configuration)
        try sandbox.recreateDevice(after: releases[1].manifestURL)
        let error = try #require(throws: ReseedError.self) { try sandbox.launch() }
        #expect(error.code == .verificationFailed)
        #expect(try sandbox.preferences.recordedVersion(of: "triage") == "1.1.0")
    }

    @Test func repositorySeedMatchesItsMigrations() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        #expect(try SeedCheck.findings(seed: root.appendingPathComponent("SeedData"), migrations: root.appendingPathComponent("Migrations")).isEmpty)
        let work = try TemporaryDirectory()
        try FileManager.default.copyItem(at: root.appendingPathComponent("Migrations"), to: work.appending("Migrations"))
        try Data("SELECT 1;\n".utf8).write(to: work.appending("Migrations/0099_new.sql"))
        let findings = try SeedCheck.findings(seed: root.appendingPathComponent("SeedData"), migrations: work.appending("Migrations"))
        #expect(findings.count == 1)
        #expect(findings.first?.contains("0099_new.sql") == true)
    }

    @Test func sandboxRemovesItsFolderWhenReleased() throws {
        var folder: URL?
        do {
            let sandbox = try ReseedSandbox(seed: URL(fileURLWithPath: "/nonexistent"))
            folder = sandbox.directory
            try FileManager.default.createDirectory(at: sandbox.dataDirectory, withIntermediateDirectories: true)
            #expect(FileManager.default.fileExists(atPath: sandbox.dataDirectory.path))
        }
        #expect(folder.map { FileManager.default.fileExists(atPath: $0.path) } == false)
    }
}

@Suite struct ReferencedKeyCheckTests {
    /// A `triage` release with `levels` levels (ids 1…) and the injury categories `categories`.
    static func release(_ version: String, levels: Int, categories: [Int], in folder: URL) throws -> Seed {
        try SeedFixture(name: "triage", version: version, sql: [
            "CREATE TABLE level (id INTEGER PRIMARY KEY, name TEXT NOT NULL)",
            "CREATE TABLE injury_category (id INTEGER PRIMARY KEY, code TEXT NOT NULL UNIQUE)",
        ])
        .adding(rows: (1...levels).map { ["id": $0, "name": "level \($0)"] }, to: "level")
        .adding(rows: categories.map { ["id": $0, "code": "C\($0)"] }, to: "injury_category")
        .build(in: folder.appendingPathComponent(version))
    }

    static let references = [
        SeedReference(table: "incident", column: "level_id", seedTable: "level", seedColumn: "id"),
        SeedReference(table: "incident", column: "category_code", seedTable: "injury_category", seedColumn: "code"),
    ]

    @Test func aReleaseThatKeepsEveryReferencedKeyHasNoFinding() throws {
        let work = try TemporaryDirectory()
        let old = try Self.release("1.0.0", levels: 3, categories: [1, 2], in: work.url)
        let new = try Self.release("1.1.0", levels: 4, categories: [1, 2, 3], in: work.url)
        #expect(try SeedCheck.removedReferencedKeys(old: old.fileURL, new: new.fileURL, references: Self.references) == [])
    }

    @Test func aReleaseThatRemovesReferencedKeysIsReportedByTableColumnAndKeys() throws {
        let work = try TemporaryDirectory()
        let old = try Self.release("1.0.0", levels: 4, categories: Array(1...30), in: work.url)
        let new = try Self.release("2.0.0", levels: 2, categories: [1], in: work.url)
        let findings = try SeedCheck.removedReferencedKeys(old: old.fileURL, new: new.fileURL, references: Self.references)
        // Text keys come in SQLite's order: 'C10' … 'C19', 'C2', 'C20' ….
        let codes = (2...30).map { "C\($0)" }.sorted().prefix(20).map { "'\($0)'" }.joined(separator: ", ")
        #expect(findings == [
            "level.id: the new seed removes 2 keys that incident.level_id may point to: 3, 4",
            "injury_category.code: the new seed removes 29 keys that incident.category_code may point to: \(codes) and 9 more",
        ])
    }

    @Test func aReferenceTheOldReleaseCannotHaveIsAnError() throws {
        let work = try TemporaryDirectory()
        let old = try Self.release("1.0.0", levels: 1, categories: [1], in: work.url)
        let wrong = [SeedReference(table: "incident", column: "unit_id", seedTable: "unit", seedColumn: "id")]
        let error = #expect(throws: (any Error).self) {
            try SeedCheck.removedReferencedKeys(old: old.fileURL, new: old.fileURL, references: wrong)
        }
        #expect(error.map { "\($0)" } == "\(old.fileURL.path): reference 'incident.unit_id->unit.id': the old seed has no table 'unit'")
    }
}
