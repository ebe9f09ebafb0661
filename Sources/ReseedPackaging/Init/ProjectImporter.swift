import Foundation
import GRDB
import Reseed
import ReseedSystem
import SystemPackage

/// Turns an existing SQLite database into a Reseed project: `reseed.json` and a `Migrations/`
/// folder whose steps build a seed with the same schema and the same rows, value for value.
///
/// The steps, numbered from `0001`:
/// - `schema.sql`: every `CREATE TABLE`, as the database has it, in the order of creation; a
///   virtual table (FTS3/4/5, R-tree, any module) as `sqlite3 .dump` writes it, a row of
///   `sqlite_schema` under `PRAGMA writable_schema`, its shadow tables as tables whose rows
///   follow like any table's: the seed's full-text or R-tree index is the source's own, so every
///   query (`MATCH`, `bm25()`, `highlight()`, range queries) answers as it does there;
/// - one data step per table that has rows, parents before children (by foreign key), else by
///   name: `NNNN_table.csv` where CSV carries every value exactly (its storage type included,
///   which the column's affinity decides for CSV), else `NNNN_table.sql` of `INSERT`s. A rowid
///   table keeps its rowids: a CSV step's rows are numbered 1, 2, 3…, so a table whose rowids are
///   not, and that no `INTEGER PRIMARY KEY` carries (`INTEGER PRIMARY KEY DESC` does not), is
///   written as `INSERT`s that name them; so is a table whose first column's name starts with
///   U+FEFF (a CSV file's first bytes, read as a byte order mark). Tables whose
///   foreign keys form a cycle, or name their own rows, share one `.sql` step with foreign keys
///   checked at its end;
/// - `sqlite_sequence.sql`: the AUTOINCREMENT counters, when there are any;
/// - `indexes_views_triggers.sql`: `CREATE INDEX`, `CREATE VIEW`, `CREATE TRIGGER` in the order
///   they were created, last, so no trigger fires while rows load;
/// - `sqlite_stat1.sql`: the ANALYZE statistics, when there are any, so the seed plans its
///   queries as the source does.
///
/// `reseed.json` carries the source's `user_version` and `application_id` (`"userVersion"`,
/// `"applicationID"`) when they are not 0. Generated columns are not written (SQLite computes
/// them). Reseed's own tables are left out of a database that is a seed. Not carried: page size
/// and other storage settings, and what ``Result/notCarried`` lists.
///
/// `directory` is created, with its missing parents, when it does not exist. Everything is written
/// in a temp folder inside it, then renamed into place: a failure leaves `directory` as it was.
/// An existing `reseed.json` or `Migrations/` is refused, or with ``force`` replaced: moved aside
/// only once the new project is complete, and moved back when putting the new one in place fails.
///
/// ```swift
/// let result = try ProjectImporter(source: URL(fileURLWithPath: "App.sqlite"),
///                                  directory: URL(fileURLWithPath: "."), name: "App", version: "1.0.0").run()
/// print(result.steps.map(\.fileName))   // ["0001_schema.sql", "0002_category.csv", …]
/// ```
public struct ProjectImporter: Sendable {
    /// The database to start from.
    public var source: URL
    /// Where `reseed.json` and `Migrations/` are written; created with its parents when missing.
    public var directory: URL
    /// The seed (store) name `reseed.json` records.
    public var name: String
    /// The seed version `reseed.json` records.
    public var version: String
    /// Replaces an existing `reseed.json` and `Migrations/` instead of refusing them. Default: false.
    public var force = false
    /// The file-system layer every folder creation and rename goes through (tests observe it).
    var fileSystem = FileSystem()

    /// The name of the folder of steps, and `reseed.json`'s `migrations` and `output` values.
    public static let migrationsFolder = "Migrations"
    public static let outputFolder = "SeedData"
    public static let configurationFile = "reseed.json"

    public init(source: URL, directory: URL, name: String, version: String = "1.0.0") {
        self.source = source
        self.directory = directory
        self.name = name
        self.version = version
    }

    /// One step written.
    public struct Step: Sendable, Hashable {
        public var fileName: String
        /// Rows the step loads; 0 for the schema steps.
        public var rows: Int
        /// Why a data step is SQL rather than CSV; nil for a CSV step and the schema steps.
        public var sqlBecause: String?
    }

