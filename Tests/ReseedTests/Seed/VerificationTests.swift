import Foundation
import Reseed
import ReseedPackaging
import ReseedTesting
import Testing

@Suite struct VerificationTests {
    /// Copies `seed` into a new folder with its bytes changed by `damage`, keeping the manifest.
    func damaged(_ seed: Seed, in sandbox: LaunchSandbox, _ damage: (inout Data) -> Void) throws -> Seed {
        let folder = sandbox.directory.appending("damaged-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var bytes = try Data(contentsOf: seed.fileURL)
        damage(&bytes)
        try bytes.write(to: folder.appendingPathComponent(seed.manifest.file))
        let manifestURL = folder.appendingPathComponent(seed.manifest.manifestFileName)
        try seed.manifest.encoded().write(to: manifestURL)
        return try Seed(at: manifestURL)
    }

    func expectOldStoreIntact(_ sandbox: LaunchSandbox) throws {
        #expect(try sandbox.recordedVersion() == "1.0.0")
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
        #expect(try sandbox.temporaryFiles().isEmpty)
    }

    @Test(arguments: [Verification.size, .checksum])
    func truncatedSeedIsRejected(level: Verification) throws {
        let sandbox = try LaunchSandbox()
        try sandbox.install(try sandbox.seed("1.0.0"))
        let bad = try damaged(try sandbox.seed("2.0.0"), in: sandbox) { $0.removeLast(4096) }
        let error = try #require(throws: ReseedError.self) { try sandbox.launcher(bad) { $0.verification = level }.prepare() }
        #expect(error.code == .verificationFailed)
        #expect(error.step == .verify)
        #expect(error.path == bad.fileURL.path)
        try expectOldStoreIntact(sandbox)
    }

    @Test func flippedByteIsRejectedUnderChecksum() throws {
        let sandbox = try LaunchSandbox()
        try sandbox.install(try sandbox.seed("1.0.0"))
        let good = try sandbox.seed("2.0.0")
        let bad = try damaged(good, in: sandbox) { bytes in bytes[bytes.count - 100] ^= 0x01 }
        let error = try #require(throws: ReseedError.self) { try sandbox.launcher(bad) { $0.verification = .checksum }.prepare() }
        #expect(error.code == .verificationFailed)
        #expect(error.message.contains("SHA-256"))
        try expectOldStoreIntact(sandbox)
        // The same seed passes the O(1) checks: only the full checksum can see one flipped byte.
        #expect(try sandbox.launcher(bad) { $0.verification = .size }.prepare().action == .installed)
    }

    @Test func seedOfAnotherNameIsRejected() throws {
        let sandbox = try LaunchSandbox()
        try sandbox.install(try sandbox.seed("1.0.0"))
        let other = try SeedFixture(name: "other", version: "2.0.0", sql: ["CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT)"])
            .build(in: sandbox.directory.appending("other"))
        var manifest = other.manifest
        manifest.name = "items"
        let manifestURL = sandbox.directory.appending("other/items.manifest.json")
        try manifest.encoded().write(to: manifestURL)
        let error = try #require(throws: ReseedError.self) { try sandbox.launcher(Seed(at: manifestURL)).prepare() }
        #expect(error.code == .verificationFailed)
        #expect(error.message.contains("'other'"))
        try expectOldStoreIntact(sandbox)
    }

    @Test func headerThatIsNotSQLiteIsRejectedUnderSize() throws {
        let sandbox = try LaunchSandbox()
        try sandbox.install(try sandbox.seed("1.0.0"))
        let bad = try damaged(try sandbox.seed("2.0.0"), in: sandbox) { $0.replaceSubrange(0..<16, with: Data(repeating: 0x41, count: 16)) }
        let error = try #require(throws: ReseedError.self) { try sandbox.launcher(bad).prepare() }
        #expect(error.code == .verificationFailed)
        try expectOldStoreIntact(sandbox)
    }

    @Test func missingSeedFileIsAClearError() throws {
        let sandbox = try LaunchSandbox()
        let seed = try sandbox.seed("1.0.0")
        try FileManager.default.removeItem(at: seed.fileURL)
        let error = try #require(throws: ReseedError.self) { try sandbox.launcher(seed).prepare() }
        #expect(error.code == .seedNotFound)
        #expect(error.path == seed.fileURL.path)
        #expect(try sandbox.temporaryFiles().isEmpty)
    }
}
