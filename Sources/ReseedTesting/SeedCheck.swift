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

    /// Checks that a release keeps every seed key the app's user rows may point to: one finding
    /// per reference whose seed column has values in `old` that `new` no longer has, naming the
    /// seed table and column, the user column and the keys (the first 20, then how many more).
    ///
    /// ```swift
    /// @Test func releaseKeepsReferencedKeys() throws {
    ///     let releases = try SeedCheck.releases(in: repo.appending(path: "Releases"))
    ///     for (old, new) in zip(releases, releases.dropFirst()) {
    ///         let findings = try SeedCheck.removedReferencedKeys(old: old.fileURL, new: new.fileURL, references: [
    ///             SeedReference("incident.category_id", to: "injury_category.id")])
    ///         #expect(findings.isEmpty, "\(findings)")
    ///     }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - old: The database file of the release the app's users have now.
    ///   - new: The database file of the release to ship.
    /// - Returns: every finding, in words; empty when `new` keeps every referenced key.
    /// - Throws: ``PackagingError`` when a file cannot be opened as a database, or when `old`
    ///   has no table or column a reference names.
    public static func removedReferencedKeys(old: URL, new: URL, references: [SeedReference]) throws -> [String] {
        try SeedDiff.referencedKeys(old: old, new: new, references: references).filter { $0.removed > 0 }.map { entry in
            let reference = entry.reference
            let more = entry.removed > entry.keys.count ? " and \(entry.removed - entry.keys.count) more" : ""
            let why = entry.note.map { " (\($0))" } ?? ""
            return "\(reference.seedTable).\(reference.seedColumn): the new seed removes \(entry.removed) "
                + "\(entry.removed == 1 ? "key" : "keys") that \(reference.table).\(reference.column) may point to\(why): "
                + entry.keys.joined(separator: ", ") + more
        }
    }

    /// The seeds in `folder`, one subfolder per shipped release (each holding one manifest and its seed),
    /// ordered by version (``SeedVersion``'s order; folder name when versions cannot be ordered).
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
