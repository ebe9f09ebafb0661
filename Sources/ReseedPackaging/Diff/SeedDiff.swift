import Foundation
import GRDB
import Reseed
import ReseedSystem
import SystemPackage

/// What changed between two releases of a seed: schema objects, columns, and rows.
///
/// Both databases are opened read-only. Rows are compared table by table by
/// walking both tables in key order side by side, so memory stays flat however
/// large the tables are. Reseed's own tables (`reseed_…`) and SQLite's
/// (`sqlite_…`) are left out; the seed name and version they record are
/// reported in ``old`` and ``new`` instead.
///
/// ```swift
/// let diff = try SeedDiff.compare(old: URL(filePath: "songs-1.0.sqlite"),
///                                 new: URL(filePath: "songs-1.1.sqlite"))
/// if !diff.isEmpty { print(diff.renderText()) }
/// ```
public struct SeedDiff: Sendable, Codable, Equatable {
    /// One of the two databases compared.
    public struct Side: Sendable, Codable, Equatable {
        /// The path of the database file, as given.
        public var path: String
        /// The seed name recorded in `reseed_metadata`, or nil when there is none.
        public var name: String?
        /// The seed version recorded in `reseed_metadata`, or nil when there is none.
        public var version: String?
    }

    /// One schema object or column that was added, removed or changed.
    ///
    /// Objects are matched by type and name; an object is changed when its
    /// `CREATE` statement differs outside of whitespace. Columns are compared
    /// for tables present in both databases, from `PRAGMA table_xinfo`.
    ///
    /// ```swift
    /// // SchemaChange(kind: .added, type: .column, table: "songs", name: "year",
    /// //              detail: "INTEGER NOT NULL DEFAULT 0")
    /// ```
    public struct SchemaChange: Sendable, Codable, Equatable {
        /// Whether the object exists only in the new database, only in the old one, or differs.
        public enum Kind: String, Sendable, Codable, Equatable {
            /// Only in the new database.
            case added
            /// Only in the old database.
            case removed
            /// In both, with a different definition.
            case changed
        }

        /// The kind of schema object concerned.
        public enum ObjectType: String, Sendable, Codable, Equatable {
            /// A table, virtual ones included.
            case table
            /// An index; ``SchemaChange/table`` names its table.
            case index
            /// A view.
            case view
            /// A trigger; ``SchemaChange/table`` names its table.
            case trigger
            /// A column of a table present in both databases; ``SchemaChange/table`` names it.
            case column
        }

        /// Added, removed or changed.
        public var kind: Kind
        /// What sort of object changed; encoded as `"table"`, `"index"`, `"view"`, `"trigger"` or `"column"`.
        public var type: ObjectType
        /// The table an index, trigger or column belongs to; nil for tables and views.
        public var table: String?
        /// The name of the object or column.
        public var name: String
        /// The `CREATE` statement in the old database; nil for columns and added objects.
        public var oldSQL: String?
        /// The `CREATE` statement in the new database; nil for columns and removed objects.
        public var newSQL: String?
        /// For columns: the definition (added, removed) or what differs (changed),
        /// such as `type INTEGER → TEXT, NOT NULL added`.
        public var detail: String?
    }

    /// The row changes of one table present in both databases.
    ///
    /// Rows are matched by ``key``. Only the columns present in both
    /// databases are compared, and not generated ones, which follow from the others. Values compare as SQLite compares them with the
    /// `BINARY` collation: the INTEGER `1` and the TEXT `'1'` differ, the
    /// INTEGER `1` and the REAL `1.0` do not, and text compares byte for byte.
    ///
    /// ```swift
    /// // TableChange(name: "songs", key: ["id"], added: 12, removed: 0, changed: 3, …)
    /// ```
    public struct TableChange: Sendable, Codable, Equatable {
        /// One row shown as an example: its key and, for a changed row, the values that differ.
        public struct RowExample: Sendable, Codable, Equatable {
            /// The key values, in the order of ``TableChange/key``, as SQL literals.
            public var key: [String]
            /// The columns whose value differs, in column order; empty for added and removed rows.
            public var changes: [ValueChange]
        }

        /// One column of a changed row, with its old and new value as SQL literals.
        ///
        /// Literals look like `NULL`, `42`, `3.5`, `'text'` and `X'ABCD'`. Text longer
        /// than 200 characters and blobs longer than 100 bytes are cut, marked with `…`
        /// and followed by their size: `'Lorem ipsum…' (5120 bytes)`.
        public struct ValueChange: Sendable, Codable, Equatable {
            /// The column's name.
            public var column: String
            /// The value in the old database.
            public var old: String
            /// The value in the new database.
            public var new: String
        }

