import Foundation
import GRDB
import Reseed
import ReseedSystem

/// Writes a delta file (format 1, or 2 across a schema change) from two seeds attached to one connection on it.
struct DeltaWriter {
    var oldPath: String
    var newPath: String
    var deltaPath: String
    /// Tables to ship whole although their rows could go row by row (a builder's second try, after SQLite refused their rows).
    var wholeTables: [String] = []

    typealias Names = SeedDelta.Names

    /// The schema names the two seeds are attached under.
    static let old = "reseed_old"
    static let new = "reseed_new"
    /// The page size of every delta file: fixed, so the same seeds give the same bytes.
    static let pageSize = 4096
    /// What the delta holds: the tables it changes, the schema objects, its format.
    struct Written {
        var tables: [SeedDeltaBuilder.TableCounts]
        var schemaObjects: [SeedDeltaBuilder.SchemaObjectChange]
        var format: SeedDelta.Format
    }

    /// The most arguments one `printf` call takes (SQLite's default limit is 127).
    private static let printfArguments = 100

    /// Fills the empty file at ``deltaPath``; returns the changed tables, or why the seeds have no delta.
    func write(fromContentHash: String, fromRowSet: [UInt8], toContentHash: String) throws -> Result<Written, SeedDelta.NotExpressible> {
        let oldEncoding = try Self.encoding(of: oldPath)
        let newEncoding = try Self.encoding(of: newPath)
        guard oldEncoding == newEncoding else {
            return .failure(.init(reason: "the seeds use different text encodings (\(oldEncoding), \(newEncoding))"))
        }
        var configuration = Configuration()
        configuration.label = "reseed.buildDelta"
        configuration.foreignKeysEnabled = false
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA trusted_schema = OFF") }
        let queue = try DatabaseQueue(path: deltaPath, configuration: configuration)
        defer { try? queue.close() }
        return try queue.writeWithoutTransaction { db -> Result<Written, SeedDelta.NotExpressible> in
            try db.execute(sql: "PRAGMA main.page_size = \(Self.pageSize)")
            try db.execute(sql: "PRAGMA main.encoding = '\(newEncoding)'")
            try db.execute(sql: "ATTACH DATABASE ? AS \(Self.old)", arguments: [Launcher.readOnlyURI(oldPath)])
            try db.execute(sql: "ATTACH DATABASE ? AS \(Self.new)", arguments: [Launcher.readOnlyURI(newPath)])
            var outcome: Result<Written, SeedDelta.NotExpressible> = .success(Written(tables: [], schemaObjects: [], format: .rows))
            try db.inTransaction(.immediate) {
                outcome = try writeTables(db, fromContentHash: fromContentHash, fromRowSet: fromRowSet, toContentHash: toContentHash)
                if case .failure = outcome { return .rollback }
                return .commit
            }
            try db.execute(sql: "DETACH DATABASE \(Self.old)")
            try db.execute(sql: "DETACH DATABASE \(Self.new)")
            // Empty row lists were dropped: VACUUM leaves no free page and a layout that depends on the rows only.
            if case .success = outcome { try db.execute(sql: "VACUUM") }
            return outcome
        }
    }

