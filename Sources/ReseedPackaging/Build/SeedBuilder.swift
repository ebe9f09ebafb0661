import Foundation
import GRDB
import GRDBSQLite
import Logging
import Reseed
import ReseedSystem

/// Builds a seed from the steps of a `Migrations/` folder, reproducibly.
///
/// The database is built in a temp file in the output folder with fast,
/// unsafe settings (no sync: the file is not live yet), page size 4096. Each step runs in its own
/// `BEGIN IMMEDIATE` transaction with foreign keys unenforced (a `sqlite3 .dump` writes
/// children before their parents) and must leave `PRAGMA foreign_key_check` empty. A rollback
/// journal in a file lets a statement roll back whole (a CSV step's rows, see `CSVLoader`) and a
/// `.sql` step's `SAVEPOINT` … `ROLLBACK TO` undo what it did, as in `sqlite3`; pages the step adds
/// to the file are not journaled, so loading new rows costs it little, and a step that rewrites a
/// large table cannot fill memory with its old pages.
/// Then `integrity_check` and `foreign_key_check`, the metadata tables, the header's
/// `user_version` and `application_id` (what the steps left, unless ``userVersion`` or
/// ``applicationID`` say otherwise), `ANALYZE` when ``analyze`` is set (else the statistics the
/// steps carry, `sqlite_stat1` rows, stay as they are), `VACUUM INTO` a second temp file (compact,
/// in rollback-journal mode, every rowid as the steps wrote it) and fsync while the built
/// database's ``SeedContentHash`` is computed, and a rename into place beside its manifest.
/// With ``compression`` (`reseed package --compress`) the file put in place is its gzip,
/// `<name>.sqlite.gz`, written durably the same way, and the manifest says `"compression": "gzip"`;
/// the other form a previous build left (`<name>.sqlite`, or `<name>.sqlite.gz` without it) is
/// removed once the manifest names the new file.
/// A failed build removes its temp file and leaves the output folder as it was.
/// Builds into one folder take turns (an `flock` on the folder itself, no lock file);
/// each first removes the temp files a killed build left, since the folder ships in the app.
///
/// The same steps, name and version give the same bytes on any folder, clock
/// or file times (with the same SQLite version, whose number the header holds),
/// and on any checkout: each step is read as its checksum reads it, line ends as LF
/// (see ``MigrationStep/checksum(of:)``).
///
/// Memory is bounded whatever a CSV step holds: a header or record over 64 MiB is an error
/// naming the file and line. A value SQLite cannot store (longer than its length limit) is an
/// error naming the file, line and column, never a NULL. Error messages quote at most a few
/// hundred bytes of a step.
///
/// ```swift
/// let result = try SeedBuilder(
///     migrations: URL(fileURLWithPath: "Migrations"), output: URL(fileURLWithPath: "SeedData"),
///     name: "triage", version: "2.0.0"
/// ).build()
/// print(result.manifest.sha256)
/// ```
public struct SeedBuilder: Sendable {
    /// Progress of a build, for a command line to show.
    public enum Progress: Sendable {
        /// A step is starting.
        case step(MigrationStep)
        /// Rows loaded so far by the running CSV step; `done` on its last report.
        case rows(MigrationStep, Int, done: Bool)
    }

