import Foundation
import GRDB
@testable import Reseed
import ReseedPackaging
import ReseedTesting
import ReseedTestSupport
import Testing

/// Seeds shipped as `<name>.sqlite.gz`: installed decompressed, checked as the database they hold.
@Suite struct CompressedSeedTests {
    @Test(arguments: SeedManifest.Compression.allCases)
    func compressedSeedInstallsTheDatabase(codec: SeedManifest.Compression) throws {
        let sandbox = try LaunchSandbox()
        let seed = try sandbox.seed("1.0.0", rows: 500, compressed: true, codec: codec)
        #expect(seed.manifest.file == "items.sqlite" + codec.codec.fileSuffix)
        #expect(seed.manifest.compression == codec)
        #expect(!FileManager.default.fileExists(atPath: seed.fileURL.deletingLastPathComponent().appendingPathComponent("items.sqlite").path))
        // The manifest describes the database; the bundle holds less.
        let gzipSize = try #require(try FileManager.default.attributesOfItem(atPath: seed.fileURL.path)[.size] as? Int64)
        #expect(gzipSize < seed.manifest.size)

        let outcome = try sandbox.install(seed)
        #expect(outcome.action == .installed)
        #expect(try sandbox.labels().count == 500)
        #expect(try sandbox.recordedVersion() == "1.0.0")
        #expect(try sandbox.embeddedVersion() == "1.0.0")
        #expect(try sandbox.temporaryFiles().isEmpty)
        // Up to date on the next launch: nothing decompressed again.
        #expect(try sandbox.install(seed).action == .upToDate)
    }