    /// The schema plan, then every table's row lists, then the header (and the schema list in format 2); inside the caller's transaction.
    private func writeTables(_ db: Database, fromContentHash: String, fromRowSet: [UInt8], toContentHash: String) throws -> Result<Written, SeedDelta.NotExpressible> {
        let plan: DeltaSchemaPlan
        switch try DeltaSchemaPlan.make(db, old: Self.old, new: Self.new, whole: wholeTables + unmatchableTables(db)) {
        case .failure(let failure): return .failure(failure)
        case .success(let made): plan = made
        }
        try db.execute(sql: "CREATE TABLE main.\(Names.header) (key TEXT PRIMARY KEY, value)")
        try db.execute(sql: "CREATE TABLE main.\(Names.tables) (idx INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, deleted INTEGER NOT NULL, updated INTEGER NOT NULL, inserted INTEGER NOT NULL)")
        var counts: [SeedDeltaBuilder.TableCounts] = []
        var listed = 0
        // The tables whose lists are keyed by rowid (format 3), with the rows each moves.
        var keyedByRowid: [(index: Int, moved: Int)] = []
        let tables = try SeedDelta.contentTables(in: Self.new, db)
        guard tables.count <= SeedDelta.maxTables else {
            return .failure(.init(reason: "the seed has more than \(SeedDelta.maxTables) tables"))
        }
        let fullText = try DeltaFullTextPlan(db, new: Self.new, tables: tables)
        for table in tables {
            let shape: SeedDelta.TableShape
            switch try SeedDelta.TableShape.read(table.name, withoutRowid: table.withoutRowid, in: Self.new, db) {
            case .failure(let failure): return .failure(failure)
            case .success(let read): shape = read
            }
            // One column more than the table's (the updated rows' `changed`) must stay within SQLite's limit.
            guard shape.key.count + shape.values.count < 2000 else {
                return .failure(.init(reason: "table \(shape.name) has too many columns for a delta's row lists"))
            }
            let whole = plan.wholeTables[shape.name]
            let index = listed + 1
            var written: [Names.List: Int] = [:]
            var moved: Int?
            if whole == nil, table.kind != .virtual, try matchesByContent(table, shape, db) {
                (written, moved) = try writeMatchedByContent(shape, index: index, db)
            } else {
                // A table shipped whole is all inserted rows, into the table the delta creates empty.
                for list in whole == nil ? [Names.List.deleted, .updated, .inserted] : [.inserted] {
                    written[list] = fullText.carriesRowidsOnly(shape.name)
                        ? try DeltaFullTextPlan.writeRowids(list, of: shape, index: index, whole: whole != nil, old: Self.old, new: Self.new, db)
                        : try writeList(list, of: shape, index: index, whole: whole != nil, db)
                }
            }
            let row = SeedDeltaBuilder.TableCounts(
                name: shape.name, deleted: written[.deleted] ?? 0, updated: written[.updated] ?? 0, inserted: written[.inserted] ?? 0,
                moved: moved ?? 0, carries: whole == nil ? .rows : .wholeTable,
                reason: whole ?? (plan.rebuiltTables.contains(shape.name) ? .definitionChangedRowsKept : .rowsChanged))
            if whole != nil { counts.append(row) }
            guard row.deleted + row.updated + row.inserted + row.moved > 0 else { continue }
            try db.execute(
                sql: "INSERT INTO main.\(Names.tables) (idx, name, deleted, updated, inserted) VALUES (?, ?, ?, ?, ?)",
                arguments: [index, row.name, row.deleted, row.updated, row.inserted])
            if let moved { keyedByRowid.append((index, moved)) }
            listed += 1
            if whole == nil { counts.append(row) }
        }
        counts += plan.droppedTables.map { .init(name: $0, deleted: 0, updated: 0, inserted: 0, carries: .drop, reason: .dropped) }
        let format: SeedDelta.Format = !plan.rebuiltTables.isEmpty ? .rebuild : !keyedByRowid.isEmpty ? .rowids : plan.isEmpty ? .rows : .schema
        if format.rawValue >= SeedDelta.Format.rowids.rawValue {
            // Formats 3 and 4: NULL where a table's lists are keyed by its key, as in formats 1 and 2.
            try db.execute(sql: "ALTER TABLE main.\(Names.tables) ADD COLUMN moved INTEGER")
            for (index, moved) in keyedByRowid {
                try db.execute(sql: "UPDATE main.\(Names.tables) SET moved = ? WHERE idx = ?", arguments: [moved, index])
            }
        }
        if format != .rows {
            try db.execute(sql: "CREATE TABLE main.\(Names.schema) (idx INTEGER PRIMARY KEY, action TEXT NOT NULL, type TEXT NOT NULL, name TEXT NOT NULL, tbl_name TEXT NOT NULL, sql TEXT)")
            for (offset, entry) in plan.entries.enumerated() {
                try db.execute(
                    sql: "INSERT INTO main.\(Names.schema) (idx, action, type, name, tbl_name, sql) VALUES (?, ?, ?, ?, ?, ?)",
                    arguments: [offset + 1, entry.action, entry.type, entry.name, entry.table, entry.sql])
            }
        }
        let userVersion = try Int.fetchOne(db, sql: "PRAGMA \(Self.new).user_version") ?? 0
        let applicationID = try Int.fetchOne(db, sql: "PRAGMA \(Self.new).application_id") ?? 0
        let header: [(String, DatabaseValueConvertible)] = [
            ("format", format.rawValue), ("fromContentHash", fromContentHash), ("toContentHash", toContentHash),
            ("userVersion", userVersion), ("applicationID", applicationID),
            // The old seed's row set, for an incremental check of the result (a reader without it ignores it).
            ("fromRowSet", Data(fromRowSet)),
        ]
        for (key, value) in header {
            try db.execute(sql: "INSERT INTO main.\(Names.header) (key, value) VALUES (?, ?)", arguments: [key, value])
        }
        if try writeStatistics(db) {
            // Optional, like fromRowSet: a reader that does not know it applies the rows and leaves the statistics.
            try db.execute(sql: "INSERT INTO main.\(Names.header) (key, value) VALUES ('statistics', 1)")
        }
        return .success(Written(tables: counts, schemaObjects: plan.objects, format: format))
    }