    public var migrations: URL
    public var output: URL
    public var name: String
    public var version: String
    /// Where the build logs; default silent (a no-op handler).
    public var logger = Logger(label: "reseed.packaging") { _ in SwiftLogNoOpLogHandler() }
    /// Called as steps start and rows load. Default nil.
    public var progress: (@Sendable (Progress) -> Void)?
    /// How long a build waits for another one building into the same output folder. Default 60 seconds.
    public var lockTimeout: Duration = .seconds(60)
    /// The seed's `PRAGMA user_version`; nil (the default) keeps what the steps left (0 when
    /// none sets it). `"userVersion"` in `reseed.json`.
    public var userVersion: Int32?
    /// The seed's `PRAGMA application_id`; nil (the default) keeps what the steps left (0 when
    /// none sets it). Reseed recognises its seeds by their metadata table, never by this number.
    /// `"applicationID"` in `reseed.json`.
    public var applicationID: Int32?
    /// Whether the build ends with `ANALYZE`, replacing the statistics the steps carry; default
    /// false. `"analyze": true` in `reseed.json`. Both ways the same steps give the same bytes.
    public var analyze = false
    /// How the seed file is compressed in the output folder; nil (the default) writes the
    /// database itself. See <doc:Reseed/CompressingTheSeed> for what it costs and saves.
    public var compression: SeedManifest.Compression?
    /// The bounds of a build, which tests lower so that they need no huge input.
    var limits = Limits()

    /// The bounds of a build: the documented ones unless a test lowers them.
    struct Limits: Sendable {
        /// The longest CSV header or record: ``CSVParser/maxRecordBytes``, 64 MiB.
        var csvRecordBytes = CSVParser.maxRecordBytes
        /// `SQLITE_LIMIT_LENGTH` on the build's connection (the longest value or statement);
        /// nil keeps SQLite's own, 1 GiB unless it was compiled with another.
        var sqliteLength: Int32?
    }

    public init(migrations: URL, output: URL, name: String, version: String) {
        self.migrations = migrations
        self.output = output
        self.name = name
        self.version = version
    }

    /// What a build produced.
    public struct Result: Sendable {
        public var manifest: SeedManifest
        public var seedURL: URL
        public var manifestURL: URL
    }

    /// Builds the seed and writes `<name>.sqlite` (or `<name>.sqlite.gz`, with ``compression``) and
    /// `<name>.manifest.json` into the output folder.
    ///
    /// - Throws: ``PackagingError`` naming the step file and line that failed: step
    ///   ``PackagingError/Step/readMigrations`` when `Migrations/` cannot be read, else ``PackagingError/Step/build``.
    public func build() throws(PackagingError) -> Result {
        guard SeedManifest.isValidStoreName(name) else {
            throw PackagingError(.invalidArgument, step: .build, message: "seed name '\(name)' \(SeedManifest.storeNameRule)")
        }
        if let problem = SeedManifest.versionProblem(version) {
            throw PackagingError(.invalidArgument, step: .build, message: "seed version: \(problem) (a version is 1-\(SeedManifest.maximumVersionBytes) bytes of printable characters)")
        }
        let folder = try MigrationsFolder(at: migrations)
        guard !folder.steps.isEmpty else {
            throw PackagingError(.invalidArgument, step: .build, path: migrations.path, message: "the migrations folder has no steps")
        }
        let directory = try packaging(.build, path: output.path) { try FileSystem().openDirectory(output, create: true) }
        let seedName = StoreLayout(store: name).storeFileName
        let compressedNames = Codecs.all.map { seedName + $0.fileSuffix }
        // One build at a time per output folder; then whatever temp files a killed build left go
        // first (the folder is shipped in the app: it must hold nothing else).
        guard let lock = try packaging(.build, path: output.path, { try StoreLock.acquireFolder(directory, timeout: lockTimeout) }) else {
            throw PackagingError(.busy, step: .build, path: output.path, message: "another build is writing into this folder (waited \(lockTimeout))")
        }
        defer { lock.release() }
        let builtNames = [seedName, name + SeedManifest.fileSuffix] + compressedNames
        let leftovers = try packaging(.build, path: output.path) {
            try directory.removeTemporaryFiles { leftover in builtNames.contains { StoreLayout.isTemporary(leftover, of: $0) } }
        }
        if !leftovers.isEmpty {
            logger.notice("removed what an interrupted build left", metadata: ["folder": "\(output.path)", "files": "\(leftovers)"])
        }
        // The database is built in one temp file and compacted by `VACUUM INTO` into a second:
        // one write of the result instead of VACUUM's copy out and back.
        let work = StoreLayout.temporaryName(of: seedName)
        let compacted = StoreLayout.temporaryName(of: seedName)
        do {
            let built = try buildDatabase(work, compactingInto: compacted, in: directory, steps: folder)
            _ = try? directory.remove(work)
            let manifest = try finish(compacted, in: directory, built: built)
            return Result(manifest: manifest, seedURL: output.appendingPathComponent(manifest.file),
                          manifestURL: output.appendingPathComponent(manifest.manifestFileName))
        } catch {
            // Both temp files, any journal and a compressed one: under the folder lock, every such file is this build's.
            _ = try? directory.removeTemporaryFiles { leftover in ([seedName] + compressedNames).contains { StoreLayout.isTemporary(leftover, of: $0) } }
            throw error
        }
    }

