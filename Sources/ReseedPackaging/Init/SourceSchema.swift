import Foundation
import GRDB
import Reseed
import ReseedSystem

/// The schema of a database `reseed init --from` turns into steps, checked to be carried exactly.
struct SourceSchema {
    struct Column {
        var name: String
        var affinity: Affinity
    }

    struct Table {
        var name: String
        var sql: String
        /// The columns a row is written with: generated columns are left out (SQLite computes them).
        var columns: [Column]
        var hasRowid: Bool
        /// The `INTEGER PRIMARY KEY` column that holds the rowid (its alias), so the rows carry it; nil when there is none.
        var rowidColumn: String?
        var rowidIsColumn: Bool { rowidColumn != nil }
        /// The tables this one's foreign keys name (other than itself), lowercased.
        var parents: Set<String>
        var referencesItself: Bool
        /// The condition a row must meet to be carried; nil for every row. Adopting a seed leaves
        /// out the rows that register Reseed's tables in a GeoPackage (its build writes them anew).
        var rowFilter: String? = nil
    }

    /// Tables with rows to carry (a virtual table's shadow tables among them), in the order they were created.
    var tables: [Table]
    /// The schema step's statements, in the order the objects were created (`sqlite_schema` order):
    /// `CREATE TABLE`; a virtual table as the row of `sqlite_schema` that `sqlite3 .dump` writes
    /// (its module is not asked to create its shadow tables: they come as tables, with their rows,
    /// so its index is the source's own); `ANALYZE sqlite_schema` where `sqlite_stat1` was created.
    var creation: [String]
    /// `CREATE INDEX`, `CREATE VIEW` and `CREATE TRIGGER` statements, in the order they were created.
    var laterObjects: [String]
    /// `sqlite_sequence` rows of the tables carried, by table name.
    var sequences: [(table: String, value: StoredValue)]
    /// Whether `sqlite_stat1` is there (its rows are carried, see ``TableExport``).
    var hasStatistics: Bool
    /// The header's `user_version` and `application_id`, which `reseed.json` carries.
    var userVersion: Int32
    var applicationID: Int32
    /// What the steps do not carry, for the user to know.
    var notCarried: [String]

