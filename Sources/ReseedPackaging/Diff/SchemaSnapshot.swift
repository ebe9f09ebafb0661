import Foundation
import GRDB
import Reseed
import ReseedSystem

/// The schema of one database as the diff needs it: user objects, table columns, encoding and seed metadata.
struct SchemaSnapshot {
    /// One entry of `sqlite_master`.
    struct Object {
        var type: String
        var name: String
        var table: String
        var sql: String?
    }

    /// One row of `PRAGMA table_xinfo`.
    struct Column: Equatable {
        var name: String
        var type: String
        var notNull: Bool
        var defaultSQL: String?
        /// 1-based position in the primary key, 0 when not part of it.
        var primaryKeyPosition: Int
        /// 0 for an ordinary column, 2 or 3 for a generated one (virtual, stored).
        var hidden: Int
    }

    struct Table {
        var name: String
        var columns: [Column]
        var isVirtual: Bool
        /// An FTS or R-tree table: its rows are compared through its module, by rowid.
        var readsThroughModule: Bool
        var hasRowid: Bool

        /// The primary key columns, in key order; empty when the table declares none.
        var primaryKey: [String] {
            columns.filter { $0.primaryKeyPosition > 0 }
                .sorted { $0.primaryKeyPosition < $1.primaryKeyPosition }
                .map(\.name)
        }

        /// Whether the primary key is an INTEGER PRIMARY KEY, hence unique and never NULL.
        var primaryKeyIsRowidAlias: Bool {
            let key = columns.filter { $0.primaryKeyPosition > 0 }
            return hasRowid && key.count == 1 && key[0].type.uppercased() == "INTEGER"
        }

        /// A name that reaches the rowid, not shadowed by a column; nil for WITHOUT ROWID tables.
        var rowidAlias: String? {
            guard hasRowid else { return nil }
            let names = Set(columns.map { $0.name.lowercased() })
            return ["rowid", "_rowid_", "oid"].first { !names.contains($0) }
        }
    }

    /// Tables, indexes, views and triggers, without Reseed's and SQLite's own.
    var objects: [Object]
    /// The tables among ``objects``, keyed by their names as SQLite compares them (`String.sqlFolded`).
    var tables: [String: Table]
    /// `PRAGMA encoding`: it decides the byte order of text keys.
    var encoding: String
    var seedName: String?
    var seedVersion: String?

    /// Whether the diff leaves an object out: SQLite's internals and Reseed's metadata.
    static func isExcluded(_ name: String) -> Bool {
        let lowercased = name.lowercased()
        return lowercased.hasPrefix("sqlite_") || lowercased.hasPrefix("reseed_")
    }

    static func read(_ db: Database) throws -> SchemaSnapshot {
        // The shadow tables that are an FTS or R-tree table's index layout are not content: the
        // diff compares that table's rows through its module instead (see `ContentTables`).
        let content = try ContentTables.read(db)
        let readable = Set(content.tables.filter { $0.kind == .virtual }.map(\.name))
        let objects = try Row.fetchAll(db, sql: """
            SELECT type, name, tbl_name, sql FROM main.sqlite_master
            WHERE type IN ('table', 'index', 'view', 'trigger')
            """)
            .map { Object(type: $0["type"] ?? "", name: $0["name"] ?? "", table: $0["tbl_name"] ?? "", sql: $0["sql"]) }
            .filter { !isExcluded($0.name) && !isExcluded($0.table) && !content.layout.contains($0.table.lowercased()) }

        /// The tables, keyed by their names as SQLite compares them (`String.sqlFolded`).
    var tables: [String: Table] = [:]
        for row in try Row.fetchAll(db, sql: "PRAGMA main.table_list") {
            let name: String = row["name"] ?? ""
            let type: String = row["type"] ?? ""
            let withoutRowid: Bool = row["wr"] ?? false
            guard type == "table" || type == "virtual" || type == "shadow", !isExcluded(name),
                  !content.layout.contains(name.lowercased()) else { continue }
            // The columns of another module's table come from that module, which may not be loaded: its SQL says enough.
            let isVirtual = type == "virtual"
            let columns = isVirtual && !readable.contains(name) ? [] : try readColumns(db, table: name)
            // Keyed as SQLite compares names: `Cat` in one release is `cat` in the next.
            tables[name.sqlFolded] = Table(name: name, columns: columns, isVirtual: isVirtual, readsThroughModule: readable.contains(name), hasRowid: !withoutRowid)
        }

        let encoding = try String.fetchOne(db, sql: "PRAGMA main.encoding") ?? "UTF-8"
        let metadata = try readSeedMetadata(db)
        return SchemaSnapshot(
            objects: objects, tables: tables, encoding: encoding,
            seedName: metadata["name"], seedVersion: metadata["version"])
    }