    /// The build connection's page cache, in KiB: a bound on the pages a step holds, so the
    /// build's memory stays flat whatever the seed's size. Beyond it SQLite writes dirty pages to
    /// the file before the commit (the file is not live, and a failed step rolls back from its
    /// journal), where a cache larger than the seed held all of them (measured in
    /// `Benchmarks/README.md`, figure 5b).
    static let cacheKiB = 32 * 1024

    /// What the build knows of the compact copy before it is put in place: the steps that built
    /// it, its content hash, and its size, SHA-256 and header (with the file fsynced).
    private struct Built {
        var recorded: [SeedManifest.Step]
        var contentHash: String
        var facts: FileFacts
    }

    private func buildDatabase(
        _ work: String, compactingInto compacted: String, in directory: Directory, steps folder: MigrationsFolder
    ) throws(PackagingError) -> Built {
        let path = directory.path(work)
        let output = directory.path(compacted)
        var configuration = Configuration()
        configuration.label = "reseed.build"
        // Unenforced while steps run, checked after each (see `check(_:path:after:)`): a dump's
        // rows name parents that come later, and a transaction cannot switch enforcement off.
        configuration.foreignKeysEnabled = false
        let lengthLimit = limits.sqliteLength
        configuration.prepareDatabase { db in
            // sqlite3_limit returns the previous limit, not a result code.
            if let lengthLimit { _ = sqlite3_limit(db.sqliteConnection, SQLITE_LIMIT_LENGTH, lengthLimit) }
            try db.execute(sql: """
                PRAGMA page_size = 4096;
                PRAGMA journal_mode = DELETE;
                PRAGMA synchronous = OFF;
                PRAGMA locking_mode = EXCLUSIVE;
                PRAGMA temp_store = MEMORY;
                PRAGMA cache_size = -\(Self.cacheKiB);
                """)
        }
        let queue = try packaging(.build, path: path) { try DatabaseQueue(path: path, configuration: configuration) }
        var recorded: [SeedManifest.Step] = []
        do {
            for step in folder.steps {
                progress?(.step(step))
                // A .sql step is read a chunk at a time as it runs (see `SQLScript`); CSV and JSON are parsed in place.
                let bytes = step.kind == .sql ? Data() : try step.contents()
                // The step's checksum is computed beside the load, on the other core, from reads of the
                // file rather than from the mapping: a step rejected after 64 MiB is not all brought in.
                let (checksum, _) = try packaging(.build, path: step.url.path) {
                    try concurrently({ try step.checksum() }, { try run(step, bytes: bytes, in: queue) })
                }
                recorded.append(SeedManifest.Step(id: step.id, checksum: checksum))
            }
            let metadata = SeedMetadata(name: name, version: version, steps: recorded)
            try packaging(.build, path: path) {
                try queue.writeWithoutTransaction { db in
                    try db.inTransaction(.immediate) {
                        try metadata.write(db)
                        return .commit
                    }
                    if let userVersion { try db.execute(sql: "PRAGMA user_version = \(userVersion)") }
                    if let applicationID { try db.execute(sql: "PRAGMA application_id = \(applicationID)") }
                    if analyze { try db.execute(sql: "ANALYZE") }
                }
                try queue.close()
                // The steps' journal: in exclusive locking mode SQLite keeps the file (its header zeroed).
                for sidecar in StoreLayout.sidecars(of: work) { try directory.remove(sidecar) }
            }
        } catch {
            try? queue.close()
            throw error
        }
        // The finished database is only read from now on: integrity_check and foreign_key_check,
        // VACUUM INTO the compact copy (then the copy's SHA-256 and fsync), and the content hashes
        // run side by side. The hashes read the built database, whose content the copy holds:
        // `VACUUM INTO` copies the rows, the schema and the header's fields, and `checkRowidsKept`
        // fails a build whose copy renumbered a table.
        let readOnly = {
            var configuration = Configuration()
            configuration.readonly = true
            configuration.label = "reseed.build.check"
            return configuration
        }()
        // VACUUM INTO on a read-only connection gives new rowids to the rows of a table with a CHECK
        // constraint and no INTEGER PRIMARY KEY (SQLite 3.40.1), where a read-write one keeps them:
        // the compactor opens the file read-write, and only reads it; then it checks that no table
        // was renumbered (see `checkRowidsKept`).
        let compacting = {
            var configuration = Configuration()
            configuration.label = "reseed.build.compact"
            return configuration
        }()
        return try packaging(.build, path: path) {
            let hashing = BlockingThread.start("reseed-build") { Swift.Result { try SeedContentHash.compute(path: path) } }
            let checked = Swift.Result {
                try concurrently({
                    let checker = try DatabaseQueue(path: path, configuration: readOnly)
                    defer { try? checker.close() }
                    try checker.read { try Self.check($0, path: path, after: nil) }
                }, {
                    let compactor = try DatabaseQueue(path: path, configuration: compacting)
                    defer { try? compactor.close() }
                    try compactor.writeWithoutTransaction { db in
                        // The copy is fsynced once, below, when it is complete.
                        try db.execute(sql: "PRAGMA synchronous = OFF")
                        try db.execute(sql: "VACUUM INTO ?", arguments: [output])
                        try Self.checkRowidsKept(db, copy: output, path: path)
                    }
                    return try FileFacts(path: output, directory: directory, name: compacted)
                })
            }
            let contentHash = hashing.join()
            // What the checks and the copy found comes first: it says what is wrong with the steps.
            let (_, facts) = try checked.get()
            return Built(recorded: recorded, contentHash: try contentHash.get(), facts: facts)
        }
    }

