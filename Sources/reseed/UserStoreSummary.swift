import Foundation
import GRDB
import Reseed
import ReseedSystem

/// What `reseed status` shows of a user store: its file, size, tables with their row counts,
/// and the migrations GRDB recorded in `grdb_migrations`.
///
/// The look writes nothing and creates nothing. A store with no `-wal` beside it (one closed
/// cleanly: SQLite removes the `-wal` and `-shm` at the last close) is opened with
/// `immutable=1`, which takes no lock and makes no `-shm`; a plain read-only open would create
/// a `-wal` and a `-shm` and leave them there. A store with a `-wal` (open elsewhere, or left
/// by a crash) is opened read-only as SQLite needs to read its log, which may create a
/// missing `-shm`. When a `-wal` appears during the immutable look (a writer started), the
/// look is made again the second way.
struct UserStoreSummary: Encodable {
    var path: String
    var present: Bool
    @NullWhenNil var size: Int64?
    /// Table name → rows (`count(*)`, which reads every page of the table's smallest index);
    /// null when the store is missing or cannot be read. `grdb_migrations` and SQLite's own
    /// tables are left out.
    @NullWhenNil var tables: [String: Int]?
    /// The identifiers in `grdb_migrations` in the order they were applied; `[]` without that
    /// table, null when the store is missing or cannot be read.
    @NullWhenNil var appliedMigrations: [String]?
    /// Why there are no tables: the store is missing, not a database, or SQLite's message.
    @NullWhenNil var problem: String?

    /// Looks at `<dataDirectory>/<name>.sqlite`, read-only.
    ///
    /// - Throws: only when the data directory cannot be opened (a `FileSystemFailure`); what is wrong
    ///   with the store itself is reported in ``problem``.
    static func look(name: String, in dataDirectory: URL) throws -> UserStoreSummary {
        let fileName = Launcher.UserStore(name: name).fileName
        let url = dataDirectory.appendingPathComponent(fileName)
        var summary = UserStoreSummary(path: url.path, present: false)
        let size = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int64) ?? nil
        guard let size else {
            summary.problem = "missing"
            return summary
        }
        summary.present = true
        summary.size = size
        let state = try Decision.StoreState.judging(fileName, in: FileSystem().openDirectory(dataDirectory, create: false))
        guard state == .sqlite else {
            summary.problem = "not a SQLite database"
            return summary
        }
        let wal = StoreLayout.wal(of: url.path)
        do {
            var contents = try read(url, immutable: !FileManager.default.fileExists(atPath: wal))
            if contents.immutable && FileManager.default.fileExists(atPath: wal) {
                contents = try read(url, immutable: false)
            }
            summary.tables = contents.tables
            summary.appliedMigrations = contents.migrations
        } catch let error as DatabaseError {
            summary.problem = "SQLite \(error.resultCode.rawValue): \(error.message ?? "\(error.resultCode)")"
        } catch {
            summary.problem = sentence(for: error)
        }
        return summary
    }

    private init(path: String, present: Bool) {
        self.path = path
        self.present = present
    }

    /// The tables, their rows and the applied migrations, in one read transaction.
    private static func read(_ url: URL, immutable: Bool) throws -> (tables: [String: Int], migrations: [String], immutable: Bool) {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = "reseed.status"
        let queue = try DatabaseQueue(path: immutable ? Launcher.readOnlyURI(url.path) : url.path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in
            let names = try String.fetchAll(db, sql: """
                SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name
                """)
            var tables: [String: Int] = [:]
            for name in names where name != "grdb_migrations" {
                tables[name] = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(name.quotedIdentifier)") ?? 0
            }
            let migrations = names.contains("grdb_migrations")
                ? try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY rowid") : []
            return (tables, migrations, immutable)
        }
    }

    /// Tables with their rows, by name: `incident (1 row), tag (0 rows)`.
    static func describe(_ tables: [String: Int]) -> String {
        tables.sorted { $0.key < $1.key }.map { "\($0.key) (\($0.value) \($0.value == 1 ? "row" : "rows"))" }.joined(separator: ", ")
    }
}
