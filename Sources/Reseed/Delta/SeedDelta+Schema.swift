import Foundation
import GRDB
import ReseedSystem

extension SeedDelta {
    /// One entry of a format-2 delta's schema list (`reseed_delta_schema`): an object to drop, one to
    /// create from its SQL, or (format 4) a table to rebuild from its new SQL with its rows kept.
    struct SchemaChange: Sendable, Equatable {
        enum Action: String, Sendable { case drop, create, rebuild }
        enum Kind: String, Sendable, CaseIterable { case table, index, view, trigger }

        var action: Action
        var kind: Kind
        var name: String
        /// The table an index or trigger belongs to; the object's own name for a table or view.
        var table: String
        /// The `CREATE` statement, exactly as `sqlite_schema` of the new seed holds it; nil for a drop.
        var sql: String?
    }

    /// The most entries a schema list may hold.
    static let maxSchemaChanges = 10_000
    /// The longest `CREATE` statement an entry may carry, in bytes.
    static let maxStatementBytes = 1 << 20
    /// The most bytes of SQL all entries together may carry.
    static let maxSchemaBytes = 16 << 20

    /// Reads `reseed_delta_schema` of a format-2 delta, bounded, checking every field.
    struct SchemaListReader {
        var db: Database
        var schema: String
        var path: String
        /// Whether the format has `rebuild` entries (4 and later).
        var rebuilds = false

        private func invalid(_ message: String) -> ReseedError {
            ReseedError(.invalidDelta, step: .applyDelta, path: path, message: message)
        }

        func read() throws -> [SchemaChange] {
            let listed = try String.fetchOne(db, sql: "SELECT type FROM \(schema).sqlite_schema WHERE name = ?", arguments: [Names.schema])
            guard listed == "table" else { throw invalid("the delta has no \(Names.schema) table, which its format requires") }
            let rows = try Row.fetchAll(db, sql: """
                SELECT idx, action, type,
                  CASE WHEN length(CAST(name AS BLOB)) <= 4096 THEN name END AS name,
                  CASE WHEN length(CAST(tbl_name AS BLOB)) <= 4096 THEN tbl_name END AS tbl_name,
                  CASE WHEN length(CAST(sql AS BLOB)) <= \(maxStatementBytes) THEN sql END AS sql,
                  typeof(sql) AS sqlType
                FROM \(schema).\(Names.schema) ORDER BY idx LIMIT \(maxSchemaChanges + 1)
                """)
            guard rows.count <= maxSchemaChanges else { throw invalid("the delta lists more than \(maxSchemaChanges) schema changes") }
            var changes: [SchemaChange] = []
            var seen: Set<String> = []
            var bytes = 0
            for row in rows {
                guard case .int64 = (row["idx"] as DatabaseValue).storage,
                      case .string(let actionText) = (row["action"] as DatabaseValue).storage, let action = SchemaChange.Action(rawValue: actionText),
                      case .string(let kindText) = (row["type"] as DatabaseValue).storage, let kind = SchemaChange.Kind(rawValue: kindText),
                      case .string(let name) = (row["name"] as DatabaseValue).storage, !name.isEmpty,
                      case .string(let table) = (row["tbl_name"] as DatabaseValue).storage, !table.isEmpty else {
                    throw invalid("a row of \(Names.schema) is malformed")
                }
                guard !name.lowercased().hasPrefix("sqlite_"), !table.lowercased().hasPrefix("sqlite_") else {
                    throw invalid("\(Names.schema) names SQLite's own object \(name)")
                }
                let sql: String? = row["sql"]
                switch action {
                case .drop:
                    guard (row["sqlType"] as String?) == "null" else { throw invalid("\(Names.schema): the drop of \(name) carries SQL") }
                case .rebuild:
                    guard rebuilds, kind == .table else { throw invalid("\(Names.schema): the rebuild of \(kindText) \(name) is not in this format") }
                    fallthrough
                case .create:
                    guard let sql else { throw invalid("\(Names.schema): the creation of \(name) carries no SQL, or more than \(maxStatementBytes) bytes") }
                    bytes += sql.utf8.count
                    guard bytes <= maxSchemaBytes else { throw invalid("\(Names.schema) carries more than \(maxSchemaBytes) bytes of SQL") }
                }
                guard seen.insert("\(action.rawValue) \(name.lowercased())").inserted else {
                    throw invalid("\(Names.schema) lists the \(action.rawValue) of \(name) twice")
                }
                changes.append(SchemaChange(action: action, kind: kind, name: name, table: table, sql: sql))
            }
            return changes
        }
    }