    private func run(_ step: MigrationStep, bytes: Data, in queue: DatabaseQueue) throws(PackagingError) {
        let path = step.url.path
        let progress = self.progress
        let limits = self.limits
        try packaging(.build, path: path) {
            try queue.writeWithoutTransaction { db in
                let written = WrittenTables()
                db.add(transactionObserver: written, extent: .observerLifetime)
                defer { db.remove(transactionObserver: written) }
                let schemaVersion = try Int.fetchOne(db, sql: "PRAGMA schema_version")
                try db.inTransaction(.immediate) {
                switch step.kind {
                case .sql:
                    // Read a chunk at a time, as normalised as the checksum reads it: see `MigrationStep.checksum(of:)`.
                    // The connection's own limit (a negative new value only reads it).
                    let longest = Int(sqlite3_limit(db.sqliteConnection, SQLITE_LIMIT_LENGTH, -1))
                    var script = try SQLScript(step: step, maxStatementBytes: longest)
                    let writesSchema = try script.run { statement in
                        do {
                            try db.execute(sql: statement.sql)
                        } catch let error as DatabaseError {
                            // SQLite's message may quote a whole token (a string literal can be a gigabyte, and span lines).
                            throw PackagingError(.sqlFailed, step: .build, path: path, line: statement.line,
                                                 message: excerpt(error.message ?? "\(error.resultCode)", limit: 400), databaseError: error)
                        }
                    }
                    if writesSchema { try Self.reloadSchema(db, path: path) }
                case .csv:
                    // Parsed in place; the parser reads line ends as the checksum does.
                    var loader = CSVLoader(path: path, table: step.table)
                    loader.maxRecordBytes = limits.csvRecordBytes
                    let rows = try bytes.withUnsafeBytes { buffer throws(PackagingError) in
                        try loader.load(buffer, into: db) { progress?(.rows(step, $0, done: false)) }
                    }
                    progress?(.rows(step, rows, done: true))
                case .json:
                    _ = try JSONLoader(path: path, table: step.table).load(MigrationStep.normalized(bytes), into: db)
                }
                return .commit
                }
                // The loaders step their statements themselves, past GRDB's observation: their table
                // is the step's. A trigger a loaded row fires may write elsewhere: then, and after a
                // schema change, every table is checked.
                let schemaChanged = try Int.fetchOne(db, sql: "PRAGMA schema_version") != schemaVersion
                let triggerCount = step.kind == .sql ? 0 : try Int.fetchOne(db, sql: "SELECT count(*) FROM main.sqlite_schema WHERE type = 'trigger'") ?? 0
                let triggers = triggerCount > 0
                let tables = step.kind == .sql ? written.names : [step.table.lowercased()]
                try Self.check(db, path: path, after: step, onlyAbout: schemaChanged || triggers ? nil : tables)
            }
        }
    }