    private static func readColumns(_ db: Database, table: String) throws -> [Column] {
        try Row.fetchAll(db, sql: "PRAGMA main.table_xinfo(\(table.quotedIdentifier))").map {
            Column(
                name: $0["name"] ?? "", type: $0["type"] ?? "", notNull: $0["notnull"] ?? false,
                defaultSQL: $0["dflt_value"], primaryKeyPosition: $0["pk"] ?? 0, hidden: $0["hidden"] ?? 0)
        }
    }

    /// The `name` and `version` rows of `reseed_metadata`; empty when the table or its columns are missing.
    private static func readSeedMetadata(_ db: Database) throws -> [String: String] {
        let table = SeedMetadata.tableName
        guard try db.tableExists(table) else { return [:] }
        let columns = Set(try readColumns(db, table: table).map(\.name))
        guard columns.contains("key"), columns.contains("value") else { return [:] }
        var values: [String: String] = [:]
        let rows = try Row.fetchAll(db, sql: """
            SELECT key, CAST(value AS TEXT) AS value FROM \(table.quotedIdentifier)
            WHERE key IN ('name', 'version') AND value IS NOT NULL
            """)
        for row in rows {
            if let key: String = row["key"], let value: String = row["value"] { values[key] = value }
        }
        return values
    }
}

// MARK: - Comparing two schemas

extension SchemaSnapshot {
    /// The objects and columns that differ from `old` to `new`, grouped by table, then by type and name.
    static func changes(from old: SchemaSnapshot, to new: SchemaSnapshot) -> [SeedDiff.SchemaChange] {
        typealias Change = SeedDiff.SchemaChange
        func identity(_ object: Object) -> String { object.type + "\u{0}" + object.name.sqlFolded }
        let oldObjects = Dictionary(old.objects.map { (identity($0), $0) }, uniquingKeysWith: { first, _ in first })
        let newObjects = Dictionary(new.objects.map { (identity($0), $0) }, uniquingKeysWith: { first, _ in first })

        var changes: [Change] = []
        for (id, object) in oldObjects where newObjects[id] == nil {
            guard let type = Change.ObjectType(rawValue: object.type) else { continue }
            changes.append(Change(
                kind: .removed, type: type, table: owningTable(object), name: object.name, oldSQL: object.sql))
        }
        for (id, object) in newObjects {
            guard let type = Change.ObjectType(rawValue: object.type) else { continue }
            guard let before = oldObjects[id] else {
                changes.append(Change(
                    kind: .added, type: type, table: owningTable(object), name: object.name, newSQL: object.sql))
                continue
            }
            if normalizedSQL(before.sql) != normalizedSQL(object.sql) {
                changes.append(Change(
                    kind: .changed, type: type, table: owningTable(object), name: object.name,
                    oldSQL: before.sql, newSQL: object.sql))
            }
            if type == .table, let oldTable = old.tables[object.name.sqlFolded], let newTable = new.tables[object.name.sqlFolded] {
                changes += columnChanges(from: oldTable, to: newTable)
            }
        }
        return changes.sorted(by: displayOrder)
    }

    private static func owningTable(_ object: Object) -> String? {
        object.type == "index" || object.type == "trigger" ? object.table : nil
    }