        /// The table's name.
        public var name: String
        /// The columns rows are matched by: the primary key in key order, or a
        /// single rowid alias such as `rowid` for tables without a primary key.
        ///
        /// A rowid table whose key does not identify its rows (none, or one holding NULL) has its
        /// rows matched by content, as a row-level delta matches them: a row that only moved to
        /// another rowid is no change, and rows are named by their rowid (the new one for a changed row).
        public var key: [String]
        /// How many rows only the new database has.
        public var added: Int
        /// How many rows only the old database has.
        public var removed: Int
        /// How many rows both have, with at least one compared value that differs.
        public var changed: Int
        /// Up to `exampleLimit` added rows, in key order.
        public var addedExamples: [RowExample]
        /// Up to `exampleLimit` removed rows, in key order.
        public var removedExamples: [RowExample]
        /// Up to `exampleLimit` changed rows, in key order.
        public var changedExamples: [RowExample]
        /// Why the rows were not compared, such as a primary key that changed
        /// beyond matching; nil when they were.
        public var rowsNotCompared: String?
    }

    /// The database compared against: the older release.
    public var old: Side
    /// The database compared: the newer release.
    public var new: Side
    /// Schema objects and columns added, removed or changed, grouped by table.
    public var schema: [SchemaChange]
    /// The tables present in both databases whose rows differ, sorted by name.
    public var tables: [TableChange]
    /// Per reference given, the keys user rows may point to that the new seed no longer has
    /// (see ``referencedKeys(old:new:references:keyLimit:)``); nil when none were asked for.
    public var referencedKeys: [ReferencedKeys]? = nil
    /// What a row-level delta from the old seed to the new one would weigh (see
    /// ``deltaSize(old:new:)``); nil when it was not asked for.
    public var delta: DeltaSize? = nil

    /// True when neither the schema nor any row differs; the seed names and versions are not considered.
    public var isEmpty: Bool { schema.isEmpty && tables.isEmpty }

    /// Compares two SQLite databases, opened read-only.
    ///
    /// - Parameters:
    ///   - old: The older database file.
    ///   - new: The newer database file.
    ///   - exampleLimit: How many added, removed and changed rows to show per
    ///     table, each; counts stay exact beyond it. Default 5; a negative value counts as 0.
    /// - Returns: The differences, empty when the databases hold the same schema and rows.
    /// - Throws: ``PackagingError`` (step ``PackagingError/Step/diff``) when a file is missing, is a folder or is not a SQLite
    ///   database (its ``PackagingError/errno`` is the `stat(2)` failure, such as `ENOENT`, or
    ///   `EISDIR` for a folder), or when SQLite fails while reading either one.
    ///
    /// ```swift
    /// let diff = try SeedDiff.compare(old: oldURL, new: newURL, exampleLimit: 3)
    /// for table in diff.tables { print(table.name, table.added, table.removed, table.changed) }
    /// ```
    public static func compare(old: URL, new: URL, exampleLimit: Int = 5) throws(PackagingError) -> SeedDiff {
        // Every failure below is already a PackagingError naming its file; the wrap only types it.
        try packaging(.diff, path: old.path) { try compareOpened(old: old, new: new, exampleLimit: exampleLimit) }
    }

    /// ``compare(old:new:exampleLimit:)`` with untyped throws, as GRDB's closures throw.
    private static func compareOpened(old: URL, new: URL, exampleLimit: Int) throws -> SeedDiff {
        try readingBoth(old: old, new: new) { oldDB, newDB in
            let oldSchema = try Failure.attributing(to: old.path) { try SchemaSnapshot.read(oldDB) }
            let newSchema = try SchemaSnapshot.read(newDB)
            let comparison = TableComparison(
                old: oldSchema, new: newSchema, oldPath: old.path, newPath: new.path,
                exampleLimit: max(0, exampleLimit))
            return SeedDiff(
                old: Side(path: old.path, name: oldSchema.seedName, version: oldSchema.seedVersion),
                new: Side(path: new.path, name: newSchema.seedName, version: newSchema.seedVersion),
                schema: SchemaSnapshot.changes(from: oldSchema, to: newSchema),
                tables: try comparison.run(old: oldDB, new: newDB))
        }
    }