    /// Drops and creates the schema objects of a format-2 delta in `main`, inside the caller's
    /// transaction, each checked against `sqlite_schema` before and after: a drop removes exactly its
    /// object (and what SQLite drops with it), a creation adds exactly the object it names. Once the
    /// last is made, the whole of `sqlite_schema` must be what it was with exactly those changes.
    ///
    /// Each change reads `sqlite_schema` without the SQL (a seed's schema can hold megabytes of
    /// trigger text, and it changes by the dozen), and the SQL of the object it made; the SQL of
    /// every other entry is compared once, at the end (``finish()``), with what it was at the start.
    struct SchemaApplier {
        var db: Database
        var changes: [SchemaChange]
        var deltaPath: String
        var targetPath: String
        /// `sqlite_schema` as the changes should leave it: read at the first change, then changed as they are.
        private var expected: [Entry: String?]?
        /// `sqlite_schema` without the SQL as the last change left it, while changes follow one another.
        private var current: Set<Entry>?
        /// The rows of each table being rebuilt, set aside in a temp table until it is created again, by name.
        private var asides: [String: Aside] = [:]

        /// A rebuilt table's rows while it is dropped: the temp table holding them, the columns they
        /// fill (the rowid first in a rowid table), how many there are, and what the table fed the
        /// content hash (``SeedContentHash/tableDigest(_:withoutRowid:_:)``).
        private struct Aside {
            var temp: String
            var columns: [String]
            var count: Int
            var digest: String
        }

        init(db: Database, changes: [SchemaChange], deltaPath: String, targetPath: String) {
            self.db = db
            self.changes = changes
            self.deltaPath = deltaPath
            self.targetPath = targetPath
        }

        /// One row of `sqlite_schema`, but for its SQL: whether it has some.
        private struct Entry: Hashable {
            var type: String
            var name: String
            var table: String
            var hasSQL: Bool
        }

        private func invalid(_ message: String) -> ReseedError {
            ReseedError(.invalidDelta, step: .applyDelta, path: deltaPath, message: message)
        }

        private func mismatch(_ message: String, _ error: DatabaseError? = nil) -> ReseedError {
            ReseedError(.deltaMismatch, step: .applyDelta, path: targetPath, databaseError: error, message: "the delta does not fit this seed: \(message)")
        }

        /// Triggers, views and indexes, then tables: nothing dropped is still needed by what is dropped after it.
        /// A table to rebuild has its rows set aside, then is dropped as any.
        mutating func drop() throws {
            current = nil
            for kind in [SchemaChange.Kind.trigger, .view, .index, .table] {
                for change in changes where change.action == .drop && change.kind == kind { try drop(change) }
            }
            for change in changes where change.action == .rebuild {
                try setAside(change.name)
                try drop(SchemaChange(action: .drop, kind: .table, name: change.name, table: change.table, sql: nil))
            }
        }

        /// Tables, then indexes, views and triggers: each finds the tables it names. A rebuilt table is
        /// created as any, then gets its rows back.
        mutating func createTables() throws {
            current = nil
            for change in changes where change.action == .create && change.kind == .table { try create(change) }
            for change in changes where change.action == .rebuild {
                try create(SchemaChange(action: .create, kind: .table, name: change.name, table: change.table, sql: change.sql))
                try restore(change.name)
            }
        }