    /// Copies each of `sqlite_stat1`, `sqlite_stat4` and `sqlite_sequence` the new seed has, whole, into
    /// its section (``SeedDelta/Names/statistics``); returns whether either seed has one of them: then the
    /// header says the delta carries them, and the applier also removes those the new seed lacks.
    private func writeStatistics(_ db: Database) throws -> Bool {
        var carries = false
        for (table, section, columns) in Names.statistics {
            guard try Self.has(table, in: Self.new, db) else {
                carries = try carries || Self.has(table, in: Self.old, db)
                continue
            }
            carries = true
            let list = columns.joined(separator: ", ")
            // No declared type but the rowid's: every value keeps its storage class (sqlite_stat4's samples are BLOBs).
            try db.execute(sql: "CREATE TABLE main.\(section) (n INTEGER PRIMARY KEY, \(list))")
            try db.execute(sql: "INSERT INTO main.\(section) (n, \(list)) SELECT rowid, \(list) FROM \(Self.new).\(table) ORDER BY rowid")
        }
        return carries
    }

    private static func has(_ table: String, in schema: String, _ db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM \(schema).sqlite_schema WHERE type = 'table' AND name = ?", arguments: [table]) ?? false
    }

    /// Creates and fills one row list; drops it again when it is empty. Returns its row count.
    func writeList(_ list: Names.List, of shape: SeedDelta.TableShape, index: Int, whole: Bool, _ db: Database) throws -> Int {
        var rows: String?
        if list != .updated || !shape.values.isEmpty {
            // Rows with equal keys (NULLs) in rowid order, which the content hash reads them in.
            var order = shape.key
            if whole, shape.keyMayBeNull, case .success(let byRowid) = try SeedDelta.TableShape.read(shape.name, withoutRowid: false, in: Self.new, db, byRowid: true) {
                order += byRowid.key
            }
            rows = whole
                ? "SELECT \((shape.key + shape.values).quotedList()) FROM \(Self.new).\(shape.name.quotedIdentifier) ORDER BY \(order.quotedList())"
                : select(list, of: shape)
        }
        return try writeList(list, index: index, columns: Names.columns(of: list, keys: shape.key.count, values: shape.values.count), rows: rows, db)
    }

    /// Creates the list `list` of the table at `index` with `columns` and fills it with the SELECT `rows`, if any; drops it when empty.
    func writeList(_ list: Names.List, index: Int, columns: [String], rows: String?, _ db: Database) throws -> Int {
        let name = "main." + Names.table(index, list).quotedIdentifier
        // No declared types: no affinity, so every value keeps its storage class.
        try db.execute(sql: "CREATE TABLE \(name) (\(columns.joined(separator: ", ")))")
        if let rows { try db.execute(sql: "INSERT INTO \(name) (\(columns.joined(separator: ", "))) \(rows)") }
        let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(name)") ?? 0
        if count == 0 { try db.execute(sql: "DROP TABLE \(name)") }
        return count
    }

    /// The SELECT that lists the rows of `list`, in key order.
    private func select(_ list: Names.List, of shape: SeedDelta.TableShape) -> String {
        let table = shape.name.quotedIdentifier
        let oldTable = "\(Self.old).\(table)"
        let newTable = "\(Self.new).\(table)"
        // Exact identity: equal under the key's own collation (so its index serves), then byte for byte and type for type.
        let match = shape.key.map { column -> String in
            let (n, o) = ("n." + column.quotedIdentifier, "o." + column.quotedIdentifier)
            return "\(n) = \(o) AND \(n) = \(o) COLLATE BINARY AND typeof(\(n)) = typeof(\(o))"
        }.joined(separator: " AND ")
        switch list {
        case .deleted:
            return "SELECT \(shape.key.quotedList(qualifier: "o")) FROM \(oldTable) AS o WHERE NOT EXISTS (SELECT 1 FROM \(newTable) AS n WHERE \(match)) ORDER BY \(shape.key.quotedList(qualifier: "o"))"
        case .inserted:
            return "SELECT \((shape.key + shape.values).quotedList(qualifier: "n")) FROM \(newTable) AS n WHERE NOT EXISTS (SELECT 1 FROM \(oldTable) AS o WHERE \(match)) ORDER BY \(shape.key.quotedList(qualifier: "n"))"
        case .updated:
            return Self.updatedRows(
                of: shape, keys: shape.key.map { "n." + $0.quotedIdentifier },
                from: "\(newTable) AS n JOIN \(oldTable) AS o ON \(match)", order: shape.key.quotedList(qualifier: "n"))
        case .moved:
            // Written from the runs, never selected.
            return "SELECT NULL, NULL, NULL WHERE 0"
        }
    }

