import Foundation
import Reseed
import ReseedPackaging

/// One-call checks of an app's bundled seed, for its test suite.
public enum SeedCheck {
    /// Verifies the bundled seed against its manifest and against the app's `Migrations/`:
    /// size, SHA-256, integrity, foreign keys, embedded metadata, and each step added,
    /// missing or edited since the seed was built.
    ///
    /// ```swift
    /// @Test func bundledSeedIsUpToDate() throws {
    ///     let findings = try SeedCheck.findings(seed: repo.appending(path: "SeedData"), migrations: repo.appending(path: "Migrations"))
    ///     #expect(findings.isEmpty, "run `reseed package`: \(findings)")
    /// }
    /// ```
    ///
    /// - Returns: every finding, in words; empty when the seed is exactly what the steps build.
    /// - Throws: ``PackagingError`` when the seed or the folder cannot be read at all.
    public static func findings(seed: URL, migrations: URL) throws -> [String] {
        try SeedVerifier(seed: seed).verify(migrations: migrations).findings.map(\.message)
    }

    /// The seeds in `folder`, one subfolder per shipped release (each holding one manifest and its seed),
    /// ordered by version (SemVer precedence; folder name when versions are not SemVer).
    ///
    /// Keep every release's seed (or at least its manifest and seed) under version control
    /// in such a folder, and loop over them: see the "Upgrade from every release" article.
    public static func releases(in folder: URL) throws -> [Seed] {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix(".") }
        let seeds = try names.sorted().compactMap { name -> Seed? in
            let url = folder.appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue else { return nil }
            return try Seed(at: url)
        }
        return seeds.sorted { lhs, rhs in
            let left = SeedVersion(lhs.manifest.version), right = SeedVersion(rhs.manifest.version)
            switch right.change(from: left) {
            case .upgrade: return true
            case .downgrade: return false
            case nil: return lhs.manifestURL.path < rhs.manifestURL.path
            }
        }
    }
}