    private static func columnChanges(from old: Table, to new: Table) -> [SeedDiff.SchemaChange] {
        guard !old.isVirtual, !new.isVirtual else { return [] }
        let oldColumns = Dictionary(old.columns.map { ($0.name.sqlFolded, $0) }, uniquingKeysWith: { first, _ in first })
        let newColumns = Dictionary(new.columns.map { ($0.name.sqlFolded, $0) }, uniquingKeysWith: { first, _ in first })
        var changes: [SeedDiff.SchemaChange] = []
        for column in old.columns where newColumns[column.name.sqlFolded] == nil {
            changes.append(.init(
                kind: .removed, type: .column, table: old.name, name: column.name, detail: definition(of: column)))
        }
        for column in new.columns {
            guard let before = oldColumns[column.name.sqlFolded] else {
                changes.append(.init(
                    kind: .added, type: .column, table: new.name, name: column.name, detail: definition(of: column)))
                continue
            }
            if before != column {
                changes.append(.init(
                    kind: .changed, type: .column, table: new.name, name: column.name,
                    detail: differences(from: before, to: column)))
            }
        }
        return changes
    }

    /// A column as it would read in a `CREATE TABLE`: `INTEGER NOT NULL DEFAULT 0`.
    private static func definition(of column: Column) -> String {
        var parts = [column.type.isEmpty ? "(no type)" : column.type]
        if column.notNull { parts.append("NOT NULL") }
        if let value = column.defaultSQL { parts.append("DEFAULT \(value)") }
        if column.primaryKeyPosition > 0 { parts.append("PRIMARY KEY (position \(column.primaryKeyPosition))") }
        if column.hidden == 2 || column.hidden == 3 { parts.append("GENERATED") }
        return parts.joined(separator: " ")
    }

    private static func differences(from old: Column, to new: Column) -> String {
        var parts: [String] = []
        if old.name != new.name { parts.append("name \(old.name) → \(new.name)") }
        if old.type != new.type { parts.append("type \(old.type.isEmpty ? "(none)" : old.type) → \(new.type.isEmpty ? "(none)" : new.type)") }
        if old.notNull != new.notNull { parts.append(new.notNull ? "NOT NULL added" : "NOT NULL removed") }
        if old.defaultSQL != new.defaultSQL { parts.append("default \(old.defaultSQL ?? "(none)") → \(new.defaultSQL ?? "(none)")") }
        if old.primaryKeyPosition != new.primaryKeyPosition {
            parts.append("primary key position \(old.primaryKeyPosition) → \(new.primaryKeyPosition)")
        }
        if old.hidden != new.hidden { parts.append("hidden \(old.hidden) → \(new.hidden)") }
        return parts.joined(separator: ", ")
    }

    /// Tables first with their columns, indexes and triggers after them; views on their own.
    private static func displayOrder(_ a: SeedDiff.SchemaChange, _ b: SeedDiff.SchemaChange) -> Bool {
        let rank: [SeedDiff.SchemaChange.ObjectType: Int] = [.table: 0, .column: 1, .index: 2, .view: 3, .trigger: 4]
        let aGroup = a.table ?? a.name
        let bGroup = b.table ?? b.name
        if aGroup != bGroup { return aGroup < bGroup }
        if a.type != b.type { return rank[a.type, default: 5] < rank[b.type, default: 5] }
        return a.name < b.name
    }

    /// SQL with each run of whitespace outside quotes turned into one space, and no leading or trailing space.
    static func normalizedSQL(_ sql: String?) -> String? {
        guard let sql else { return nil }
        var result = ""
        var closingQuote: Character?
        var pendingSpace = false
        for character in sql {
            if let quote = closingQuote {
                result.append(character)
                if character == quote { closingQuote = nil }
                continue
            }
            if character.isWhitespace {
                pendingSpace = !result.isEmpty
                continue
            }
            if pendingSpace { result.append(" ") }
            pendingSpace = false
            result.append(character)
            switch character {
            case "'", "\"", "`": closingQuote = character
            case "[": closingQuote = "]"
            default: break
            }
        }
        return result
    }
}