    /// Reads the schema again after a step that wrote `sqlite_schema` itself (`PRAGMA
    /// writable_schema`, as `.dump` writes a virtual table): until then the connection does not see
    /// what the step added. `RESET` also turns `writable_schema` off for the steps that follow.
    /// A row the step wrote that SQLite cannot read fails here, naming the step.
    private static func reloadSchema(_ db: Database, path: String) throws(PackagingError) {
        do {
            try db.execute(sql: "PRAGMA writable_schema = RESET")
            _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM main.sqlite_schema")
        } catch let error as DatabaseError {
            throw PackagingError(.sqlFailed, step: .build, path: path,
                                 message: "the schema this step wrote is not one SQLite can read: \(excerpt(error.message ?? "\(error.resultCode)", limit: 400))",
                                 databaseError: error)
        } catch {
            throw PackagingError.wrapping(error, step: .build, path: path)
        }
    }

    /// `foreign_key_check` after every step; `integrity_check` too at the end (`step` nil).
    ///
    /// With `written` (lowercased names of the tables a step wrote), only the tables whose rows
    /// could break a foreign key are checked: those written, and those whose parents were (a
    /// deleted or replaced parent row). A full check after each step of a large project cost a
    /// third of its build.
    static func check(_ db: Database, path: String, after step: MigrationStep?, onlyAbout written: Set<String>? = nil) throws {
        var violations: [Row] = []
        if let written {
            for table in try String.fetchAll(db, sql: "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'table'") {
                let parents = try String.fetchAll(db, sql: "SELECT DISTINCT lower(\"table\") FROM pragma_foreign_key_list(?)", arguments: [table])
                guard !parents.isEmpty, written.contains(table.lowercased()) || parents.contains(where: written.contains) else { continue }
                violations += try Row.fetchAll(db, sql: "SELECT * FROM pragma_foreign_key_check(?) LIMIT 4", arguments: [table])
                if violations.count >= 4 { break }
            }
        } else {
            violations = try Row.fetchAll(db, sql: "SELECT * FROM pragma_foreign_key_check LIMIT 4")
        }
        if let first = violations.first {
            let table: String = first[0] ?? "?"
            let parent: String = first[2] ?? "?"
            let row = (first[1] as Int64?).map { "the row with rowid \($0)" } ?? "a row"
            let more = violations.count > 3 ? " (and more rows)" : violations.count > 1 ? " (and \(violations.count - 1) more)" : ""
            throw PackagingError(.foreignKeyViolation, step: .build, path: path, message: """
                \(step == nil ? "at the end of the build" : "after this step"), \(row) of table '\(excerpt(table))' \
                names a row of '\(excerpt(parent))' that does not exist\(more): every step must leave foreign_key_check \
                empty, so add the missing parent rows or fix the child's key
                """)
        }
        if step == nil {
            let result = try String.fetchAll(db, sql: "PRAGMA integrity_check")
            guard result == ["ok"] else {
                throw PackagingError(.integrityCheckFailed, step: .build, path: path, message: "integrity_check: \(result.prefix(5).joined(separator: "; "))")
            }
        }
    }

