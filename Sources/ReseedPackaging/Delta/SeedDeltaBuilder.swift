import Foundation
import GRDB
import Reseed
import ReseedSystem
import SystemPackage

/// Builds the row-level delta that turns one release of a seed into the next (formats 1 and 2, see
/// `Reseed`'s RowLevelDeltas article), and proves it does before handing it out.
///
/// Both seeds are attached read-only to one connection on the new delta file, and each table's
/// deleted, updated and inserted rows are found and written by set-based SQL, matching rows by
/// content where the key does not identify them, else by key exactly (storage class and bytes: `1`, `1.0`, `'1'` and `x'31'` differ, and so do `'A'`
/// and `'a'` under `NOCASE`). An updated row carries only its changed values. Then the delta is
/// applied to a copy of the old seed, which must reach the new seed's content hash; a delta
/// that does not is never returned. The same two seeds give a byte-identical delta file.
///
/// ```swift
/// switch try SeedDeltaBuilder.build(from: "1.0/triage.sqlite", to: "1.1/triage.sqlite", into: "triage-1.0-1.1.delta") {
/// case .built(let delta): print(delta.size, delta.tables)
/// case .notExpressible(let reason): print("publish the full seed only:", reason)
/// }
/// ```
public enum SeedDeltaBuilder {
    /// The rows a delta carries for one table.
    public struct TableCounts: Sendable, Equatable, Codable {
        /// The table's name.
        public var name: String
        /// Rows of the old seed whose key the new seed lacks: the delta carries their key.
        public var deleted: Int
        /// Rows of both seeds with at least one value that differs: the delta carries their key and changed values.
        public var updated: Int
        /// Rows of the new seed whose key the old seed lacks: the delta carries them whole. For a
        /// table shipped whole, all its rows.
        public var inserted: Int
        /// Rows of a table matched by content (no primary key, or one holding NULL) that are in both seeds
        /// and only changed rowid: the delta carries them as a few runs of rowids, not as rows.
        public var moved: Int
        /// What the delta carries for the table: its changed rows, the whole table, or its drop.
        public var carries: Carries
        /// Why: rows changed, or the table was added, changed its definition, or was dropped.
        public var reason: Reason

        public init(name: String, deleted: Int, updated: Int, inserted: Int, moved: Int = 0, carries: Carries = .rows, reason: Reason = .rowsChanged) {
            self.name = name
            self.deleted = deleted
            self.updated = updated
            self.inserted = inserted
            self.moved = moved
            self.carries = carries
            self.reason = reason
        }
    }

    /// A delta built and verified.
    public struct Built: Sendable, Equatable, Codable {
        /// The content hash of the old seed: the delta applies to a seed with this content only.
        public var fromContentHash: String
        /// The content hash of the new seed, which applying the delta was checked to reach.
        public var toContentHash: String
        /// The changed tables (rows changed, shipped whole or dropped), in the delta's order, dropped
        /// tables last; empty when the seeds hold the same rows and schema.
        public var tables: [TableCounts]
        /// The indexes, views and triggers the delta drops or creates, sorted by the UTF-8 bytes of their names.
        public var schemaObjects: [SchemaObjectChange]
        /// The delta's format: 1 without schema changes, 2 with them, 3 when a table's rows are matched by content and keyed by rowid.
        public var format: Int
        /// The size of the delta file, in bytes.
        public var size: Int64
    }

    /// What ``build(from:to:into:newContentHash:newIncrementalContentHash:)`` did.
    public enum Outcome: Sendable, Equatable {
        /// The delta file was written and checked.
        case built(Built)
        /// No delta can express this change (the reason says why, in one sentence); no file was left at the delta's path.
        case notExpressible(reason: String)
    }