    /// Reads and checks the schema of the database `db` is connected to.
    ///
    /// - Throws: ``PackagingError/Code/notImportable`` naming the table or object that cannot be
    ///   carried exactly: a Reseed table in a database that is not a seed (one without Reseed's
    ///   metadata), a `CREATE` statement with a CR, rows that break a foreign key, a rowid table
    ///   without an `INTEGER PRIMARY KEY` whose columns take the names `rowid`, `_rowid_` and `oid`.
    static func read(_ db: Database, path: String) throws(PackagingError) -> SourceSchema {
        try packaging(.importDatabase, path: path) {
            // A seed is recognised by its metadata, never by its application_id (which is the app's).
            let isSeed = (try? SeedMetadata.read(db)) != nil
            let reseedTables: Set<String> = [SeedMetadata.tableName, SeedMetadata.stepsTableName]
            var schema = SourceSchema(
                tables: [], creation: [], laterObjects: [], sequences: [], hasStatistics: false,
                userVersion: try Int32.fetchOne(db, sql: "PRAGMA main.user_version") ?? 0,
                applicationID: try Int32.fetchOne(db, sql: "PRAGMA main.application_id") ?? 0, notCarried: [])
            let objects = try Row.fetchAll(db, sql: "SELECT type, name, tbl_name, sql FROM main.sqlite_schema ORDER BY rowid")
            var strict: [String: Bool] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT name, strict FROM pragma_table_list WHERE schema = 'main'") {
                strict[(row["name"] as String? ?? "").lowercased()] = row["strict"] ?? false
            }
            var writesSchema = false
            for row in objects {
                let type: String = row["type"] ?? ""
                let name: String = row["name"] ?? ""
                let owner: String = row["tbl_name"] ?? ""
                guard let sql: String = row["sql"] else { continue }  // automatic indexes come with their table
                let lowered = name.lowercased()
                if type == "table" && lowered == "sqlite_stat1" {
                    schema.creation.append("ANALYZE sqlite_schema")
                    schema.hasStatistics = true
                    continue
                }
                if type == "table" && lowered.hasPrefix("sqlite_stat") {
                    schema.notCarried.append("\(name): ANALYZE statistics the SQLite here cannot create (it has sqlite_stat1 only); the seed plans its queries with sqlite_stat1")
                    continue
                }
                if lowered.hasPrefix("sqlite_") || owner.lowercased().hasPrefix("sqlite_") { continue }
                if reseedTables.contains(lowered) || reseedTables.contains(owner.lowercased()) {
                    if isSeed { continue }
                    throw PackagingError(.notImportable, step: .importDatabase, path: path, message: "\(type) '\(name)' has a name Reseed's own metadata uses, in a database that is not a seed: rename it first")
                }
                if sql.utf8.contains(0x0D) {
                    throw PackagingError(.notImportable, step: .importDatabase, path: path, message: "the CREATE statement of \(type) '\(excerpt(name))' contains a CR, which a .sql step cannot carry (steps are read with LF line ends)")
                }
                switch type {
                case "table" where sql.uppercased().hasPrefix("CREATE VIRTUAL"):
                    if !writesSchema { schema.creation.append("PRAGMA writable_schema = ON") }
                    writesSchema = true
                    let values = ["table", name, owner].map { ValueText.sqlText(Array($0.utf8)) } + ["0", ValueText.sqlText(Array(sql.utf8))]
                    schema.creation.append("INSERT INTO sqlite_schema(type, name, tbl_name, rootpage, sql) VALUES(\(values.joined(separator: ", ")))")
                case "table":
                    var table = try table(name, sql: sql, strict: strict[lowered] ?? false, db, path: path)
                    if isSeed { table.rowFilter = GeoPackageRegistration.userRows(of: name) }
                    schema.tables.append(table)
                    schema.creation.append(sql)
                case "index", "view", "trigger":
                    schema.laterObjects.append(sql)
                default:
                    continue
                }
            }
            if writesSchema { schema.creation.append("PRAGMA writable_schema = OFF") }
            let carried = Set(schema.tables.map { $0.name.lowercased() })
            for table in schema.tables {
                let violation = try Row.fetchOne(db, sql: "SELECT rowid, parent FROM pragma_foreign_key_check(?) LIMIT 1", arguments: [table.name])
                if let violation {
                    let rowid = (violation["rowid"] as Int64?).map { "rowid \($0)" } ?? "a row"
                    throw PackagingError(.notImportable, step: .importDatabase, path: path, message: "table '\(excerpt(table.name))': \(rowid) names a missing row of '\(excerpt(violation["parent"] as String? ?? "?"))' (foreign_key_check), and every step of a build must pass foreign_key_check: fix the row first")
                }
            }
            if try db.tableExists("sqlite_sequence") {
                try forEachRow(db, "SELECT name, seq FROM main.sqlite_sequence ORDER BY rowid") { handle in
                    if case .text(let name) = StoredValue(handle, column: 0) {
                        let table = String(decoding: name, as: UTF8.self)
                        if carried.contains(table.lowercased()) { schema.sequences.append((table, StoredValue(handle, column: 1))) }
                    }
                    return true
                }
            }
            return schema
        }
    }

    private static func table(_ name: String, sql: String, strict: Bool, _ db: Database, path: String) throws -> Table {
        let columns = try Row.fetchAll(db, sql: "SELECT name, type, pk, hidden FROM pragma_table_xinfo(?) ORDER BY cid", arguments: [name])
        let withoutRowid = try Bool.fetchOne(db, sql: "SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?", arguments: [name]) ?? false
        let key = columns.filter { ($0["pk"] as Int? ?? 0) > 0 }
        // A one-column primary key is the rowid's alias unless SQLite gave it an index of its own:
        // `INTEGER PRIMARY KEY DESC`, `INT PRIMARY KEY` and the like are ordinary keys beside a rowid.
        let keyIndexes = try Int.fetchOne(db, sql: "SELECT count(*) FROM pragma_index_list(?) WHERE origin = 'pk'", arguments: [name]) ?? 0
        let rowidColumn: String? = !withoutRowid && key.count == 1 && keyIndexes == 0 ? key[0]["name"] : nil
        if !withoutRowid && rowidColumn == nil {
            let names = Set(columns.map { ($0["name"] as String? ?? "").sqlFolded })
            if names.isSuperset(of: ["rowid", "_rowid_", "oid"]) {
                throw PackagingError(.notImportable, step: .importDatabase, path: path, message: """
                    table '\(excerpt(name))' has columns named rowid, _rowid_ and oid and no INTEGER PRIMARY KEY, so no name \
                    reaches its rowids and no step can carry them: rename one of those columns, or give the table an INTEGER PRIMARY KEY, first
                    """)
            }
        }
        var parents = Set<String>()
        for row in try Row.fetchAll(db, sql: "SELECT DISTINCT \"table\" FROM pragma_foreign_key_list(?)", arguments: [name]) {
            if let parent: String = row["table"] { parents.insert(parent.lowercased()) }
        }
        let itself = parents.remove(name.lowercased()) != nil
        return Table(
            name: name, sql: sql,
            columns: columns.filter { ($0["hidden"] as Int? ?? 0) == 0 }.map {
                Column(name: $0["name"] ?? "", affinity: Affinity(declaredType: $0["type"] ?? "", strict: strict))
            },
            hasRowid: !withoutRowid, rowidColumn: rowidColumn, parents: parents, referencesItself: itself)
    }

    /// The tables in loading order, grouped where their foreign keys form a cycle: parents before
    /// children, and by name where foreign keys leave the order free.
    ///
    /// A group of more than one table, or a table that names itself, is loaded by one step with
    /// foreign keys deferred to its end (its rows may name rows that come later).
    func loadingOrder() -> [[Table]] {
        let byName = Dictionary(tables.map { ($0.name.lowercased(), $0) }, uniquingKeysWith: { first, _ in first })
        let groups = stronglyConnected(byName)
        var groupOf: [String: Int] = [:]
        for (index, group) in groups.enumerated() { for name in group { groupOf[name] = index } }
        // Each group's parents among the other groups.
        let needs: [Set<Int>] = groups.enumerated().map { index, group in
            Set(group.flatMap { byName[$0]?.parents ?? [] }.compactMap { groupOf[$0] }.filter { $0 != index })
        }
        let label = groups.map { $0.min() ?? "" }
        var done = Set<Int>()
        var order: [[Table]] = []
        while done.count < groups.count {
            let ready = groups.indices.filter { !done.contains($0) && needs[$0].isSubset(of: done) }
            // A cycle between groups cannot happen (they are components); `ready` is never empty.
            guard let next = ready.min(by: { label[$0] < label[$1] }) else { break }
            done.insert(next)
            order.append(groups[next].sorted().compactMap { byName[$0] })
        }
        return order
    }

    /// Tarjan's strongly connected components of the foreign-key graph, by lowercased name.
    private func stronglyConnected(_ byName: [String: Table]) -> [[String]] {
        var index = 0
        var indices: [String: Int] = [:], lowlinks: [String: Int] = [:]
        var stack: [String] = [], onStack = Set<String>()
        var components: [[String]] = []
        func visit(_ name: String) {
            indices[name] = index
            lowlinks[name] = index
            index += 1
            stack.append(name)
            onStack.insert(name)
            for parent in (byName[name]?.parents ?? []).sorted() where byName[parent] != nil {
                if indices[parent] == nil {
                    visit(parent)
                    lowlinks[name] = min(lowlinks[name] ?? 0, lowlinks[parent] ?? 0)
                } else if onStack.contains(parent) {
                    lowlinks[name] = min(lowlinks[name] ?? 0, indices[parent] ?? 0)
                }
            }
            if lowlinks[name] == indices[name] {
                var component: [String] = []
                while let top = stack.popLast() {
                    onStack.remove(top)
                    component.append(top)
                    if top == name { break }
                }
                components.append(component)
            }
        }
        for name in byName.keys.sorted() where indices[name] == nil { visit(name) }
        return components
    }
}