    /// The suffix of a compressed seed file's name: `<name>.sqlite.gz`.

    /// Put the built file, fsynced and measured (``Built``), or its gzip into place, then write the
    /// manifest beside it, then remove the other form of the seed file an earlier build left.
    private func finish(_ temporary: String, in directory: Directory, built: Built) throws(PackagingError) -> SeedManifest {
        let path = directory.path(temporary)
        let seedName = StoreLayout(store: name).storeFileName
        // The other forms an earlier build may have left: the plain file or another codec's.
        let file = compression.map { seedName + $0.codec.fileSuffix } ?? seedName
        let stale = ([seedName] + Codecs.all.map { seedName + $0.fileSuffix }).filter { $0 != file }
        let (facts, contentHash) = (built.facts, built.contentHash)
        guard let header = facts.header else {
            throw PackagingError(.integrityCheckFailed, step: .build, path: path, message: "the built file does not start with a SQLite header")
        }
        let manifest = SeedManifest(
            facts: SeedFacts(
                name: name, version: version, file: file, size: facts.size, sha256: facts.sha256,
                userVersion: header.userVersion, applicationID: header.applicationID, pageSize: header.pageSize),
            steps: built.recorded, contentHash: contentHash, compression: compression)
        try packaging(.build, path: directory.path(file)) {
            if let compression {
                try compress(temporary, with: compression.codec, into: file, in: directory)
                _ = try directory.remove(temporary)
            } else {
                try directory.rename(temporary, to: seedName)
                try directory.sync()
            }
            try directory.replaceAtomically(manifest.manifestFileName, with: Array(manifest.encoded()), through: StoreLayout.temporaryName(of: manifest.manifestFileName))
            // Only once the manifest names the new file: until then, the old manifest's file stays.
            if try stale.reduce(false, { try directory.remove($1) || $0 }) { try directory.sync() }
        }
        logger.info("built seed", metadata: ["seed": "\(directory.path(file))", "version": "\(version)", "sha256": "\(facts.sha256)"])
        return manifest
    }
}

extension SeedBuilder {
    /// Writes the database `temporary` compressed with `codec` as `compressedName`, durably (temp
    /// file, fsync, rename, folder fsync): the same database gives the same bytes.
    private func compress(_ temporary: String, with codec: any Codec, into compressedName: String, in directory: Directory) throws {
        guard let source = try directory.openForReading(temporary) else {
            throw PackagingError(.io, step: .build, path: directory.path(temporary), message: "the built database disappeared before it was compressed")
        }
        let sizes = try directory.writeDurably(compressedName, through: StoreLayout.temporaryName(of: compressedName)) { destination, compressing in
            try directory.fileSystem.performCoding(.write, directory.path(compressing)) { () throws(CodecFailure) in
                try codec.compress(from: source, to: destination)
            }
        }
        logger.info("compressed seed", metadata: ["seed": "\(directory.path(compressedName))", "database": "\(sizes.read)", "compressed": "\(sizes.written)", "codec": "\(codec.name)"])
    }
}

/// The tables a step's statements may write, as GRDB's authorizer reports them when each statement
/// compiles (the writes of the triggers it fires included); it asks for no row events.
private final class WrittenTables: TransactionObserver {
    private(set) var names: Set<String> = []

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool {
        names.insert(eventKind.tableName.lowercased())
        return false
    }

    func databaseDidChange(with event: DatabaseEvent) {}
    func databaseDidCommit(_ db: Database) {}
    func databaseDidRollback(_ db: Database) {}
}
