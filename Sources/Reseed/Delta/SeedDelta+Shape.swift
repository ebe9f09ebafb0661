import Foundation
import GRDB
import ReseedSystem

extension SeedDelta {
    /// The names of the delta file's own tables and columns (formats 1 and 2), shared by the builder and ``apply(deltaPath:to:expectedContentHash:)``.
    package enum Names {
        /// The header table: `key TEXT PRIMARY KEY, value`.
        package static let header = "reseed_delta"
        /// One row per changed table: `idx, name, deleted, updated, inserted`.
        package static let tables = "reseed_delta_tables"
        /// The schema list of a format-2 delta: `idx, action, type, name, tbl_name, sql`.
        package static let schema = "reseed_delta_schema"
        /// The schema name the delta is attached under while it is applied.
        static let attached = "reseed_delta"
        /// The column of an updated row that says which values it carries: one `0`/`1` per value column.
        package static let changed = "changed"

        /// SQLite's own tables a delta carries whole, each as its section: `n` (the row's rowid), then the table's
        /// columns. Present when the new seed has the table, and read when the header's `statistics` is 1.
        package static let statistics: [(table: String, section: String, columns: [String])] = [
            ("sqlite_stat1", "reseed_delta_stat1", ["tbl", "idx", "stat"]),
            ("sqlite_stat4", "reseed_delta_stat4", ["tbl", "idx", "neq", "nlt", "ndlt", "sample"]),
            ("sqlite_sequence", "reseed_delta_sequence", ["name", "seq"]),
        ]

        /// The kinds of row lists a changed table can have; `moved` only in a table keyed by rowid (format 3).
        package enum List: String, CaseIterable, Sendable {
            case deleted, updated, inserted, moved
        }

        /// `reseed_delta_<idx>_<list>`, such as `reseed_delta_3_updated`.
        package static func table(_ index: Int, _ list: List) -> String { "reseed_delta_\(index)_\(list.rawValue)" }

        /// `k1`…`kK`: the key columns of a row list.
        package static func keys(_ count: Int) -> [String] { (0..<count).map { "k\($0 + 1)" } }

        /// `v1`…`vN`: the value columns of an updated or inserted row list.
        static func values(_ count: Int) -> [String] { (0..<count).map { "v\($0 + 1)" } }

        /// The columns a row list must have, in order, for a table of `keys` key and `values` value columns.
        package static func columns(of list: List, keys: Int, values: Int) -> [String] {
            switch list {
            case .deleted: Self.keys(keys)
            case .updated: Self.keys(keys) + [changed] + Self.values(values)
            case .inserted: Self.keys(keys) + Self.values(values)
            // A run: the rows of old rowids source…source+count-1 take rowids target…target+count-1.
            case .moved: ["source", "count", "target"]
            }
        }
    }

    /// How the rows of one seed table are identified and what they hold, read from the schema of
    /// the database that has it (never from a delta).
    ///
    /// The key is the one the content hash orders rows by (see <doc:ContentHash>): the primary key
    /// columns in key order, or, for a rowid table without one, its rowid.
    package struct TableShape: Sendable, Equatable {
        /// The table's name, unquoted.
        package var name: String
        /// The key columns, unquoted, in key order; a rowid alias (`rowid`, `_rowid_`, `oid`) for a keyless rowid table.
        package var key: [String]
        /// The stored, not generated, columns that are not in the key, in column order.
        package var values: [String]
        /// Whether the key is the rowid of a table that declares no primary key.
        var keyIsRowid: Bool
        /// Whether SQLite lets the key hold NULL: a rowid table with a declared primary key.
        package var keyMayBeNull: Bool
        /// Every stored column, key or not, unquoted, in column order.
        var columns: [String]
        /// The first of `rowid`, `_rowid_` and `oid` that no column hides, in a rowid table; nil in a
        /// `WITHOUT ROWID` table or when columns hide all three.
        var rowidAlias: String?

        /// The shape of table `name` of the database `schemaName` of `db`, or why its rows cannot be identified.
        ///
        /// - Throws: the `DatabaseError` of reading the schema.
        /// With `byRowid`, the key is the rowid whatever the table declares, and every stored column is a
        /// value: the shape of the row lists of a table matched by content (format 3); a `WITHOUT ROWID`
        /// table, or one whose columns hide its rowid, has none.
        package static func read(_ name: String, withoutRowid: Bool, in schemaName: String, _ db: Database, byRowid: Bool = false) throws -> Result<TableShape, NotExpressible> {
            let columns = try Row.fetchAll(db, sql: "PRAGMA \(schemaName.quotedIdentifier).table_xinfo(\(name.quotedIdentifier))")
            guard !columns.isEmpty else {
                return .failure(NotExpressible(reason: "table \(name) has no columns SQLite can list"))
            }
            // Generated columns (hidden 2 and 3) follow from the others; SQLite computes them.
            let stored = columns.filter { ($0["hidden"] as Int? ?? 0) == 0 }
            let declaredKey: [String] = stored
                .filter { ($0["pk"] as Int? ?? 0) > 0 }
                .sorted { ($0["pk"] as Int? ?? 0) < ($1["pk"] as Int? ?? 0) }
                .map { $0["name"] ?? "" }
            let names = Set(columns.map { ($0["name"] as String? ?? "").lowercased() })
            let rowidAlias = withoutRowid ? nil : ["rowid", "_rowid_", "oid"].first { !names.contains($0) }
            var key = declaredKey
            if key.isEmpty {
                guard let rowidAlias else {
                    return .failure(NotExpressible(reason: "table \(name) has no primary key and its columns hide its rowid: its rows have no identity"))
                }
                key = [rowidAlias]
            }
            let storedNames: [String] = stored.map { $0["name"] ?? "" }
            if byRowid {
                guard let rowidAlias else {
                    return .failure(NotExpressible(reason: "table \(name) has no rowid a delta can key its rows by"))
                }
                return .success(TableShape(
                    name: name, key: [rowidAlias], values: storedNames, keyIsRowid: declaredKey.isEmpty,
                    keyMayBeNull: false, columns: storedNames, rowidAlias: rowidAlias))
            }
            let keySet = Set(declaredKey)
            return .success(TableShape(
                name: name, key: key, values: storedNames.filter { !keySet.contains($0) }, keyIsRowid: declaredKey.isEmpty,
                keyMayBeNull: !withoutRowid && !declaredKey.isEmpty, columns: storedNames, rowidAlias: rowidAlias))
        }
    }

    /// Why a pair of seeds has no row-level delta: the full seed is published instead.
    package struct NotExpressible: Error, Sendable, Equatable {
        /// One sentence, such as `the schema differs: index song_title is only in the new seed`.
        package var reason: String

        package init(reason: String) { self.reason = reason }
    }

    /// The tables of database `schemaName` whose rows a delta carries, as the content hash counts
    /// them (``ContentTables``): FTS and R-tree tables first, changed through their module, then
    /// ordinary tables (and the shadow tables that are content), each group sorted by the UTF-8 bytes of the names.
    ///
    /// - Throws: the `DatabaseError` of reading the schema.
    package static func contentTables(in schemaName: String, _ db: Database) throws -> [ContentTables.Table] {
        try ContentTables.read(in: schemaName, db).tables
    }
}

extension [String] {
    /// The names quoted as SQL identifiers, each prefixed with `qualifier.` when given, joined by `, `.
    package func quotedList(qualifier: String? = nil) -> String {
        map { (qualifier.map { $0 + "." } ?? "") + $0.quotedIdentifier }.joined(separator: ", ")
    }
}