    /// `.size` verification skips the SHA-256 of a plain seed; a compressed one is always hashed.
    @Test func compressedSeedIsHashedWhateverTheVerification() throws {
        let sandbox = try LaunchSandbox()
        try sandbox.install(try sandbox.seed("1.0.0"))
        let seed = try sandbox.seed("2.0.0", compressed: true)
        var manifest = seed.manifest
        manifest.sha256 = String(repeating: "0", count: 64)
        try manifest.encoded().write(to: seed.manifestURL)
        let error = try #require(throws: ReseedError.self) {
            try sandbox.launcher(try Seed(at: seed.manifestURL)) { $0.verification = .size }.launch()
        }
        #expect(error.code == .verificationFailed)
        #expect(error.message.contains("SHA-256"))
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
        #expect(try sandbox.recordedVersion() == "1.0.0")
    }

    /// A damaged, a truncated and a bomb of a compressed seed: the old store and the preferences stay, byte for byte.
    @Test(arguments: ["flipped", "truncated", "bomb"], SeedManifest.Compression.allCases)
    func badCompressedSeedLeavesTheStoreUntouched(damage: String, codec: SeedManifest.Compression) throws {
        let sandbox = try LaunchSandbox()
        try sandbox.install(try sandbox.seed("1.0.0"))
        let store = try Data(contentsOf: sandbox.storeURL)
        let preferences = try Data(contentsOf: sandbox.preferencesURL)
        let files = try sandbox.files()
        let seed = try sandbox.seed("2.0.0", rows: 2_000, compressed: true, codec: codec)
        var bytes = try [UInt8](Data(contentsOf: seed.fileURL))
        switch damage {
        case "flipped": bytes[bytes.count / 2] ^= 0x5a
        case "truncated": bytes.removeLast(bytes.count / 3)
        default:
            // The manifest says one page less than the stream holds.
            var manifest = seed.manifest
            manifest.size -= Int64(manifest.pageSize)
            try manifest.encoded().write(to: seed.manifestURL)
        }
        try Data(bytes).write(to: seed.fileURL)
        let error = try #require(throws: ReseedError.self) { try sandbox.install(try Seed(at: seed.manifestURL)) }
        #expect(error.code == .verificationFailed)
        #expect(error.path == seed.fileURL.path)
        #expect(error.description.contains("compressed seed"), "\(error)")
        if damage == "bomb" { #expect(error.message.contains("more than \(seed.manifest.size - Int64(seed.manifest.pageSize)) bytes")) }
        #expect(try Data(contentsOf: sandbox.storeURL) == store)
        #expect(try Data(contentsOf: sandbox.preferencesURL) == preferences)
        #expect(try sandbox.files() == files)
    }

    /// Carrying the user's tables out of a single-file store first checks them against the seed's
    /// tables: the compressed seed is decompressed for that look, and the copy removed.
    @Test func userTablesAreCheckedAgainstACompressedSeed() throws {
        let sandbox = try LaunchSandbox()
        let (single, _) = try sandbox.launcher(try sandbox.seed("1.0.0")).launch()
        try single.write { db in
            try db.execute(sql: "CREATE TABLE note (id INTEGER PRIMARY KEY, text TEXT NOT NULL)")
            try db.execute(sql: "INSERT INTO note (text) VALUES ('kept')")
        }
        try single.close()
        let userStore = Launcher.UserStore(name: "items-user", migrator: DatabaseMigrator(), userTables: ["note"])

        // A seed that has a `note` table too: refused by name, not as a file SQLite cannot read.
        let clashing = try sandbox.seed("2.0.0", compressed: true, sql: ["CREATE TABLE note (id INTEGER PRIMARY KEY)"])
        let error = try #require(throws: ReseedError.self) { try sandbox.launcher(clashing) { $0.userStore = userStore }.launch() }
        #expect(error.code == .userStoreConflict, "\(error)")
        #expect(try sandbox.temporaryFiles().isEmpty)

        let seed = try sandbox.seed("3.0.0", compressed: true)
        let (database, outcome) = try sandbox.launcher(seed) { $0.userStore = userStore }.launch()
        defer { try? database.close() }
        #expect(outcome.action == .installed)
        #expect(outcome.importedTables == ["note": 1])
        #expect(try database.read { try String.fetchAll($0, sql: "SELECT text FROM note") } == ["kept"])
        #expect(try database.read { try String.fetchAll($0, sql: "SELECT label FROM item ORDER BY id") } == ["3.0.0-1", "3.0.0-2", "3.0.0-3"])
        #expect(try sandbox.temporaryFiles().isEmpty)
    }

    @Test func unknownCompressionIsRefusedNamingTheField() throws {
        let sandbox = try LaunchSandbox()
        let seed = try sandbox.seed("1.0.0", compressed: true)
        let text = try String(contentsOf: seed.manifestURL, encoding: .utf8).replacingOccurrences(of: "\"gzip\"", with: "\"zstd\"")
        try text.write(to: seed.manifestURL, atomically: true, encoding: .utf8)
        let error = try #require(throws: ReseedError.self) { try Seed(at: seed.manifestURL) }
        #expect(error.code == .invalidManifest)
        #expect(error.field == "compression")
        #expect(error.message.contains("unknown compression \"zstd\""))
    }

    @Test func rebuildingSwapsBetweenTheTwoForms() throws {
        let sandbox = try LaunchSandbox()
        let folder = sandbox.directory.appending("seed-1.0.0")
        let plain = try sandbox.seed("1.0.0")
        let plainBytes = try Data(contentsOf: plain.fileURL)
        var fixture = SeedFixture(name: "items", version: "1.0.0", sql: [
            "CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT NOT NULL)",
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3) INSERT INTO item (label) SELECT '1.0.0-' || i FROM n",
        ])
        fixture.compression = .gzip
        let compressed = try fixture.build(in: folder)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0 != "Migrations" }.sorted()
        #expect(names == ["items.manifest.json", "items.sqlite.gz"])
        // The same database, described the same way; packaging again gives the same bytes.
        #expect(compressed.manifest.sha256 == plain.manifest.sha256)
        let first = try Data(contentsOf: compressed.fileURL)
        _ = try fixture.build(in: folder)
        #expect(try Data(contentsOf: compressed.fileURL) == first)
        // Opened through `Seed(at:)` by its file name too, and readable as a database.
        let located = try Seed(at: compressed.fileURL)
        let labels = try located.withDatabaseFile { (path) throws(ReseedError) in
            do { return try DatabaseQueue(path: path).read { try String.fetchAll($0, sql: "SELECT label FROM item ORDER BY id") } } catch {
                throw ReseedError.wrapping(error, step: .verify, path: path)
            }
        }
        #expect(labels == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
        // Back without compression: the gzip goes.
        fixture.compression = nil
        let again = try fixture.build(in: folder)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0 != "Migrations" }.sorted() == ["items.manifest.json", "items.sqlite"])
        #expect(try Data(contentsOf: again.fileURL) == plainBytes)
    }

    @Test func verifierChecksTheDecompressedDatabase() throws {
        let sandbox = try LaunchSandbox()
        let seed = try sandbox.seed("1.0.0", rows: 300, compressed: true)
        let clean = try SeedVerifier(seed: seed.manifestURL).verify()
        #expect(clean.isClean, "\(clean.findings)")
        #expect(clean.seed == seed.fileURL.path)

        var manifest = seed.manifest
        manifest.sha256 = String(repeating: "a", count: 64)
        try manifest.encoded().write(to: seed.manifestURL)
        #expect(try SeedVerifier(seed: seed.manifestURL).verify().findings.map(\.kind) == [.checksumMismatch])

        try seed.manifest.encoded().write(to: seed.manifestURL)
        var bytes = try [UInt8](Data(contentsOf: seed.fileURL))
        bytes.removeLast(100)
        try Data(bytes).write(to: seed.fileURL)
        let report = try SeedVerifier(seed: seed.manifestURL).verify()
        #expect(report.findings.map(\.kind) == [.compression])
        #expect(report.findings.first?.message.contains("truncated") == true)
    }

    @Test func diffReadsCompressedSeeds() throws {
        let sandbox = try LaunchSandbox()
        let old = try sandbox.seed("1.0.0", rows: 3, compressed: true)
        let new = try sandbox.seed("2.0.0", rows: 5, compressed: true)
        let diff = try SeedDiff.compare(old: old.fileURL, new: new.fileURL)
        let item = try #require(diff.tables.first { $0.name == "item" })
        #expect(item.added == 2)
        #expect(item.changed == 3)
    }
}