        /// Copies every row of table `name` (its rowid too, in a rowid table) into a temp table of
        /// untyped columns, which keep each value as stored.
        private mutating func setAside(_ name: String) throws {
            guard let own = try String.fetchOne(db, sql: "SELECT name FROM main.sqlite_schema WHERE type = 'table' AND name = ?", arguments: [name]),
                  let listed = try listed(own) else {
                throw mismatch("it rebuilds table \(name), which the seed does not have")
            }
            // Only an ordinary table: a virtual table's rows are its module's, and a shadow table is the module's own.
            guard listed.type == "table" else { throw invalid("the delta rebuilds \(name), which is not an ordinary table") }
            let withoutRowid = listed.withoutRowid
            let shape: TableShape
            switch try TableShape.read(own, withoutRowid: withoutRowid, in: "main", db) {
            case .failure(let failure): throw mismatch("it rebuilds table \(name), whose rows it cannot keep: \(failure.reason)")
            case .success(let read): shape = read
            }
            guard let columns = Self.keptColumns(of: shape, withoutRowid: withoutRowid) else {
                throw mismatch("it rebuilds table \(name), whose columns hide its rowid")
            }
            let digest = try SeedContentHash.tableDigest(own, withoutRowid: withoutRowid, db)
            let temp = "temp.\("reseed_rebuilt_\(asides.count + 1)".quotedIdentifier)"
            try db.execute(sql: "CREATE TEMP TABLE \(temp) (\((0..<columns.count).map { "c\($0)" }.joined(separator: ", ")))")
            try db.execute(sql: "INSERT INTO \(temp) SELECT \(columns.quotedList()) FROM main.\(own.quotedIdentifier)")
            asides[name] = Aside(temp: temp, columns: columns, count: db.changesCount, digest: digest)
        }

        /// Puts back the rows ``setAside(_:)`` kept into table `name`, created again: it must be an
        /// ordinary table with the same columns (and a rowid if it had one). Its CHECK constraints are
        /// not evaluated (the values passed them as the seed was built; the content hash checks the
        /// result). The rows must all come back, and as they were, to the byte: else (a NOT NULL or
        /// UNIQUE the new definition adds, a conflict clause that drops rows, a value stored otherwise)
        /// the delta does not fit, in a sentence that names the table.
        private mutating func restore(_ name: String) throws {
            guard let aside = asides.removeValue(forKey: name) else { throw invalid("the delta rebuilds table \(name) twice") }
            guard let listed = try listed(name), listed.type == "table" else {
                throw invalid("the delta rebuilds \(name) as a table that is not an ordinary one")
            }
            let withoutRowid = listed.withoutRowid
            var columns: [String]? = nil
            if case .success(let shape) = try TableShape.read(name, withoutRowid: withoutRowid, in: "main", db) {
                columns = Self.keptColumns(of: shape, withoutRowid: withoutRowid)
            }
            guard columns == aside.columns else {
                throw invalid("the delta rebuilds table \(name) with other columns than the seed's")
            }
            try db.execute(sql: "PRAGMA ignore_check_constraints = ON")
            defer { try? db.execute(sql: "PRAGMA ignore_check_constraints = OFF") }
            do {
                try db.execute(sql: "INSERT INTO main.\(name.quotedIdentifier) (\(aside.columns.quotedList())) SELECT \((0..<aside.columns.count).map { "c\($0)" }.joined(separator: ", ")) FROM \(aside.temp)")
            } catch let error as DatabaseError {
                throw mismatch("table \(name), its rows under its new definition: \(error.message ?? "\(error.resultCode)")", error)
            }
            // Counted in the table: a conflict clause that replaces or ignores loses rows without an error.
            let kept = try Int.fetchOne(db, sql: "SELECT count(*) FROM main.\(name.quotedIdentifier)") ?? 0
            guard kept == aside.count else {
                throw mismatch("table \(name), its rows under its new definition: \(kept) of \(aside.count) went back")
            }
            // The rows must be what they were, to the byte, as the content hashes read them (its definition
            // can store a value otherwise than a seed holds it, after a schema edited in place): then the
            // row set the incremental check follows is unchanged by the rebuild.
            guard try SeedContentHash.tableDigest(name, withoutRowid: withoutRowid, db) == aside.digest else {
                throw mismatch("table \(name), its rows under its new definition: SQLite stores them otherwise than the seed holds them")
            }
            try db.execute(sql: "DROP TABLE \(aside.temp)")
        }

