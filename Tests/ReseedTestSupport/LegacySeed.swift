import Foundation
import GRDB
import Reseed
import ReseedPackaging
import ReseedSystem

/// GeoPackage seeds as Reseed built them before it registered its own tables: made from a seed
/// built today, so that the tests of the old layout (launched, updated, verified, adopted)
/// need no old build of Reseed.
public enum LegacySeed {
    /// Rewrites the (uncompressed) seed of the manifest at `manifestURL` into the earlier layout
    /// (no row of `gpkg_contents` or `gpkg_extensions` naming Reseed's tables, no `gpkg_extensions`
    /// that only the build made) and its manifest to match (size, SHA-256, content hashes).
    public static func rewrite(_ manifestURL: URL) throws {
        var manifest = try SeedManifest.read(from: manifestURL)
        precondition(manifest.compression == nil, "LegacySeed rewrites uncompressed seeds only")
        let path = manifestURL.deletingLastPathComponent().appendingPathComponent(manifest.file).path
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { db in
            try db.inTransaction {
                try db.execute(sql: "DELETE FROM gpkg_contents WHERE data_type = 'reseed-metadata'")
                try db.execute(sql: "DELETE FROM gpkg_extensions WHERE extension_name = 'reseed_seed_metadata'")
                // The build created it when the GeoPackage had none (these tests make none empty).
                if try Int.fetchOne(db, sql: "SELECT count(*) FROM gpkg_extensions") == 0 { try db.execute(sql: "DROP TABLE gpkg_extensions") }
                return .commit
            }
            try db.execute(sql: "VACUUM")
        }
        try queue.close()
        let facts = try FileFacts(path: path)
        let hashes = try SeedContentHash.computeWithIncremental(path: path)
        manifest.size = facts.size
        manifest.sha256 = facts.sha256
        manifest.contentHash = hashes.contentHash
        manifest.incrementalContentHash = hashes.incremental.hash
        try manifest.encoded().write(to: manifestURL)
    }
}
