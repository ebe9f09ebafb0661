import Foundation
import GRDB
import ReseedSystem

extension SeedDelta {
    /// One entry of a format-2 delta's schema list (`reseed_delta_schema`): an object to drop, or one to create from its SQL.
    struct SchemaChange: Sendable, Equatable {
        enum Action: String, Sendable { case drop, create }
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
    /// object (and what SQLite drops with it), a creation adds exactly the object it names.
    struct SchemaApplier {
        var db: Database
        var changes: [SchemaChange]
        var deltaPath: String
        var targetPath: String

        /// One row of `sqlite_schema`.
        private struct Entry: Hashable {
            var type: String
            var name: String
            var table: String
            var sql: String?

            /// Without the SQL, which equality still compares: a seed's schema can hold megabytes of
            /// trigger text, and each change reads the whole schema twice.
            func hash(into hasher: inout Hasher) {
                hasher.combine(type)
                hasher.combine(name)
            }
        }

        private func invalid(_ message: String) -> ReseedError {
            ReseedError(.invalidDelta, step: .applyDelta, path: deltaPath, message: message)
        }

        private func mismatch(_ message: String, _ error: DatabaseError? = nil) -> ReseedError {
            ReseedError(.deltaMismatch, step: .applyDelta, path: targetPath, databaseError: error, message: "the delta does not fit this seed: \(message)")
        }

        /// Triggers, views and indexes, then tables: nothing dropped is still needed by what is dropped after it.
        func drop() throws {
            for kind in [SchemaChange.Kind.trigger, .view, .index, .table] {
                for change in changes where change.action == .drop && change.kind == kind { try drop(change) }
            }
        }

        /// Tables, then indexes, views and triggers: each finds the tables it names.
        func createTables() throws {
            for change in changes where change.action == .create && change.kind == .table { try create(change) }
        }

        func createOthers() throws {
            for kind in [SchemaChange.Kind.index, .view, .trigger] {
                for change in changes where change.action == .create && change.kind == kind { try create(change) }
            }
        }

        private func entries() throws -> Set<Entry> {
            Set(try Row.fetchAll(db, sql: "SELECT type, name, tbl_name, sql FROM main.sqlite_schema").map {
                Entry(type: $0["type"] ?? "", name: $0["name"] ?? "", table: $0["tbl_name"] ?? "", sql: $0["sql"])
            })
        }

        /// Whether `entry` is a shadow table of the virtual table `name` in `main`.
        private func isShadow(_ entry: Entry, of name: String) throws -> Bool {
            guard entry.type == "table", entry.name.lowercased().hasPrefix(name.lowercased() + "_") else { return false }
            let type = try String.fetchOne(db, sql: "SELECT type FROM pragma_table_list WHERE schema = 'main' AND name = ?", arguments: [entry.name])
            // A shadow table dropped with its virtual table is no longer listed: its name and prefix say it was one.
            return type == "shadow" || type == nil
        }

        private func drop(_ change: SchemaChange) throws {
            let before = try entries()
            // The name SQL gets is the target's own, quoted; the delta only says which one.
            guard let own = before.first(where: { $0.type == change.kind.rawValue && $0.name == change.name }) else {
                throw mismatch("it drops \(change.kind.rawValue) \(change.name), which the seed does not have")
            }
            try db.execute(sql: "DROP \(change.kind.rawValue.uppercased()) main.\(own.name.quotedIdentifier)")
            db.clearSchemaCache()
            let after = try entries()
            guard after.isSubset(of: before), !after.contains(own) else {
                throw invalid("dropping \(change.kind.rawValue) \(change.name) changed other schema objects")
            }
            for gone in before.subtracting(after) where gone != own {
                // What SQLite drops with a table: its indexes, triggers and a virtual table's shadow tables.
                let dependent = change.kind == .table && gone.type != "table" && gone.table.lowercased() == own.name.lowercased()
                let shadow = try change.kind == .table && isShadow(gone, of: own.name)
                guard dependent || shadow else {
                    throw invalid("dropping \(change.kind.rawValue) \(change.name) also dropped \(gone.type) \(gone.name)")
                }
            }
        }

        private func create(_ change: SchemaChange) throws {
            guard let sql = change.sql else { throw invalid("the creation of \(change.name) carries no SQL") }
            let module: String?
            switch CreateStatement.check(sql, kind: change.kind, name: change.name) {
            case .failure(let failure): throw invalid("the creation of \(change.kind.rawValue) \(change.name) is refused: \(failure.reason)")
            case .success(let found): module = found
            }
            let before = try entries()
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
            let after = try entries()
            let type = change.kind.rawValue
            let expected = Entry(type: type, name: change.name, table: change.table, sql: sql)
            guard before.isSubset(of: after), after.contains(expected) else {
                throw invalid("the statement for \(type) \(change.name) did not create exactly it")
            }
            for added in after.subtracting(before) where added != expected {
                // What SQLite creates with a table: its automatic indexes, sqlite_sequence, a virtual table's shadow tables.
                let automatic = change.kind == .table && added.type == "index" && added.sql == nil
                    && added.name.hasPrefix("sqlite_autoindex_") && added.table == change.name
                let sequence = change.kind == .table && added.name == "sqlite_sequence"
                let shadow = try module != nil && isShadow(added, of: change.name)
                guard automatic || sequence || shadow else {
                    throw invalid("the statement for \(type) \(change.name) also created \(added.type) \(added.name)")
                }
            }
        }
    }
}
