import Foundation
import GRDB

extension Launcher {
    /// The app's own data, in a store of its own beside the seed, that no seed update touches.
    ///
    /// With a user store configured, ``Launcher/launch()`` hands back a pool whose `main`
    /// database is the user store (`<data-dir>/<name>.sqlite`, WAL, writable, migrated by
    /// ``migrator``) with the seed attached read-only as ``Launcher/seedSchema``. Unqualified
    /// names find user tables first, then seed tables, so a query joining both reads as before.
    /// Installs, ``LiveStore/replace(with:)``, ``LiveStore/switchTo(_:)`` and channel updates
    /// replace the seed file only.
    ///
    /// ```swift
    /// var migrator = DatabaseMigrator()
    /// migrator.registerMigration("incidents") { db in
    ///     try db.create(table: "incident") { t in
    ///         t.autoIncrementedPrimaryKey("id")
    ///         t.column("category_id", .integer)
    ///     }
    /// }
    /// configuration.userStore = Launcher.UserStore(
    ///     name: "triage-user", migrator: migrator, userTables: ["incident"],
    ///     references: [SeedReference("incident.category_id", to: "injury_category.id")])
    /// ```
    public struct UserStore: Sendable {
        /// The user store's name: its file is `<data-dir>/<name>.sqlite`. It must differ from the seed's.
        public var name: String
        /// The app's schema for its own tables, run on the user store at every launch (GRDB skips
        /// the migrations already applied).
        public var migrator: DatabaseMigrator
        /// Tables that earlier releases kept in the single-file store: on the first launch with
        /// this user store, when the user store does not exist yet, they are copied out of the
        /// old store (schema and rows) before the seed replaces it.
        public var userTables: [String]
        /// User columns that point at seed keys; after an install the launch counts the user
        /// rows whose key the new seed no longer has (see ``LaunchOutcome/orphans``).
        public var references: [SeedReference]

        public init(name: String, migrator: DatabaseMigrator = DatabaseMigrator(), userTables: [String] = [], references: [SeedReference] = []) {
            self.name = name
            self.migrator = migrator
            self.userTables = userTables
            self.references = references
        }

        /// The user store's file name, `<name>.sqlite`.
        public var fileName: String { StoreLayout.fileName(ofStore: name) }

        /// The lock its imports and the app's migrations take: `.<name>.sqlite.reseed-lock`.
        var lockName: String { StoreLayout(storeFileName: fileName).installLock }

        /// Who keeps that lock, as the timeout's sentence says it.
        var lockHolder: String { "another launcher holds the user store '\(name)'" }
    }

    /// The schema name the seed is attached under on every connection of a user store's pool.
    public static let seedSchema = "seed"
}

/// A user column that points at a key of a seed table, such as `incident.category_id → injury_category.id`.
///
/// Nothing is enforced or deleted: after an install the launch counts the user rows whose
/// value is not among the new seed's keys (``LaunchOutcome/orphans``), `reseed diff` lists
/// the keys a release removes, and `ReseedTesting` checks that a release keeps them.
public struct SeedReference: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The user table and its column.
    public var table: String
    public var column: String
    /// The seed table and its key column.
    public var seedTable: String
    public var seedColumn: String

    public init(table: String, column: String, seedTable: String, seedColumn: String) {
        self.table = table
        self.column = column
        self.seedTable = seedTable
        self.seedColumn = seedColumn
    }

    /// A reference from `"table.column"` to `"seedTable.seedColumn"`.
    ///
    /// - Throws: ``ReseedError/Code/invalidArgument`` when either side is not `table.column`.
    public init(_ user: String, to seed: String) throws(ReseedError) {
        let from = try Self.split(user, whole: "\(user) -> \(seed)")
        let to = try Self.split(seed, whole: "\(user) -> \(seed)")
        self.init(table: from.table, column: from.column, seedTable: to.table, seedColumn: to.column)
    }

    /// A reference written as `table.column->seedTable.seedColumn` (as in `reseed.json` and on the command line).
    ///
    /// - Throws: ``ReseedError/Code/invalidArgument`` naming the text when it has another shape.
    public init(parsing text: String) throws(ReseedError) {
        let sides = text.components(separatedBy: "->")
        guard sides.count == 2 else {
            throw ReseedError(.invalidArgument, step: .open, path: nil,
                              message: "reference '\(text)' is not 'table.column->seedTable.seedColumn'")
        }
        try self.init(sides[0].trimmingCharacters(in: .whitespaces), to: sides[1].trimmingCharacters(in: .whitespaces))
    }

    /// `table.column->seedTable.seedColumn`, the form ``init(parsing:)`` reads.
    public var description: String { "\(table).\(column)->\(seedTable).\(seedColumn)" }

    private static func split(_ side: String, whole: String) throws(ReseedError) -> (table: String, column: String) {
        let parts = side.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw ReseedError(.invalidArgument, step: .open, path: nil,
                              message: "reference '\(whole)': '\(side)' is not 'table.column'")
        }
        return (String(parts[0]), String(parts[1]))
    }
}
