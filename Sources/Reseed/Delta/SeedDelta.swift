import Foundation
import GRDB
import GRDBSQLite

/// A row-level delta between two releases of a seed, and the one way to apply it.
///
/// A delta is a small SQLite file (specified in <doc:RowLevelDeltas>): a header naming the content
/// hash it starts from and the one it leads to, and per changed table the keys of the deleted
/// rows, the changed values of the updated rows and the inserted rows. Format 2 adds a schema
/// list: tables, indexes, views and triggers to drop, and the `CREATE` statements of new ones. `ReseedPackaging`'s
/// `SeedDeltaBuilder` writes it; the app applies it to a private copy of its installed seed.
///
/// ```swift
/// let header = try SeedDelta.readHeader(path: deltaPath)
/// guard header.fromContentHash == installedContentHash else { /* download the full seed */ }
/// let applied = try SeedDelta.apply(deltaPath: deltaPath, to: copyPath, expectedContentHash: manifest.contentHash)
/// ```
package enum SeedDelta {
    /// The formats this Reseed writes and reads: a delta without schema changes is format 1, byte
    /// for byte as before format 2 existed, so apps that read format 1 only keep using it.
    package enum Format: Int, Sendable {
        /// Row lists only.
        case rows = 1
        /// Row lists and a schema list (``Names/schema``).
        case schema = 2
        /// Format 2 plus tables whose rows are matched by content and keyed by their rowid, which the
        /// delta reproduces: ``Header/Table/moved`` says which, and their rowid moves travel as runs
        /// (``Names/List/moved``). Written only when a table needs it.
        case rowids = 3
        /// Format 3 plus tables rebuilt under a new definition with their rows kept (a `rebuild`
        /// entry of the schema list): a table whose `CREATE` statement changed but whose columns did
        /// not travels as its changed rows, not whole. Written only when a table needs it.
        case rebuild = 4
    }
    /// The most tables a delta may list; a seed with more has no delta.
    package static let maxTables = 10_000

    /// What a delta says about itself: where it starts, where it leads, and what it changes.
    struct Header: Sendable, Equatable {
        /// The delta format (``SeedDelta/Format``).
        var format: Int
        /// The content hash of the seed the delta applies to (64 lowercase hex digits).
        var fromContentHash: String
        /// The ``RowSetHash`` of the seed it applies to (key `fromRowSet`, a 2,048-byte BLOB), for
        /// an incremental check of the result; nil in a delta written before it existed.
        var fromRowSet: RowSetHash?
        /// The content hash of the seed applying it yields.
        var toContentHash: String
        /// `PRAGMA user_version` of the new seed.
        var userVersion: Int32
        /// `PRAGMA application_id` of the new seed.
        var applicationID: Int32
        /// The changed tables, in the order of their index in the delta.
        var tables: [Table]
        /// The objects to drop and create (format 2); empty in format 1.
        var schemaChanges: [SchemaChange] = []
        /// Whether the delta carries the new seed's statistics and AUTOINCREMENT counters whole (key
        /// `statistics`, INTEGER 1; see ``Names/statistics``); false in a delta written before they travelled.
        var statistics = false

        /// One changed table and how many rows of each kind the delta carries for it.
        struct Table: Sendable, Equatable {
            /// Its index in the delta: its row lists are `reseed_delta_<index>_deleted` and so on.
            var index: Int
            var name: String
            var deleted: Int
            var updated: Int
            var inserted: Int
            /// Nil: the rows are matched by the table's key (formats 1 and 2). Format 3, a number: the
            /// lists are keyed by rowid (the old one for deleted and updated rows, the new one for
            /// inserted rows), updates apply before the moves, and this many rows move, in runs.
            var moved: Int?

            init(index: Int, name: String, deleted: Int, updated: Int, inserted: Int, moved: Int? = nil) {
                self.index = index
                self.name = name
                self.deleted = deleted
                self.updated = updated
                self.inserted = inserted
                self.moved = moved
            }

            /// The row count of `list`.
            func count(_ list: Names.List) -> Int {
                switch list {
                case .deleted: deleted
                case .updated: updated
                case .inserted: inserted
                case .moved: moved ?? 0
                }
            }
        }
    }

    /// What applying a delta did.
    package struct Applied: Sendable, Equatable {
        /// The delta's header; its counts are the rows deleted, updated and inserted.
        var header: Header
        /// The content hash of the result: computed and checked equal to the expected one before
        /// the commit or, when ``incrementalContentHash`` was checked instead, the expected one.
        var contentHash: String
        /// The result's ``IncrementalContentHash``, checked before the commit from the rows the
        /// delta changed; nil when the whole result was hashed instead.
        var incrementalContentHash: String?
    }

    /// Reads and checks the header of the delta at `path`, opened read-only.
    ///
    /// - Throws: ``ReseedError`` (step ``ReseedError/Step/applyDelta``): ``ReseedError/Code/invalidDelta``
    ///   when the file is not a delta, has another format or a malformed header; ``ReseedError/Code/database``
    ///   when SQLite cannot read it.
    static func readHeader(path: String) throws(ReseedError) -> Header {
        try during(.applyDelta, path: path) {
            var configuration = Configuration()
            configuration.readonly = true
            configuration.label = "reseed.delta"
            configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA trusted_schema = OFF") }
            do {
                let queue = try DatabaseQueue(path: path, configuration: configuration)
                defer { try? queue.close() }
                return try queue.read { db in try HeaderReader(db: db, schema: "main", path: path).read() }
            } catch let error as DatabaseError where [.SQLITE_NOTADB, .SQLITE_CORRUPT].contains(error.resultCode) {
                throw ReseedError(.invalidDelta, step: .applyDelta, path: path, databaseError: error, message: "not a SQLite database SQLite can read")
            }
        }
    }

    /// Applies the delta at `deltaPath` to the seed at `targetPath` in one transaction, and commits
    /// only if the result's content hash is `expectedContentHash`.
    ///
    /// With `incremental` and a delta that carries the row set it starts from, the result is checked
    /// without reading it whole, when that row set is vouched for as the target's: by
    /// `incremental.from`, the content hash the caller knows the target holds, which must be the
    /// delta's starting content hash (the signed delta then carries that seed's row set: the
    /// publisher computed it from the seed), and by `incremental.installed`, the
    /// ``IncrementalContentHash`` recorded for the target, which the target's schema with the
    /// delta's row set must give; each that is given must hold, and one must be given. Then each row
    /// the delta changes is removed from that row set before the change and added after it, and the
    /// result's schema with the row set reached must give `incremental.expected`. The rows the delta
    /// does not touch are taken to be the ones the starting row set covers: the caller passes
    /// `incremental` only for a target it knows unchanged since it held that seed (see
    /// <doc:ContentHash>). Otherwise the whole result is hashed, as without it.
    ///
    /// `targetPath` must be a private copy (a temp file nobody else opens) in rollback-journal
    /// mode, or in WAL mode with its `-wal` beside it, which the apply checkpoints into it and
    /// removes, leaving it in rollback-journal mode; its commit is not synced (`synchronous = OFF`):
    /// what makes it durable is the install that syncs it afterwards. With `discardedOnFailure` the caller deletes the target whenever
    /// this throws, so no rollback journal is written (`journal_mode = OFF`): the apply writes each
    /// page it changes once, not twice, and a failed apply leaves the target undefined, not as it
    /// was. The page cache holds up to 32 MiB, so that no changed page is written twice.
    ///
    /// The delta is attached read-only. Triggers are off and foreign keys unchecked while it
    /// applies: the delta sets rows, exactly, and the content hash checks the whole result.
    /// All SQL is made from the target's own schema, but for a format-2 delta's `CREATE` statements,
    /// each checked to create exactly the object it names (see <doc:RowLevelDeltas>); the delta's
    /// tables must have the columns the format expects for each table and as many rows as its header says.
    ///
    /// `checkingResult`, when given, runs on the same connection once the result is committed: the
    /// caller's checks of the result, spared opening it again (which reads its whole schema).
    ///
    /// `rowsApplied` hears of the apply as (rows applied, rows the header lists), `rowsHashed` of the
    /// content hash as (rows hashed, rows of the result): each call at most every few thousand
    /// rows, the last one with the total. With `rowsApplied`, each row list is applied in chunks of
    /// ``DeltaApplier/rowsPerStep`` rows, in the same transaction and the same order.
    ///
    /// - Returns: the header and the content hash reached (equal to `expectedContentHash`).
    /// - Throws: ``ReseedError`` (step ``ReseedError/Step/applyDelta``), the target left as it was
    ///   (but for a failure of `checkingResult`, which runs after the commit: the caller discards the target):
    ///   ``ReseedError/Code/invalidDelta`` for a malformed delta or one of an unknown format;
    ///   ``ReseedError/Code/deltaMismatch`` when the delta does not fit the target (a table it
    ///   lacks, a row to delete or update that is missing, a row to insert that exists);
    ///   ``ReseedError/Code/verificationFailed`` when the delta leads elsewhere than
    ///   `expectedContentHash` or the result hashes otherwise (the message names both hashes);
    ///   ``ReseedError/Code/database`` when SQLite fails.
    package static func apply(
        deltaPath: String, to targetPath: String, expectedContentHash: String, incremental: (from: String?, installed: String?, expected: String)? = nil,
        discardedOnFailure: Bool = false, rowsApplied: ((_ applied: Int64, _ total: Int64) -> Void)? = nil, rowsHashed: ((_ hashed: Int64, _ total: Int64) -> Void)? = nil,
        checkingResult: ((Database) throws(ReseedError) -> Void)? = nil
    ) throws(ReseedError) -> Applied {
        let configuration = Configuration.settingRows(label: "reseed.applyDelta", path: targetPath, for: "the delta")
        let queue = try during(.applyDelta, path: targetPath) { try DatabaseQueue(path: targetPath, configuration: configuration) }
        defer { try? queue.close() }
        return try during(.applyDelta, path: targetPath) {
            try queue.writeWithoutTransaction { db in
                // No fsync: the target is a private copy; the install that takes it syncs it. First: leaving
                // WAL mode checkpoints a copy's -wal into it.
                try db.execute(sql: "PRAGMA main.synchronous = OFF")
                let journal = discardedOnFailure ? "off" : "delete"
                guard try String.fetchOne(db, sql: "PRAGMA main.journal_mode = \(journal)")?.lowercased() == journal else {
                    throw ReseedError(.database, step: .applyDelta, path: targetPath, message: "SQLite did not set the copy's journal mode to \(journal)")
                }
                // Room for the pages a delta changes (32 MiB at most), so that none is written twice
                // because the default 2 MiB cache spilled it before the commit.
                try db.execute(sql: "PRAGMA main.cache_size = -32768")
                // The temp table rows move through (see DeltaApplier.move) is gone with the connection: no
                // journal (dropping it would copy each of its pages into one), and as much room as the target.
                try db.execute(sql: "PRAGMA temp.journal_mode = OFF")
                try db.execute(sql: "PRAGMA temp.cache_size = -32768")
                try attach(deltaPath, db)
                defer { try? db.execute(sql: "DETACH DATABASE \(Names.attached)") }
                let header = try HeaderReader(db: db, schema: Names.attached, path: deltaPath).read()
                guard header.toContentHash == expectedContentHash else {
                    throw ReseedError(.verificationFailed, step: .applyDelta, path: deltaPath, message:
                        "the delta leads to content hash \(header.toContentHash), not the expected \(expectedContentHash)")
                }
                var reached = expectedContentHash
                var reachedIncremental: String?
                try db.inTransaction(.immediate) {
                    // The incremental check when the delta's starting row set is vouched for as the
                    // target's; else the whole result is hashed.
                    var rowSet: RowSetAccumulator?
                    if let incremental, let start = header.fromRowSet, try startsFrom(start, of: header, vouchedBy: incremental, db) {
                        rowSet = RowSetAccumulator(hash: start)
                    }
                    try DeltaApplier(db: db, header: header, deltaPath: deltaPath, targetPath: targetPath, progress: rowsApplied).run(rowSet: &rowSet)
                    if let incremental, let tracked = rowSet?.finish() {
                        let digest = try IncrementalContentHash.digest(db, rowSet: tracked)
                        guard digest == incremental.expected else {
                            throw ReseedError(.verificationFailed, step: .applyDelta, path: targetPath, message:
                                "the delta applied yields incremental content hash \(digest), not the expected \(incremental.expected); rolled back")
                        }
                        reachedIncremental = digest
                        rowsHashed?(1, 1)
                    } else {
                        reached = try SeedContentHash.compute(db: db, progress: rowsHashed)
                        guard reached == expectedContentHash else {
                            throw ReseedError(.verificationFailed, step: .applyDelta, path: targetPath, message:
                                "the delta applied yields content hash \(reached), not the expected \(expectedContentHash); rolled back")
                        }
                    }
                    return .commit
                }
                try checkingResult?(db)
                return Applied(header: header, contentHash: reached, incrementalContentHash: reachedIncremental)
            }
        }
    }

    /// Whether the delta's starting row set `start` is the target's, as `incremental` vouches (see
    /// ``apply(deltaPath:to:expectedContentHash:incremental:discardedOnFailure:rowsApplied:rowsHashed:checkingResult:)``):
    /// every vouching given holds, and one is given.
    private static func startsFrom(
        _ start: RowSetHash, of header: Header, vouchedBy incremental: (from: String?, installed: String?, expected: String), _ db: Database
    ) throws -> Bool {
        guard incremental.from != nil || incremental.installed != nil else { return false }
        if let from = incremental.from, from != header.fromContentHash { return false }
        if let installed = incremental.installed, try IncrementalContentHash.digest(db, rowSet: start) != installed { return false }
        return true
    }

    /// Attaches the delta read-only as ``Names/attached``; refuses an attachment SQLite made writable.
    private static func attach(_ deltaPath: String, _ db: Database) throws {
        do {
            try db.execute(sql: "ATTACH DATABASE ? AS \(Names.attached)", arguments: [Launcher.readOnlyURI(deltaPath)])
        } catch let error as DatabaseError {
            throw ReseedError(.invalidDelta, step: .applyDelta, path: deltaPath, databaseError: error,
                              message: "the delta cannot be attached (not a SQLite database, or another text encoding than the seed's)")
        }
        guard sqlite3_db_readonly(db.sqliteConnection, Names.attached) == 1 else {
            throw ReseedError(.database, step: .applyDelta, path: deltaPath,
                              message: "this SQLite did not attach the delta read-only (URI file names are off)")
        }
    }
}