    /// Builds the delta from the seed at `oldPath` to the seed at `newPath` into a new file at `deltaPath`.
    ///
    /// A schema change makes a format-2 delta: tables added are shipped whole, dropped tables
    /// dropped, and indexes, views and triggers dropped and created from their `CREATE` statements.
    /// A table whose definition changed is rebuilt under the new one with its rows kept, and its rows
    /// change row by row (format 4), when its columns did not change (names, declared types, key,
    /// generated or not) and SQLite takes its rows under the new definition; else it is shipped whole. The rows of a table without a primary key, or whose key holds
    /// NULL, are matched by content, and rows that only moved travel as runs of rowids (format 3). A
    /// table whose rows SQLite refuses row by row is shipped whole. Not expressible: seeds in different
    /// text encodings, a change to a virtual table that is not FTS3/4/5 or R-tree keeping its text,
    /// and anything else the verification catches (a zero whose sign alone changed, say).
    /// `user_version` and `application_id` changes are expressed.
    ///
    /// - Parameters:
    ///   - oldPath: The seed the delta starts from; opened read-only.
    ///   - newPath: The seed it leads to; opened read-only.
    ///   - deltaPath: Where to write the delta; must not exist. On any failure or a
    ///     ``Outcome/notExpressible(reason:)``, nothing is left there.
    ///   - newContentHash: The new seed's content hash when the caller has computed it already
    ///     (`reseed publish` does); nil to compute it. Trusted only as far as the verification goes:
    ///     a delta that does not reach it is not expressible.
    ///   - newIncrementalContentHash: The same for the new seed's incremental content hash; the new
    ///     seed is read only when either of the two is nil.
    /// - Throws: ``PackagingError`` (step ``PackagingError/Step/buildDelta``): ``PackagingError/Code/invalidArgument``
    ///   when `deltaPath` exists; ``PackagingError/Code/io`` or ``PackagingError/Code/database`` when a file
    ///   cannot be read or written, naming it.
    public static func build(
        from oldPath: String, to newPath: String, into deltaPath: String, newContentHash: String? = nil, newIncrementalContentHash: String? = nil
    ) throws(PackagingError) -> Outcome
    {
        let deltaURL = URL(fileURLWithPath: deltaPath, isDirectory: false)
        let directory = try packaging(.buildDelta, path: deltaPath) {
            try FileSystem().openDirectory(deltaURL.deletingLastPathComponent(), create: false)
        }
        let name = deltaURL.lastPathComponent
        // Created exclusively, so an existing file is refused and never overwritten.
        do {
            let file = try directory.createExclusive(name)
            try file.close()
        } catch let failure as FileSystemFailure where failure.errno == .fileExists {
            throw PackagingError(.invalidArgument, step: .buildDelta, path: deltaPath, message: "the delta file already exists")
        } catch {
            throw PackagingError.wrapping(error, step: .buildDelta, path: deltaPath)
        }
        var keep = false
        defer {
            if !keep {
                for file in [name] + StoreLayout.sidecars(of: name) { _ = try? directory.remove(file) }
            }
        }
        let old = try packaging(.buildDelta, path: oldPath) { try SeedContentHash.computeWithIncremental(path: oldPath) }
        let fromContentHash = old.contentHash
        let (toContentHash, toIncrementalContentHash): (String, String)
        if let newContentHash, let newIncrementalContentHash {
            (toContentHash, toIncrementalContentHash) = (newContentHash, newIncrementalContentHash)
        } else {
            let new = try packaging(.buildDelta, path: newPath) { try SeedContentHash.computeWithIncremental(path: newPath) }
            (toContentHash, toIncrementalContentHash) = (newContentHash ?? new.contentHash, new.incremental.hash)
        }
        // A table whose rows SQLite refuses in the order a delta applies them (a UNIQUE value passed from row to
        // row, say) is shipped whole on the next try: it never blocks the others.
        var wholeTables: [String] = []
        var contents: DeltaWriter.Written
        while true {
            let written = try packaging(.buildDelta, path: deltaPath) {
                try DeltaWriter(oldPath: oldPath, newPath: newPath, deltaPath: deltaPath, wholeTables: wholeTables)
                    .write(fromContentHash: fromContentHash, fromRowSet: old.incremental.rowSet, toContentHash: toContentHash)
            }
            switch written {
            case .failure(let failure): return .notExpressible(reason: failure.reason)
            case .success(let success): contents = success
            }
            guard let failure = try verify(deltaPath: deltaPath, oldPath: oldPath, newPath: newPath, toContentHash: toContentHash,
                                           incremental: (fromContentHash, old.incremental.hash, toIncrementalContentHash), directory: directory) else { break }
            // The applier names the table whose rows it could not apply: "…: table NAME, updated rows: …".
            let refused = contents.tables.filter { $0.carries == .rows && failure.contains("table \($0.name), ") }
                .max { $0.name.utf8.count < $1.name.utf8.count }
            // A failure that names no table, with tables rebuilt under a new definition: they are shipped whole,
            // as before such rebuilds existed, so that they never cost a delta.
            let rebuilt = contents.tables.filter { $0.reason == .definitionChangedRowsKept }.map(\.name)
            if refused == nil, !rebuilt.isEmpty, wholeTables.count < maxWholeRetries {
                wholeTables += rebuilt
            } else {
                guard let refused, wholeTables.count < maxWholeRetries else { return .notExpressible(reason: failure) }
                wholeTables.append(refused.name)
            }
            try packaging(.buildDelta, path: deltaPath) {
                for file in [name] + StoreLayout.sidecars(of: name) { _ = try? directory.remove(file) }
                let file = try directory.createExclusive(name)
                try file.close()
            }
        }
        let size = try packaging(.buildDelta, path: deltaPath) { try directory.status(name)?.size } ?? 0
        keep = true
        return .built(Built(
            fromContentHash: fromContentHash, toContentHash: toContentHash, tables: contents.tables,
            schemaObjects: contents.schemaObjects, format: contents.format.rawValue, size: size))
    }