    public struct Result: Sendable {
        public var configurationURL: URL
        public var migrationsURL: URL
        public var steps: [Step]
        /// What the source database has that the seed will not (each with the reason).
        public var notCarried: [String]
    }

    /// Reads the source database and writes the project.
    ///
    /// - Throws: ``PackagingError`` (step ``PackagingError/Step/importDatabase``): ``PackagingError/Code/alreadyExists`` naming `reseed.json` or
    ///   `Migrations/` when either is there and ``force`` is false; ``PackagingError/Code/notImportable`` naming what cannot
    ///   be carried (such as a table whose columns named `rowid`, `_rowid_` and `oid` hide its rowids); `invalidArgument` for a bad name or version, or a source that is not a
    ///   regular file holding a SQLite database.
    public func run() throws(PackagingError) -> Result {
        guard SeedManifest.isValidStoreName(name) else {
            throw PackagingError(.invalidArgument, step: .importDatabase, message: "seed name '\(name)' \(SeedManifest.storeNameRule)")
        }
        if let problem = SeedManifest.versionProblem(version) {
            throw PackagingError(.invalidArgument, step: .importDatabase, message: "seed version: \(problem)")
        }
        try checkSource()
        let folder = try packaging(.importDatabase, path: directory.path) { try fileSystem.openDirectory(directory, create: true) }
        if !force { try refuseExisting(in: folder) }
        let temporary = ".reseed-init-" + UUID().uuidString
        try packaging(.importDatabase, path: folder.path(temporary)) { try folder.makeDirectory(temporary, permissions: FilePermissions(rawValue: 0o755)) }
        defer { try? FileManager.default.removeItem(atPath: folder.path(temporary)) }
        let work = try packaging(.importDatabase, path: folder.path(temporary)) { try fileSystem.openDirectory(folder.url.appendingPathComponent(temporary), create: false) }
        let (steps, schema) = try writeSteps(into: work)
        try writeConfiguration(into: work, header: (schema.userVersion, schema.applicationID))
        try packaging(.importDatabase, path: directory.path) { try place(from: work, into: folder) }
        return Result(
            configurationURL: directory.appendingPathComponent(Self.configurationFile),
            migrationsURL: directory.appendingPathComponent(Self.migrationsFolder), steps: steps, notCarried: schema.notCarried)
    }

    private func refuseExisting(in folder: Directory) throws(PackagingError) {
        for name in [Self.configurationFile, Self.migrationsFolder] {
            let status = try packaging(.importDatabase, path: folder.path(name)) { try folder.status(name) }
            if status != nil {
                throw PackagingError(.alreadyExists, step: .importDatabase, path: folder.path(name), message: "already exists, and reseed init replaces a project only when forced",
                                     advice: "pass --force to replace it")
            }
        }
    }

    /// Moves the new `Migrations/` and `reseed.json` from `work` into `folder`, with ``force`` the
    /// old ones into `work` first; when a move fails, the moves done are undone in reverse order, so
    /// `folder` holds what it held before (and `work`, removed by the caller, the new project).
    private func place(from work: Directory, into folder: Directory) throws {
        var undo: [() throws -> Void] = []
        do {
            for name in [Self.migrationsFolder, Self.configurationFile] {
                if force, try folder.status(name) != nil {
                    let aside = "previous-" + name
                    try folder.move(name, to: work, as: aside)
                    undo.append { try work.move(aside, to: folder, as: name) }
                }
                try work.move(name, to: folder, as: name)
                undo.append { try folder.move(name, to: work, as: name) }
            }
            try folder.sync()
        } catch {
            for step in undo.reversed() { try? step() }
            throw error
        }
    }

    /// Opens the source as the library opens its inputs (never blocking on a FIFO, a regular file
    /// only) and checks that it starts with the SQLite header.
    private func checkSource() throws(PackagingError) {
        let path = source.path
        do {
            let file = try FileSystem.openRegularFile(path)
            let header = try file.read(count: 16, at: 0)
            guard StoreHeader.hasMagic(header) else {
                throw PackagingError(.invalidArgument, step: .importDatabase, path: path, message: "not a SQLite database (its first bytes are not the SQLite header)")
            }
        } catch let failure as FileSystemFailure {
            throw PackagingError(.invalidArgument, step: .importDatabase, path: path, message: "cannot read the database" + (failure.reason.map { ": " + $0 } ?? ""), errno: failure.errno)
        } catch let error as Errno {
            throw PackagingError(.io, step: .importDatabase, path: path, message: "cannot read the database", errno: error)
        } catch {
            throw PackagingError.wrapping(error, step: .importDatabase, path: path)
        }
    }

