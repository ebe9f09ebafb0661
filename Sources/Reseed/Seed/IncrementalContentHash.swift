import Foundation
import GRDB
import ReseedSystem

/// A seed's content hash that a row-level delta can update without reading the whole seed: the
/// SHA-256 of the seed's schema, its header values and the ``RowSetHash`` of all its rows.
///
/// It names the same content as ``SeedContentHash`` (two seeds with the same schema and rows have
/// the same one), but its rows are combined by addition, so the hash after a delta follows from
/// the hash before it and the rows the delta changed. `reseed publish` states it in the channel's
/// manifest beside `contentHash` (``SeedManifest/incrementalContentHash``); a delta carries the row
/// set of the seed it starts from, and the app checks the result against the signed value after
/// reading only the changed rows. The encoding is specified in <doc:ContentHash>.
///
/// ```swift
/// let (contentHash, incremental) = try SeedContentHash.computeWithIncremental(path: "SeedData/triage.sqlite")
/// print(incremental.hash) // 64 lowercase hex digits
/// ```
public struct IncrementalContentHash: Sendable, Hashable {
    /// The version of the encoding, hashed after its name (`reseed-incremental-content-hash 1`).
    public static let encodingVersion = 1

    /// The hash: 64 lowercase hex digits.
    public var hash: String
    /// The row set the hash covers: 2,048 bytes (``RowSetHash``), what a delta carries to start from.
    public var rowSet: [UInt8]

    /// The hash of the `main` database of `db` (its schema and header, read now) with `rowSet` as its rows.
    init(db: Database, rowSet: RowSetHash) throws {
        self.hash = try Self.digest(db, rowSet: rowSet)
        self.rowSet = rowSet.bytes
    }

    /// Hashes the database file at `path`, opened read-only, reading every row.
    ///
    /// - Throws: ``ReseedError`` (step ``ReseedError/Step/verify``) as ``SeedContentHash/compute(path:)``.
    public static func compute(path: String) throws(ReseedError) -> IncrementalContentHash {
        try SeedContentHash.computeWithIncremental(path: path).incremental
    }

    /// The hash of the `main` database of `db` whose rows have the row set `rowSet`: reads the schema
    /// and the header values, not the rows.
    static func digest(_ db: Database, rowSet: RowSetHash) throws -> String {
        let content = try ContentTables.read(db)
        var hasher = ContentHasher(capacity: 4096)
        hasher.text(Array("reseed-incremental-content-hash".utf8))
        hasher.integer(Int64(encodingVersion))
        hasher.integer(try Int64.fetchOne(db, sql: "PRAGMA main.user_version") ?? 0)
        hasher.integer(try Int64.fetchOne(db, sql: "PRAGMA main.application_id") ?? 0)
        SeedContentHash.hashSchema(try SeedContentHash.schema(db, layout: content.layout), into: &hasher)
        let tables = content.tables.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
        hasher.integer(Int64(tables.count))
        for table in tables {
            let rows = try TableRows(table.name, withoutRowid: table.withoutRowid, db)
            hasher.text(Array(table.name.utf8))
            hasher.integer(rows.hashesRowid ? 1 : 0)
            hasher.integer(Int64(rows.columnCount))
        }
        hasher.blob(rowSet.bytes)
        return hasher.finalize()
    }
}