        /// How `pragma_table_list` lists table `name` of `main`: its type and whether it is `WITHOUT ROWID`; nil when it does not.
        private func listed(_ name: String) throws -> (type: String, withoutRowid: Bool)? {
            try Row.fetchOne(db, sql: "SELECT type, wr FROM pragma_table_list WHERE schema = 'main' AND name = ?", arguments: [name])
                .map { ($0["type"] ?? "", $0["wr"] ?? false) }
        }

        /// The columns a rebuild copies of a table of `shape`: its stored columns, after the rowid in a
        /// rowid table; nil when the table's columns hide its rowid.
        private static func keptColumns(of shape: TableShape, withoutRowid: Bool) -> [String]? {
            withoutRowid ? shape.columns : shape.rowidAlias.map { [$0] + shape.columns }
        }

        /// The other creations, then the check of the whole schema (``finish()``).
        mutating func createOthers() throws {
            current = nil
            for kind in [SchemaChange.Kind.index, .view, .trigger] {
                for change in changes where change.action == .create && change.kind == kind { try create(change) }
            }
            try finish()
        }

        /// Checks that `sqlite_schema`, SQL included, is what it was with exactly the changes made.
        private func finish() throws {
            guard let expected else { return }
            let found = try entries(withSQL: true)
            guard found == expected else {
                // Name the first object that differs, in a stable order.
                let differing = Set(found.keys).union(expected.keys).filter { found[$0] != expected[$0] }
                    .sorted { ($0.type, $0.name) < ($1.type, $1.name) }
                let named = differing.first.map { " (\($0.type) \($0.name))" } ?? ""
                throw invalid("the delta's schema changes changed other schema objects\(named)")
            }
        }

        /// `sqlite_schema` without the SQL before a change: as the last change of the same phase left it, or read now.
        private func entriesBefore() throws -> Set<Entry> {
            if let current { return current }
            return Set(try entries(withSQL: false).keys)
        }

        private func entries(withSQL: Bool) throws -> [Entry: String?] {
            var entries: [Entry: String?] = [:]
            let rows = try Row.fetchCursor(db, sql: "SELECT type, name, tbl_name, sql IS NOT NULL\(withSQL ? ", sql" : "") FROM main.sqlite_schema")
            while let row = try rows.next() {
                let entry = Entry(type: row[0] ?? "", name: row[1] ?? "", table: row[2] ?? "", hasSQL: row[3] ?? false)
                if entries[entry] == nil { entries[entry] = .some(withSQL ? row[4] : nil) }
            }
            return entries
        }

        /// The SQL of `entry`, as `sqlite_schema` holds it now.
        private func sql(of entry: Entry) throws -> String? {
            try String.fetchOne(db, sql: "SELECT sql FROM main.sqlite_schema WHERE type = ? AND name = ?", arguments: [entry.type, entry.name])
        }

        /// The state the changes start from, SQL included, read at the first of them.
        private mutating func startIfNeeded() throws {
            if expected == nil { expected = try entries(withSQL: true) }
        }