    /// How many tables a build ships whole, one try each, after SQLite refused their rows.
    private static let maxWholeRetries = 8

    /// Applies the delta to a scratch copy of the old seed beside it, as an app does (checking the
    /// result's incremental content hash from the changed rows), then hashes the whole result; returns
    /// why it failed, or nil when it reached `toContentHash` both ways. (A result with the new seed's
    /// content has its incremental content hash too: that is not computed again.)
    private static func verify(
        deltaPath: String, oldPath: String, newPath: String, toContentHash: String, incremental: (from: String?, installed: String?, expected: String), directory: Directory
    ) throws(PackagingError) -> String? {
        let scratch = StoreLayout.temporaryName(of: URL(fileURLWithPath: deltaPath).lastPathComponent)
        defer {
            for file in [scratch] + StoreLayout.sidecars(of: scratch) { _ = try? directory.remove(file) }
        }
        try packaging(.buildDelta, path: directory.path(scratch)) {
            let source = try FileSystem.openRegularFile(oldPath)
            let copy = try directory.createExclusive(scratch)
            _ = try directory.fileSystem.perform(.copy, directory.path(scratch)) { () throws(Errno) in
                try FileCopier(hashing: false).copy(from: source, to: copy)
            }
            try copy.close()
        }
        let scratchPath = directory.path(scratch)
        do {
            _ = try SeedDelta.apply(deltaPath: deltaPath, to: scratchPath, expectedContentHash: toContentHash, incremental: incremental)
            let reached = try SeedContentHash.compute(path: scratchPath)
            guard reached == toContentHash else {
                return "the delta applied yields content hash \(reached), not the new seed's \(toContentHash)"
            }
        } catch where error.code == .io {
            throw PackagingError(error, step: .buildDelta)
        } catch {
            return "the delta does not reproduce the new seed on a copy of the old one: \(error.message)"
                + (error.databaseError.map { " (SQLite: \($0.message ?? "\($0.resultCode)"))" } ?? "")
        }
        // Neither content hash covers them: compared here, row for row.
        let reached = try packaging(.buildDelta, path: scratchPath) { try statistics(of: scratchPath) }
        var expected = try packaging(.buildDelta, path: newPath) { try statistics(of: newPath) }
        // What the applier cannot create it leaves out (sqlite_stat4 where this SQLite lacks it, sqlite_sequence without an AUTOINCREMENT table).
        for table in ["sqlite_stat4", "sqlite_sequence"] where reached[table] == nil { expected[table] = nil }
        guard reached == expected else {
            return "the delta applied leaves other ANALYZE statistics or AUTOINCREMENT counters than the new seed's"
        }
        return nil
    }

    /// `sqlite_stat1`, `sqlite_stat4` and `sqlite_sequence` of the database at `path`, opened read-only, each
    /// row with its rowid, in rowid order; a table it lacks is not a key.
    private static func statistics(of path: String) throws -> [String: [[DatabaseValue]]] {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = "reseed.buildDelta"
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in
            var tables: [String: [[DatabaseValue]]] = [:]
            for (table, _, columns) in SeedDelta.Names.statistics
            where try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM main.sqlite_schema WHERE type = 'table' AND name = ?", arguments: [table]) == true {
                let rows = try Row.fetchAll(db, sql: "SELECT rowid, \(columns.joined(separator: ", ")) FROM main.\(table) ORDER BY rowid")
                tables[table] = rows.map { Array($0.databaseValues) }
            }
            return tables
        }
    }
}
