import ArgumentParser
import Foundation
import GRDB
import Reseed
import ReseedSystem
import SystemPackage

/// The user store of `reseed launch` and `reseed update`: flags, else reseed.json.
///
/// Each flag replaces its reseed.json key (`userStore`, `userTables`, `userReferences`,
/// `userMigrations`) as a whole: one `--user-table` drops the file's list. The file's keys
/// describe the user store of the file's seed, so they apply only when the seed comes from the
/// file too (no `--seed`): `reseed launch --seed other.json` in the project's folder does not
/// give another seed the project's user store.
struct UserStoreOptions: ParsableArguments {
    @Option(name: .customLong("user-store"), help: ArgumentHelp(
        "The user store's name: the app's own data, in <data-dir>/<name>.sqlite, that no seed update touches.", valueName: "name"))
    var name: String?

    @Option(name: .customLong("user-table"), help: ArgumentHelp(
        "A table carried out of the single-file store into a new user store (repeatable).", valueName: "table"))
    var tables: [String] = []

    @Option(name: .customLong("user-reference"), help: ArgumentHelp(
        "A user column that points at a seed key, such as 'incident.category_id->injury_category.id' (repeatable).",
        valueName: "reference"))
    var references: [String] = []

    @Option(name: .customLong("user-migrations"), help: ArgumentHelp(
        "A folder of *.sql files, each one migration of the user store, applied in file-name order.", valueName: "dir"))
    var migrations: String?

    func validate() throws {
        _ = try seedReferences(references, option: "--user-reference")
    }

    /// The launcher's user store from the flags and `project` (when `store` takes the seed from
    /// it); nil when neither names one.
    ///
    /// - Throws: `ValidationError` when tables, references or migrations are given without a
    ///   user store; ``UserMigrations/Failure`` when the migrations folder cannot be read.
    func userStore(_ project: ProjectConfiguration, store: StoreOptions) throws -> Launcher.UserStore? {
        let project = store.seed == nil ? project : ProjectConfiguration()
        let tables = tables.isEmpty ? project.userTables ?? [] : tables
        let references = try references.isEmpty ? project.userReferences ?? [] : seedReferences(references, option: "--user-reference")
        let migrations = migrations.map(fileURL) ?? project.userMigrations
        guard let name = name ?? project.userStore else {
            if !tables.isEmpty || !references.isEmpty || migrations != nil {
                throw ValidationError("user tables, references and migrations need a user store: give --user-store (or "
                                      + "\"userStore\" in \(ProjectConfiguration.fileName), used when the seed comes from it too)")
            }
            return nil
        }
        let migrator = try migrations.map { try UserMigrations(folder: $0).migrator() } ?? DatabaseMigrator()
        return Launcher.UserStore(name: name, migrator: migrator, userTables: tables, references: references)
    }
}

/// The references given to `option`, each `table.column->seedTable.seedColumn`.
///
/// - Throws: `ValidationError` naming the option and the text of the first that has another shape.
func seedReferences(_ texts: [String], option: String) throws -> [SeedReference] {
    var references: [SeedReference] = []
    for text in texts {
        do throws(ReseedError) {
            references.append(try SeedReference(parsing: text))
        } catch {
            throw ValidationError("\(option): \(error.message)")
        }
    }
    return references
}

/// A folder of `*.sql` files, each one migration of the user store: the CLI's way to give the
/// user store a schema of its own (an app passes its `DatabaseMigrator` instead).
///
/// Files are read when the folder is read, in file-name order (byte order of the names); each
/// becomes a GRDB migration whose identifier is the file name. Dotfiles and `README*` are left
/// out; any other file that does not end in `.sql` is refused, so a misspelt name is not
/// skipped in silence.
struct UserMigrations {
    /// A migration file, its name and its SQL.
    struct File {
        var url: URL
        var sql: String
        var name: String { url.lastPathComponent }
    }

    /// The folder cannot be used; names the folder or the file.
    struct Failure: Error, CustomStringConvertible {
        var path: String
        var message: String
        /// The system's error, when a file could not be read.
        var errno: Errno? = nil
        var description: String { ErrorSentence(location: path, what: message, why: errno?.phrase, advice: errno?.advice).description }
    }

    /// The most bytes one migration file may have (16 MiB): a schema, not data.
    static let maximumFileSize = 16 << 20

    var files: [File]

    /// Reads every migration of `folder`.
    ///
    /// - Throws: ``Failure`` naming the folder when it cannot be listed, or the file when one is
    ///   not `*.sql`, not a regular file, over ``maximumFileSize``, unreadable or not UTF-8.
    init(folder: URL) throws(Failure) {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        } catch {
            let (message, errno) = failure("cannot read the user migrations folder", error)
            throw Failure(path: folder.path, message: message, errno: errno)
        }
        var files: [File] = []
        for name in names.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        where !name.hasPrefix(".") && !name.uppercased().hasPrefix("README") {
            let url = folder.appendingPathComponent(name)
            guard name.hasSuffix(".sql"), name.count > 4 else {
                throw Failure(path: url.path, message: "not a user migration: expected a .sql file")
            }
            let bytes: [UInt8]?
            do {
                let tooLarge = ReseedError(.invalidArgument, step: .migrateUserStore, path: url.path,
                                           message: "over \(Self.maximumFileSize) bytes")
                bytes = try readSmallFileIfPresent(url, limit: Self.maximumFileSize, step: .migrateUserStore) { _ in tooLarge }
            } catch {
                throw Failure(path: url.path, message: error.message, errno: error.errno)
            }
            guard let bytes else { throw Failure(path: url.path, message: "the file went away while the folder was read") }
            guard let sql = String(validating: bytes, as: UTF8.self) else {
                throw Failure(path: url.path, message: "not UTF-8 text")
            }
            files.append(File(url: url, sql: sql))
        }
        self.files = files
    }

    /// A migrator with one migration per file, in file order, identified by the file name (which
    /// the launch's error names when one fails, with SQLite's error).
    func migrator() -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for file in files {
            migrator.registerMigration(file.name) { db in try db.execute(sql: file.sql) }
        }
        return migrator
    }
}