        /// Whether `entry` is a shadow table of the virtual table `name` in `main`.
        private func isShadow(_ entry: Entry, of name: String) throws -> Bool {
            guard entry.type == "table", entry.name.lowercased().hasPrefix(name.lowercased() + "_") else { return false }
            let type = try String.fetchOne(db, sql: "SELECT type FROM pragma_table_list WHERE schema = 'main' AND name = ?", arguments: [entry.name])
            // A shadow table dropped with its virtual table is no longer listed: its name and prefix say it was one.
            return type == "shadow" || type == nil
        }

        private mutating func drop(_ change: SchemaChange) throws {
            try startIfNeeded()
            let before = try entriesBefore()
            // The name SQL gets is the target's own, quoted; the delta only says which one.
            guard let own = before.first(where: { $0.type == change.kind.rawValue && $0.name == change.name }) else {
                throw mismatch("it drops \(change.kind.rawValue) \(change.name), which the seed does not have")
            }
            try db.execute(sql: "DROP \(change.kind.rawValue.uppercased()) main.\(own.name.quotedIdentifier)")
            db.clearSchemaCache()
            current = nil
            let after = Set(try entries(withSQL: false).keys)
            guard after.isSubset(of: before), !after.contains(own) else {
                throw invalid("dropping \(change.kind.rawValue) \(change.name) changed other schema objects")
            }
            for gone in before.subtracting(after) {
                if gone != own {
                    // What SQLite drops with a table: its indexes, triggers and a virtual table's shadow tables.
                    let dependent = change.kind == .table && gone.type != "table" && gone.table.lowercased() == own.name.lowercased()
                    let shadow = try change.kind == .table && isShadow(gone, of: own.name)
                    guard dependent || shadow else {
                        throw invalid("dropping \(change.kind.rawValue) \(change.name) also dropped \(gone.type) \(gone.name)")
                    }
                }
                expected?[gone] = nil
            }
            current = after
        }

        private mutating func create(_ change: SchemaChange) throws {
            guard let sql = change.sql else { throw invalid("the creation of \(change.name) carries no SQL") }
            let module: String?
            switch CreateStatement.check(sql, kind: change.kind, name: change.name) {
            case .failure(let failure): throw invalid("the creation of \(change.kind.rawValue) \(change.name) is refused: \(failure.reason)")
            case .success(let found): module = found
            }
            try startIfNeeded()
            let before = try entriesBefore()
            current = nil
            do {
                // One statement: GRDB refuses a string with a second one.
                let statement = try db.makeStatement(sql: sql)
                try statement.execute()
            } catch let error as DatabaseError {
                if before.contains(where: { $0.name.lowercased() == change.name.lowercased() }) {
                    throw mismatch("it creates \(change.kind.rawValue) \(change.name), which the seed has already", error)
                }
                throw invalid("SQLite refused the creation of \(change.kind.rawValue) \(change.name): \(error.message ?? "\(error.resultCode)")")
            }
            db.clearSchemaCache()
            let after = Set(try entries(withSQL: false).keys)
            let type = change.kind.rawValue
            let made = Entry(type: type, name: change.name, table: change.table, hasSQL: true)
            guard before.isSubset(of: after), after.contains(made), try self.sql(of: made) == sql else {
                throw invalid("the statement for \(type) \(change.name) did not create exactly it")
            }
            expected?[made] = .some(sql)
            for added in after.subtracting(before) where added != made {
                // What SQLite creates with a table: its automatic indexes, sqlite_sequence, a virtual table's shadow tables.
                let automatic = change.kind == .table && added.type == "index" && !added.hasSQL
                    && added.name.hasPrefix("sqlite_autoindex_") && added.table == change.name
                let sequence = change.kind == .table && added.name == "sqlite_sequence"
                let shadow = try module != nil && isShadow(added, of: change.name)
                guard automatic || sequence || shadow else {
                    throw invalid("the statement for \(type) \(change.name) also created \(added.type) \(added.name)")
                }
                let addedSQL = try self.sql(of: added)
                expected?[added] = .some(addedSQL)
            }
            current = after
        }
    }
}
