import Foundation
import GRDB
import Reseed
import ReseedSystem

/// What a delta does to the schema between two seeds attached to one connection: the tables it
/// ships whole or drops, and the indexes, views and triggers it drops and creates (format 2).
/// Empty when the schemas are the same: the delta is then format 1.
struct DeltaSchemaPlan {
    typealias Reason = SeedDeltaBuilder.TableCounts.Reason
    typealias ObjectChange = SeedDeltaBuilder.SchemaObjectChange

    /// One row of the delta's schema list.
    struct Entry {
        var action: String
        var type: String
        var name: String
        var table: String
        var sql: String?
    }

    /// The tables of the new seed shipped whole, and why.
    var wholeTables: [String: Reason] = [:]
    /// The tables whose definition changed and whose columns did not: rebuilt with their rows kept,
    /// then changed row by row (format 4).
    var rebuiltTables: [String] = []
    /// The tables of the old seed the new one lacks.
    var droppedTables: [String] = []
    /// The indexes, views and triggers that change, sorted by the UTF-8 bytes of their names.
    var objects: [ObjectChange] = []
    /// The schema list, drops then creations.
    var entries: [Entry] = []

    var isEmpty: Bool { entries.isEmpty }

    /// The plan from the seed attached as `old` to the one attached as `new`, or why no delta can express it;
    /// the tables of `whole` that both seeds define alike are shipped whole too (``Reason/rowsNotMatchable``),
    /// and those whose definition changed are never rebuilt with their rows kept.
    static func make(_ db: Database, old: String, new: String, whole: [String] = []) throws -> Result<DeltaSchemaPlan, SeedDelta.NotExpressible> {
        let oldObjects = try SeedContentHash.schema(db, in: old)
        let newObjects = try SeedContentHash.schema(db, in: new)
        let oldByName = Dictionary(oldObjects.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let newByName = Dictionary(newObjects.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        // `SchemaObject` compares whole entries; its table and SQL are read here.
        let oldRows = try rows(in: old, db)
        let newRows = try rows(in: new, db)
        let oldContent = try ContentTables.read(in: old, db)
        let newContent = try ContentTables.read(in: new, db)
        var plan = DeltaSchemaPlan()

        // Tables first: an index or trigger of a table shipped whole is created again with it.
        for object in newObjects where object.type == "table" {
            if let before = oldByName[object.name] {
                if before.type != object.type { return .failure(.init(reason: "\(object.name) is a \(before.type) in the old seed and a table in the new one")) }
                if before != object {
                    if !whole.contains(object.name), try keepsRows(object.name, old: old, new: new, db) {
                        plan.rebuiltTables.append(object.name)
                    } else {
                        plan.wholeTables[object.name] = .definitionChanged
                    }
                }
            } else {
                plan.wholeTables[object.name] = .added
            }
        }
        for object in oldObjects where object.type == "table" && newByName[object.name]?.type != "table" {
            plan.droppedTables.append(object.name)
        }
        for name in whole where plan.wholeTables[name] == nil && oldByName[name]?.type == "table" && newByName[name]?.type == "table" {
            plan.wholeTables[name] = .rowsNotMatchable
        }
        // An FTS table that reads its text from a table shipped whole or dropped is shipped whole too: changed row by
        // row, its module would remove a row's old terms after the content table already holds the new text.
        let rebuiltContent = Set(
            plan.wholeTables.filter { $0.value != .added }.keys.map { $0.lowercased() } + (plan.droppedTables + plan.rebuiltTables).map { $0.lowercased() })
        for table in newContent.tables where table.kind == .virtual && plan.wholeTables[table.name] == nil {
            if let sql = newRows[table.name]?.sql, mayReadContent(sql, from: rebuiltContent) {
                plan.wholeTables[table.name] = .contentTableReplaced
            }
        }
        for name in plan.wholeTables.keys.sorted() + plan.droppedTables {
            let inNew = plan.wholeTables[name] != nil
            if let refusal = try unsupported(name, content: inNew ? newContent : oldContent, in: inNew ? new : old, db) { return .failure(refusal) }
            if plan.wholeTables[name] != .added, oldByName[name] != nil, let refusal = try unsupported(name, content: oldContent, in: old, db) {
                return .failure(refusal)
            }
        }
        let replaced = Set(plan.wholeTables.filter { $0.value != .added }.keys)
        // Lowercased: SQLite keeps a trigger's or index's table name as its statement wrote it (`ON ITEM` for `item`).
        let rebuilt = Set(replaced.union(plan.droppedTables).union(plan.rebuiltTables).map { $0.lowercased() })

        for object in oldObjects where object.type != "table" {
            let after = newByName[object.name]
            guard after == nil || after != object else { continue }
            // Dropped explicitly, before any table: even one that goes with its table is never left to chance.
            plan.entries.append(Entry(action: "drop", type: object.type, name: object.name, table: oldRows[object.name]?.table ?? object.name, sql: nil))
            if after == nil { plan.objects.append(ObjectChange(type: object.type, name: object.name, change: .dropped)) }
        }
        for name in plan.droppedTables + replaced.sorted() {
            plan.entries.append(Entry(action: "drop", type: "table", name: name, table: name, sql: nil))
        }
        for name in plan.wholeTables.keys.sorted() {
            guard let row = newRows[name] else { continue }
            plan.entries.append(Entry(action: "create", type: "table", name: name, table: name, sql: row.sql))
        }
        for name in plan.rebuiltTables.sorted() {
            guard let row = newRows[name] else { continue }
            plan.entries.append(Entry(action: "rebuild", type: "table", name: name, table: name, sql: row.sql))
        }
        for object in newObjects where object.type != "table" {
            let before = oldByName[object.name]
            let change: ObjectChange.Change?
            if before == nil {
                change = .added
            } else if before != object {
                change = .replaced
            } else {
                change = rebuilt.contains((newRows[object.name]?.table ?? "").lowercased()) ? .recreated : nil
            }
            guard let change else { continue }
            plan.entries.append(Entry(action: "create", type: object.type, name: object.name, table: newRows[object.name]?.table ?? object.name, sql: newRows[object.name]?.sql))
            plan.objects.append(ObjectChange(type: object.type, name: object.name, change: change))
        }
        plan.objects.sort { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
        guard plan.entries.count <= 10_000 else { return .failure(.init(reason: "the schema changes in more than 10000 objects")) }
        return .success(plan)
    }

    /// Whether table `name`, whose `CREATE` statement differs between the seeds, keeps its rows when
    /// rebuilt under the new one: an ordinary table in both (not virtual, not a shadow table), a rowid
    /// table in both (with a rowid its columns leave visible) or `WITHOUT ROWID` in both, `STRICT` in
    /// both or in neither (an `ANY` column's affinity depends on it), with the same
    /// columns in the same order (names, declared types, primary key, generated or not: the values
    /// are stored alike). A `NOT NULL`, a `DEFAULT`, a `CHECK`, a `UNIQUE` or a foreign key may differ;
    /// what SQLite then refuses of the old rows ships the table whole on the next try.
    private static func keepsRows(_ name: String, old: String, new: String, _ db: Database) throws -> Bool {
        func listed(_ schema: String) throws -> (type: String, withoutRowid: Bool, strict: Bool)? {
            try Row.fetchOne(db, sql: "SELECT type, wr, strict FROM pragma_table_list WHERE schema = ? AND name = ?", arguments: [schema, name])
                .map { ($0["type"] ?? "", $0["wr"] ?? false, $0["strict"] ?? false) }
        }
        func columns(_ schema: String) throws -> [[DatabaseValue]] {
            try Row.fetchAll(db, sql: "SELECT cid, name, type, pk, hidden FROM pragma_table_xinfo(?, ?) ORDER BY cid", arguments: [name, schema])
                .map { Array($0.databaseValues) }
        }
        guard let before = try listed(old), let after = try listed(new), before.type == "table", after.type == "table",
              before.withoutRowid == after.withoutRowid, before.strict == after.strict else { return false }
        let oldColumns = try columns(old)
        guard !oldColumns.isEmpty, oldColumns == (try columns(new)) else { return false }
        if !before.withoutRowid {
            let names = Set(oldColumns.compactMap { String.fromDatabaseValue($0[1]) }.map { $0.lowercased() })
            guard ["rowid", "_rowid_", "oid"].contains(where: { !names.contains($0) }) else { return false }
        }
        return true
    }

    /// Whether the `CREATE VIRTUAL TABLE` statement `sql` has a `content` option and names one of `tables`
    /// (lowercased); it errs on the side of yes, which only ships a table whole.
    private static func mayReadContent(_ sql: String, from tables: Set<String>) -> Bool {
        guard !tables.isEmpty, sql.lowercased().contains("content") else { return false }
        let words = sql.lowercased().split { !($0.isLetter || $0.isNumber || $0 == "_" || $0 == "$" || Int($0.unicodeScalars.first?.value ?? 0) >= 0x80) }
        return words.contains { tables.contains(String($0)) }
    }

    /// `tbl_name` and `sql` of every entry of `sqlite_schema` of `schema`, by name.
    private static func rows(in schema: String, _ db: Database) throws -> [String: (table: String, sql: String?)] {
        var rows: [String: (table: String, sql: String?)] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT name, tbl_name, sql FROM \(schema.quotedIdentifier).sqlite_schema") {
            if let name: String = row["name"] { rows[name] = (row["tbl_name"] ?? name, row["sql"]) }
        }
        return rows
    }

    /// Why the table `name` of `schema` cannot be dropped or created by a delta: a virtual table not
    /// read through its module (contentless FTS, another module), or a shadow table; nil when it can.
    private static func unsupported(_ name: String, content: ContentTables, in schema: String, _ db: Database) throws -> SeedDelta.NotExpressible? {
        let type = try String.fetchOne(db, sql: "SELECT type FROM pragma_table_list WHERE schema = ? AND name = ?", arguments: [schema, name])
        switch type {
        case "virtual" where !content.tables.contains(where: { $0.name == name && $0.kind == .virtual }):
            return .init(reason: "virtual table \(name) changes, and a delta creates or drops only FTS3/4/5 and R-tree tables that keep their text")
        case "shadow":
            return .init(reason: "table \(name) is a virtual table's shadow table, which a delta never writes")
        default:
            return nil
        }
    }

}