    /// The SELECT of the updated rows among the pairs `from` joins (old rows as `o`, new as `n`), in `order`:
    /// the `keys` expressions, the `changed` mask, and only the values it marks.
    static func updatedRows(of shape: SeedDelta.TableShape, keys keyValues: [String], from join: String, order: String) -> String {
        let flags = shape.values.map { column -> String in
            let (n, o) = ("n." + column.quotedIdentifier, "o." + column.quotedIdentifier)
            return "CASE WHEN \(o) IS \(n) COLLATE BINARY AND typeof(\(o)) = typeof(\(n)) THEN '0' ELSE '1' END"
        }
        let keys = Names.keys(shape.key.count)
        let newValues = shape.values.indices.map { "n\($0 + 1)" }
        let inner = zip(keyValues, keys).map { "\($0) AS \($1)" }
            + ["\(Self.concatenation(flags)) AS \(Names.changed)"]
            + zip(shape.values, newValues).map { "n.\($0.quotedIdentifier) AS \($1)" }
        let outer = keys + [Names.changed] + newValues.enumerated().map { offset, value in
            "CASE WHEN substr(\(Names.changed), \(offset + 1), 1) = '1' THEN \(value) END"
        }
        return """
            SELECT \(outer.joined(separator: ", ")) FROM (SELECT \(inner.joined(separator: ", "))
            FROM \(join) ORDER BY \(order))
            WHERE instr(\(Names.changed), '1') > 0
            """
    }

    /// `printf('%s%s…', …)` of the text expressions, nested so no call takes more than ``printfArguments``
    /// and no expression is deeper than a few levels (a chain of `||` over 1,000 columns would be too deep for SQLite).
    private static func concatenation(_ parts: [String]) -> String {
        guard parts.count > 1 else { return parts.first ?? "''" }
        if parts.count <= printfArguments {
            return "printf('\(String(repeating: "%s", count: parts.count))', \(parts.joined(separator: ", ")))"
        }
        let groups = stride(from: 0, to: parts.count, by: printfArguments).map {
            concatenation(Array(parts[$0..<min($0 + printfArguments, parts.count)]))
        }
        return concatenation(groups)
    }

    /// The rowid tables whose key holds NULL and whose columns hide the rowid: no key and no rowid to match
    /// their rows by, so they are shipped whole.
    private func unmatchableTables(_ db: Database) throws -> [String] {
        var tables: [String] = []
        for table in try SeedDelta.contentTables(in: Self.new, db) where table.kind == .stored && !table.withoutRowid {
            guard case .success(let shape) = try SeedDelta.TableShape.read(table.name, withoutRowid: false, in: Self.new, db), shape.keyMayBeNull,
                  case .failure = try SeedDelta.TableShape.read(table.name, withoutRowid: false, in: Self.new, db, byRowid: true) else { continue }
            // The old seed's rows only when it defines the table alike (otherwise the table is shipped whole anyway).
            let definition = "SELECT sql FROM %@.sqlite_schema WHERE type = 'table' AND name = ?"
            let alike = try String.fetchOne(db, sql: definition.replacingOccurrences(of: "%@", with: Self.old), arguments: [table.name])
                == String.fetchOne(db, sql: definition.replacingOccurrences(of: "%@", with: Self.new), arguments: [table.name])
            let schemas = alike ? [Self.old, Self.new] : [Self.new]
            if try hasNullKey(shape, in: schemas, db) { tables.append(table.name) }
        }
        return tables
    }

    /// Whether one of `schemas` has a row of the table whose key holds a NULL.
    func hasNullKey(_ shape: SeedDelta.TableShape, in schemas: [String], _ db: Database) throws -> Bool {
        let condition = shape.key.map { "\($0.quotedIdentifier) IS NULL" }.joined(separator: " OR ")
        for schema in schemas where try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM \(schema).\(shape.name.quotedIdentifier) WHERE \(condition))") == true {
            return true
        }
        return false
    }

    /// `PRAGMA encoding` of the database at `path`, opened read-only.
    private static func encoding(of path: String) throws -> String {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = "reseed.buildDelta"
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { try String.fetchOne($0, sql: "PRAGMA main.encoding") } ?? "UTF-8"
    }
}