    /// Opens both files read-only and runs `body` in one read transaction on each, so everything
    /// it reads is seen at one instant. A SQLite error in `body` is attributed to the new file
    /// unless `body` attributes it to the old one itself.
    /// A compressed seed file (`<name>.sqlite.gz`, its manifest beside it) is decompressed first,
    /// into a checked temporary copy removed afterwards.
    static func readingBoth<T>(old: URL, new: URL, _ body: (_ old: Database, _ new: Database) throws -> T) throws -> T {
        let oldFile = try databaseFile(old)
        let oldQueue = try openReadOnly(oldFile.copied == nil ? old : URL(fileURLWithPath: oldFile.path))
        defer { try? oldQueue.close() }
        let newFile = try databaseFile(new)
        let newQueue = try openReadOnly(newFile.copied == nil ? new : URL(fileURLWithPath: newFile.path))
        defer { try? newQueue.close() }
        return try Failure.attributing(to: old.path) {
            try oldQueue.read { oldDB in
                try Failure.attributing(to: new.path) {
                    try newQueue.read { newDB in try body(oldDB, newDB) }
                }
            }
        }
    }

    /// The diff as JSON: pretty-printed with sorted keys, so the same diff always gives the same bytes.
    ///
    /// Optional fields that are nil are left out. `JSONDecoder` reads the output back into an equal value.
    ///
    /// ```swift
    /// try diff.jsonData().write(to: URL(filePath: "diff.json"))
    /// ```
    /// - Throws: `EncodingError` from `JSONEncoder`, which plain strings and numbers do not cause.
    public func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }

    /// The database file at `url`: the file itself, or for a compressed seed file
    /// (`<name>.sqlite` and a codec's suffix) a checked, decompressed copy that lives as long as the value.
    static func databaseFile(_ url: URL) throws -> Seed.DatabaseFile {
        let name = url.lastPathComponent
        guard url.isFileURL, Codecs.all.contains(where: { name.hasSuffix(".sqlite" + $0.fileSuffix) }) else { return Seed.DatabaseFile(path: url.path) }
        return try Seed(at: url).databaseFile()
    }

    /// Opens `url` read-only; fails naming it when it is missing, a folder, not a regular file or not a database.
    static func openReadOnly(_ url: URL) throws -> DatabaseQueue {
        let path = url.path
        guard url.isFileURL else { throw Failure.make(path: url.absoluteString, message: "not a file URL") }
        let status: Stat
        do {
            status = try FilePath(path).stat()
        } catch {
            throw PackagingError(.io, step: .diff, path: path, message: error == .noSuchFileOrDirectory ? "cannot open" : "cannot read the file", errno: error)
        }
        guard status.type != .directory else {
            throw PackagingError(.io, step: .diff, path: path, message: "is a directory, not a database file", errno: .isDirectory)
        }
        // SQLite's own open of a FIFO waits for a writer forever: the file is first opened as
        // `init` and `verify` open theirs, without blocking, and refused unless it is a regular file.
        do {
            _ = try FileSystem.openRegularFile(path)
        } catch {
            throw PackagingError(.invalidArgument, step: .diff, path: path, message: "cannot read the database" + (error.reason.map { ": " + $0 } ?? ""),
                                 errno: error.errno, advice: "give the path of a SQLite database file")
        }

        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = "reseed.diff"
        return try Failure.attributing(to: path) {
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            // SQLite reads the header lazily: touch the schema now so a bad file fails here, by name.
            try queue.read { try $0.execute(sql: "SELECT count(*) FROM sqlite_master") }
            return queue
        }
    }
}

extension SeedDiff {
    /// Builds the ``PackagingError`` of a comparison that could not be made, about `path`.
    enum Failure {
        static func make(path: String, message: String, databaseError: DatabaseError? = nil) -> PackagingError {
            PackagingError(databaseError == nil ? .io : .database, step: .diff, path: path, message: message, databaseError: databaseError)
        }

        /// Runs `body`, turning a `DatabaseError` into a failure on `path`; other errors pass through.
        static func attributing<T>(to path: String, _ body: () throws -> T) throws -> T {
            do {
                return try body()
            } catch let error as DatabaseError {
                throw make(path: path, message: message(for: error), databaseError: error)
            }
        }

        private static func message(for error: DatabaseError) -> String {
            switch error.resultCode {
            case .SQLITE_NOTADB: "not a SQLite database"
            case .SQLITE_CANTOPEN: "cannot open the database file"
            case .SQLITE_CORRUPT: "the database file is corrupt"
            default: "SQLite failed while reading the database"
            }
        }
    }
}