    private func writeSteps(into work: Directory) throws(PackagingError) -> ([Step], SourceSchema) {
        let path = source.path
        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = "reseed.init"
        let queue = try packaging(.importDatabase, path: path) { try DatabaseQueue(path: path, configuration: configuration) }
        defer { try? queue.close() }
        let migrations = try packaging(.importDatabase, path: work.path(Self.migrationsFolder)) {
            try work.makeDirectory(Self.migrationsFolder, permissions: FilePermissions(rawValue: 0o755))
            return try fileSystem.openDirectory(work.url.appendingPathComponent(Self.migrationsFolder), create: false)
        }
        return try packaging(.importDatabase, path: path) {
            // One read transaction: the steps see one state of the database.
            try queue.read { db in
                let schema = try SourceSchema.read(db, path: path)
                let order = schema.loadingOrder()
                let width = max(4, String(order.count + 3).count)
                var next = 1
                func number() -> String {
                    defer { next += 1 }
                    let digits = String(next)
                    return String(repeating: "0", count: width - digits.count) + digits
                }
                var steps: [Step] = []
                let schemaFile = try StepFile("\(number())_schema.sql", in: migrations)
                for statement in schema.creation { try schemaFile.append(statement + ";\n") }
                try schemaFile.flush()
                steps.append(Step(fileName: schemaFile.name, rows: 0))
                let export = TableExport(db: db, values: try ValueText(db), directory: migrations)
                for group in order {
                    let label = number()
                    if let written = try export.write(group, number: label) {
                        steps.append(Step(fileName: written.fileName, rows: written.rows, sqlBecause: written.sqlBecause))
                    } else {
                        next -= 1
                    }
                }
                if !schema.sequences.isEmpty {
                    let file = try StepFile("\(number())_sqlite_sequence.sql", in: migrations)
                    try file.append("DELETE FROM sqlite_sequence;\n")
                    for (table, value) in schema.sequences {
                        try file.append("INSERT INTO sqlite_sequence(name, seq) VALUES(\(ValueText.sqlText(Array(table.utf8))), \(export.values.sqlLiteral(value)));\n")
                    }
                    try file.flush()
                    steps.append(Step(fileName: file.name, rows: 0))
                }
                if !schema.laterObjects.isEmpty {
                    let file = try StepFile("\(number())_indexes_views_triggers.sql", in: migrations)
                    for sql in schema.laterObjects { try file.append(sql + ";\n") }
                    try file.flush()
                    steps.append(Step(fileName: file.name, rows: 0))
                }
                if schema.hasStatistics {
                    let file = try StepFile("\(number())_sqlite_stat1.sql", in: migrations)
                    let rows = try export.writeStatistics(to: file, tables: Set(schema.tables.map { $0.name.lowercased() }))
                    try file.flush()
                    steps.append(Step(fileName: file.name, rows: rows))
                }
                return (steps, schema)
            }
        }
    }

    /// `reseed.json`, with the source's `user_version` and `application_id` when they are not 0.
    private func writeConfiguration(into work: Directory, header: (userVersion: Int32, applicationID: Int32)) throws(PackagingError) {
        struct File: Encodable {
            var name: String
            var version: String
            var migrations: String
            var output: String
            var userVersion: Int32?
            var applicationID: Int32?
        }
        try packaging(.importDatabase, path: work.path(Self.configurationFile)) {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            let data = try encoder.encode(File(
                name: name, version: version, migrations: Self.migrationsFolder, output: Self.outputFolder,
                userVersion: header.userVersion == 0 ? nil : header.userVersion,
                applicationID: header.applicationID == 0 ? nil : header.applicationID))
            let file = try StepFile(Self.configurationFile, in: work)
            try file.append(data + Data("\n".utf8))
            try file.flush()
        }
    }
}
