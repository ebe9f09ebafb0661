import Foundation
import GRDB
import ReseedSystem

extension SeedDelta {
    /// Reads a delta's `reseed_delta` and `reseed_delta_tables`, bounded, checking every field.
    struct HeaderReader {
        var db: Database
        /// The schema the delta is: `main`, or ``Names/attached``.
        var schema: String
        var path: String
        /// The formats read; another is refused as an app of that age refuses it.
        var readable: ClosedRange<Int> = Format.rows.rawValue...Format.rebuild.rawValue

        private func invalid(_ message: String, _ error: DatabaseError? = nil) -> ReseedError {
            ReseedError(.invalidDelta, step: .applyDelta, path: path, databaseError: error, message: message)
        }

        func read() throws -> Header {
            let tables: Set<String>
            do {
                tables = Set(try String.fetchAll(db, sql: """
                    SELECT name FROM \(schema).sqlite_schema WHERE type = 'table' AND name IN ('\(Names.header)', '\(Names.tables)')
                    """))
            } catch let error as DatabaseError {
                throw invalid("not a SQLite database SQLite can read", error)
            }
            guard tables.contains(Names.header) else { throw invalid("not a Reseed delta (it has no \(Names.header) table)") }
            var fields: [String: DatabaseValue] = [:]
            // Bounded: the few short fields format 1 has; a longer value is never read.
            let rows = try Row.fetchAll(db, sql: """
                SELECT key, CASE WHEN length(CAST(value AS BLOB)) <= 256 THEN value END AS value
                FROM \(schema).\(Names.header) WHERE typeof(key) = 'text' AND length(key) <= 64 LIMIT 64
                """)
            for row in rows {
                if let key: String = row["key"] { fields[key] = row["value"] }
            }
            guard let formatValue = fields["format"] else { throw invalid("the delta has no format") }
            guard case .int64(let format) = formatValue.storage else { throw invalid("the delta's format is not an integer") }
            guard let known = Format(rawValue: Int(format)), readable.contains(known.rawValue) else {
                let known = readable.map(String.init)
                let list = known.count == 1 ? "format \(known[0])" : "formats " + known.dropLast().joined(separator: ", ") + " and \(known[known.count - 1])"
                throw invalid("the delta has format \(format); this Reseed reads \(list) only")
            }
            func hash(_ key: String) throws -> String {
                guard let value = fields[key], case .string(let text) = value.storage,
                      text.utf8.count == 64, text.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
                    throw invalid("the delta's \(key) is missing or not 64 lowercase hex digits")
                }
                return text
            }
            func int32(_ key: String) throws -> Int32 {
                guard let value = fields[key], case .int64(let number) = value.storage, let result = Int32(exactly: number) else {
                    throw invalid("the delta's \(key) is missing or not a 32-bit integer")
                }
                return result
            }
            guard tables.contains(Names.tables) else { throw invalid("the delta has no \(Names.tables) table") }
            // Longer than the fields above: read on its own, only when it has exactly its size.
            var fromRowSet: RowSetHash?
            if fields.keys.contains("fromRowSet") {
                let bytes = try Data.fetchOne(db, sql: """
                    SELECT value FROM \(schema).\(Names.header)
                    WHERE key = 'fromRowSet' AND typeof(value) = 'blob' AND length(value) = \(RowSetHash.byteCount)
                    """)
                guard let rowSet = bytes.flatMap({ RowSetHash(bytes: [UInt8]($0)) }) else {
                    throw invalid("the delta's fromRowSet is not a \(RowSetHash.byteCount)-byte BLOB")
                }
                fromRowSet = rowSet
            }
            // Added later, optional: a reader that does not know it applies the rows and leaves the statistics.
            var statistics = false
            if let value = fields["statistics"] {
                guard case .int64(1) = value.storage else { throw invalid("the delta's statistics is not the integer 1") }
                statistics = true
            }
            return Header(
                format: Int(format), fromContentHash: try hash("fromContentHash"), fromRowSet: fromRowSet, toContentHash: try hash("toContentHash"),
                userVersion: try int32("userVersion"), applicationID: try int32("applicationID"),
                tables: try readTables(keyedByRowid: format >= Format.rowids.rawValue),
                schemaChanges: format >= Format.schema.rawValue
                    ? try SchemaListReader(db: db, schema: schema, path: path, rebuilds: format >= Format.rebuild.rawValue).read() : [],
                statistics: statistics)
        }

        /// With `keyedByRowid` (format 3), each row's `moved` too: NULL, or the rows a table keyed by rowid moves.
        private func readTables(keyedByRowid: Bool) throws -> [Header.Table] {
            if keyedByRowid, try Bool.fetchOne(db, sql: "SELECT count(*) = 0 FROM pragma_table_info(?, ?) WHERE name = 'moved'", arguments: [Names.tables, schema]) == true {
                throw invalid("the delta has format 3 or later but its \(Names.tables) has no moved column")
            }
            let rows = try Row.fetchAll(db, sql: """
                SELECT idx, CASE WHEN length(CAST(name AS BLOB)) <= 4096 THEN name END AS name, deleted, updated, inserted\(keyedByRowid ? ", moved" : "")
                FROM \(schema).\(Names.tables) ORDER BY idx LIMIT \(SeedDelta.maxTables + 1)
                """)
            guard rows.count <= SeedDelta.maxTables else { throw invalid("the delta lists more than \(SeedDelta.maxTables) tables") }
            var tables: [Header.Table] = []
            var names: Set<String> = []
            for row in rows {
                func count(_ column: String) -> Int? {
                    guard case .int64(let value) = (row[column] as DatabaseValue).storage, value >= 0, value <= Int64(Int32.max) else { return nil }
                    return Int(value)
                }
                guard case .int64(let index) = (row["idx"] as DatabaseValue).storage, index >= 1, index <= Int64(SeedDelta.maxTables),
                      case .string(let name) = (row["name"] as DatabaseValue).storage,
                      let deleted = count("deleted"), let updated = count("updated"), let inserted = count("inserted") else {
                    throw invalid("a row of \(Names.tables) is malformed")
                }
                var moved: Int?
                if keyedByRowid, !(row["moved"] as DatabaseValue).isNull {
                    guard let count = count("moved") else { throw invalid("a row of \(Names.tables) is malformed") }
                    moved = count
                }
                guard names.insert(name).inserted, tables.last.map({ $0.index < Int(index) }) ?? true else {
                    throw invalid("\(Names.tables) lists table \(name) or index \(index) twice")
                }
                tables.append(Header.Table(index: Int(index), name: name, deleted: deleted, updated: updated, inserted: inserted, moved: moved))
            }
            return tables
        }
    }

    /// Applies the row lists of a delta attached as ``Names/attached`` to `main`, inside the caller's transaction.
    struct DeltaApplier {
        var db: Database
        var header: Header
        var deltaPath: String
        var targetPath: String
        /// Called with (rows applied, rows the header lists) after each chunk of a row list.
        var progress: ((Int64, Int64) -> Void)?

        static let delta = Names.attached
        /// The rows of a list one statement applies when progress is reported; without it, a list is one statement.
        static let rowsPerStep = 1024

        /// Applies every row list; with `rowSet`, removes from it each row a list deletes or updates
        /// before the change and adds each row it updates or inserts after it (see ``IncrementalContentHash``).
        func run(rowSet: inout RowSetAccumulator?) throws {
            let total = Int64(header.tables.reduce(0) { $0 + $1.deleted + $1.updated + $1.inserted + ($1.moved ?? 0) })
            var applied: Int64 = 0
            progress?(0, total)
            var schema = SchemaApplier(db: db, changes: header.schemaChanges, deltaPath: deltaPath, targetPath: targetPath)
            // The row set loses every row of a table the delta drops (or replaces), read before it goes
            // (the content tables are listed only then: listing them computes every view's columns). A rebuilt
            // table's rows stay as they were, to the byte (the schema applier checks it).
            let dropped = Set(header.schemaChanges.filter { $0.action == .drop && $0.kind == .table }.map(\.name))
            if rowSet != nil, !dropped.isEmpty {
                for table in try SeedDelta.contentTables(in: "main", db) where dropped.contains(table.name) {
                    let rows = try TableRows(table.name, withoutRowid: table.withoutRowid, db)
                    let prefix = RowEncoding.elementPrefix(of: rows)
                    // Digested and expanded on helper threads while the apply goes on.
                    try rows.forEachRow(rows.selectAll, db) { rowSet?.change($0, $1, of: rows, prefix: prefix, sign: -1) }
                }
            }
            try schema.drop()
            try schema.createTables()
            // Tables the delta created are filled first, then the row lists of the others, virtual tables first in each group.
            let created = Set(header.schemaChanges.filter { $0.action == .create && $0.kind == .table }.map(\.name))
            let ordered = header.tables.filter { created.contains($0.name) } + header.tables.filter { !created.contains($0.name) }
            let targetTables = Dictionary(
                try SeedDelta.contentTables(in: "main", db).map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            var fullText = try FollowingIndexes(db: db, targetPath: targetPath, tables: Array(targetTables.values))
            var changedVirtual: [ContentTables.Table] = []
            var checked: [(table: Header.Table, shape: TableShape, rows: TableRows?)] = []
            for table in ordered {
                guard let target = targetTables[table.name] else {
                    throw ReseedError(.deltaMismatch, step: .applyDelta, path: targetPath, message: "the delta changes table \(table.name), which the seed does not have")
                }
                if target.kind == .virtual { changedVirtual.append(target) }
                guard table.moved == nil || target.kind != .virtual else {
                    throw invalid("table \(table.name) is a virtual table, whose rows a delta never matches by content")
                }
                // The rows as the content hashes read them, and, for a table keyed by rowid, the shape of its lists.
                let hashed = try shape(of: table, target, byRowid: false)
                let shape = table.moved == nil ? hashed : try self.shape(of: table, target, byRowid: true)
                for list in Names.List.allCases where table.count(list) > 0 {
                    if try !fullText.acceptsRowids(list, of: table, shape: shape) { try checkList(list, of: table, shape: shape) }
                }
                checked.append((table, shape, rowSet.map { _ in TableRows(hashed) }))
            }
            // The row set loses the rows the delta deletes or updates, read before any table changes,
            // and gains the rows it updates or inserts, read after every table changed: an
            // external-content FTS table reads its text from another table the delta may change after it.
            // A table keyed by rowid (never a virtual one) is tracked as its lists apply.
            for (table, shape, rows) in checked where table.moved == nil {
                guard let rows else { continue }
                for list in [Names.List.deleted, .updated] where table.count(list) > 0 {
                    try track(list, of: table, shape: shape, rows: rows, into: &rowSet, adding: false)
                }
            }
            // An external-content FTS table's index is rebuilt around the rows, from its content table (see FollowingIndexes).
            let lists = checked.map { ($0.table, $0.shape) }
            try fullText.unindex(lists, created: created, rowsTracked: rowSet != nil)
            for (table, shape, rows) in checked where !fullText.follows(table.name) {
                let step = { (rows: Int) in
                    applied += Int64(rows)
                    progress?(min(applied, total), total)
                }
                if table.moved != nil {
                    try applyKeyedByRowid(table, shape: shape, rows: rows, rowSet: &rowSet, step: step)
                    continue
                }
                // Deletes first, so that an inserted row may take a deleted row's key or unique value.
                for list in [Names.List.deleted, .updated, .inserted] where table.count(list) > 0 {
                    try apply(list, of: table, shape: shape, step: step)
                }
            }
            applied += try fullText.reindex(lists)
            progress?(min(applied, total), total)
            for (table, shape, rows) in checked where table.moved == nil {
                guard let rows else { continue }
                if created.contains(table.name) {
                    // A table the delta created holds its inserted rows only, whatever their keys (NULL ones too).
                    let count = try rows.forEachRow(rows.selectAll, db) { try rowSet?.add($0, $1, of: rows) }
                    guard count == Int64(table.inserted) else {
                        throw mismatch(.inserted, table, "the table holds \(count) row(s) after the delta inserted \(table.inserted)", nil)
                    }
                    continue
                }
                for list in [Names.List.updated, .inserted] where table.count(list) > 0 {
                    try track(list, of: table, shape: shape, rows: rows, into: &rowSet, adding: true)
                }
            }
            // A module's own check of the index it kept: the content hash reads rows, not the index.
            for table in changedVirtual {
                if let problem = try VirtualTableCheck.problem(table.name, db) {
                    throw ReseedError(.verificationFailed, step: .applyDelta, path: targetPath,
                                      message: "the delta applied leaves the index of table \(table.name) inconsistent (\(problem)); rolled back")
                }
            }
            try schema.createOthers()
            try db.execute(sql: "PRAGMA main.user_version = \(header.userVersion)")
            try db.execute(sql: "PRAGMA main.application_id = \(header.applicationID)")
            if header.statistics {
                try StatisticsApplier(db: db, deltaPath: deltaPath).run()
            }
        }

        /// The shape of the target's table `table` lists: by its key, or `byRowid`.
        private func shape(of table: Header.Table, _ target: ContentTables.Table, byRowid: Bool) throws -> TableShape {
            switch try TableShape.read(table.name, withoutRowid: target.withoutRowid, in: "main", db, byRowid: byRowid) {
            case .success(let read): return read
            case .failure(let failure):
                throw ReseedError(.deltaMismatch, step: .applyDelta, path: targetPath, message: "the delta changes table \(table.name): \(failure.reason)")
            }
        }

        /// Checks that a row list is a table with exactly the columns its format gives it, and as many rows as the
        /// header says (a list of moves: at most as many runs as rows moved; its runs are checked as they are read).
        private func checkList(_ list: Names.List, of table: Header.Table, shape: TableShape) throws {
            let name = Names.table(table.index, list)
            let expected = Names.columns(of: list, keys: shape.key.count, values: shape.values.count)
            let kind = try String.fetchOne(db, sql: "SELECT type FROM \(Self.delta).sqlite_schema WHERE name = ?", arguments: [name])
            let listed = try String.fetchOne(db, sql: "SELECT type FROM pragma_table_list WHERE schema = ? AND name = ?", arguments: [Self.delta, name])
            guard kind == "table", listed == "table" else {
                throw invalid("table \(table.name): the delta lacks its row list \(name)")
            }
            let columns = try String.fetchAll(db, sql: "SELECT name FROM pragma_table_xinfo(?, ?)", arguments: [name, Self.delta])
            guard columns == expected else {
                throw invalid("table \(table.name): \(name) has columns (\(columns.prefix(8).joined(separator: ", "))…); the seed's table needs \(expected.count): (\(expected.prefix(8).joined(separator: ", "))…)")
            }
            let rows = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(Self.delta).\(name.quotedIdentifier)") ?? -1
            guard list == .moved ? (1...max(1, table.count(list))).contains(rows) : rows == table.count(list) else {
                throw invalid("table \(table.name): \(name) holds \(rows) rows; the header says \(table.count(list))")
            }
            if list == .updated {
                guard !shape.values.isEmpty else {
                    throw invalid("table \(table.name): the delta updates rows of a table whose columns are all in its key")
                }
                let malformed = try Int.fetchOne(db, sql: """
                    SELECT count(*) FROM \(Self.delta).\(name.quotedIdentifier)
                    WHERE typeof(\(Names.changed)) <> 'text' OR length(\(Names.changed)) <> ? OR \(Names.changed) GLOB '*[^01]*'
                    """, arguments: [shape.values.count]) ?? 0
                guard malformed == 0 else {
                    throw invalid("table \(table.name): \(malformed) updated row(s) whose \(Names.changed) is not \(shape.values.count) digits 0 or 1")
                }
            }
        }

        /// Removes from (or adds to) `rowSet` the rows of the target whose key the row list `list`
        /// holds, read as the content hashes read them: before the delta, the rows a delete or an
        /// update changes; after it, the rows an update or an insert wrote. They must be as many as
        /// the list's rows, as the list's statement touches exactly those: so the row set follows the table.
        func track(
            _ list: Names.List, of table: Header.Table, shape: TableShape, rows: TableRows, into rowSet: inout RowSetAccumulator?, adding: Bool
        ) throws {
            let source = "\(Self.delta).\(Names.table(table.index, list).quotedIdentifier)"
            let sql = rows.select(where: Self.listed(shape, in: source))
            let prefix = RowEncoding.elementPrefix(of: rows)
            let count = try rows.forEachRow(sql, db) { statement, columns in
                rowSet?.change(statement, columns, of: rows, prefix: prefix, sign: adding ? 1 : -1)
            }
            guard count == Int64(table.count(list)) else {
                throw mismatch(list, table, "\(count) row(s) of the seed have the keys of the \(table.count(list)) the delta lists", nil)
            }
        }

        /// Runs the statements of a row list (once per chunk of ``rowsPerStep`` rows, in rowid order,
        /// when progress is reported) and checks that they touched exactly its rows; `step` hears of the
        /// rows each statement touched.
        func apply(_ list: Names.List, of table: Header.Table, shape: TableShape, step: (Int) -> Void) throws {
            let source = "\(Self.delta).\(Names.table(table.index, list).quotedIdentifier)"
            let target = "main.\(shape.name.quotedIdentifier)"
            let keys = Names.keys(shape.key.count)
            let values = Names.values(shape.values.count)
            // A chunk is the rows whose rowid is in (?, ?]: the list's rowids need not be dense.
            let chunk = progress == nil ? nil : "rowid > ? AND rowid <= ?"
            let statements: [(sql: String, arguments: StatementArguments)]
            switch list {
            case .deleted:
                statements = [("DELETE FROM \(target) WHERE \(Self.listed(shape, in: source, where: chunk))", [])]
            case .updated:
                statements = try updates(of: shape, source: source, target: target, keys: keys, values: values, chunk: chunk)
            case .moved:
                throw invalid("table \(table.name): rows move only in a table keyed by rowid")
            case .inserted:
                statements = [("INSERT OR ABORT INTO \(target) (\((shape.key + shape.values).quotedList())) SELECT \((keys + values).joined(separator: ", ")) FROM \(source)\(chunk.map { " WHERE \($0)" } ?? "") ORDER BY rowid", [])]
            }
            var changed = 0
            do {
                if progress == nil {
                    for (sql, arguments) in statements {
                        try db.execute(sql: sql, arguments: arguments)
                        changed += db.changesCount
                        step(db.changesCount)
                    }
                } else {
                    let prepared = try statements.map { (try db.makeStatement(sql: $0.sql), $0.arguments) }
                    var last = Int64.min
                    let next = "SELECT max(rowid) FROM (SELECT rowid FROM \(source) WHERE rowid > ? ORDER BY rowid LIMIT \(Self.rowsPerStep))"
                    while let upper = try Int64.fetchOne(db, sql: next, arguments: [last]) {
                        for (statement, arguments) in prepared {
                            try statement.execute(arguments: arguments + [last, upper])
                            changed += db.changesCount
                            step(db.changesCount)
                        }
                        last = upper
                    }
                }
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                throw mismatch(list, table, "SQLite refused a row (\(error.message ?? "constraint failed"))", error)
            }
            guard changed == table.count(list) else {
                let verb = list == .deleted ? "deleted" : "updated"
                throw mismatch(list, table, "\(changed) row(s) \(verb) of \(table.count(list)): the seed lacks rows the delta \(list == .deleted ? "deletes" : "updates")", nil)
            }
        }

        /// The condition that a row of the table `shape` describes has its key in the row list
        /// `source` (the list's rows `condition` selects, if given): `"k" IN (SELECT k1 FROM …)`.
        static func listed(_ shape: TableShape, in source: String, where condition: String? = nil) -> String {
            let left = shape.key.count == 1 ? shape.key.quotedList() : "(\(shape.key.quotedList()))"
            return "\(left) IN (SELECT \(Names.keys(shape.key.count).joined(separator: ", ")) FROM \(source)\(condition.map { " WHERE \($0)" } ?? ""))"
        }

        /// Updated-row lists with more distinct `changed` masks than this are applied by one statement.
        static let maskedStatements = 16

        /// The statements of an updated row list, each taking its arguments, then a chunk's bounds
        /// when `chunk` is given: one per distinct `changed` mask, setting only the columns it marks.
        /// SQLite rewrites the entry of every index on a column a `SET` names, even to the same value,
        /// so setting only what changed leaves the pages of the other indexes unwritten. Past
        /// ``maskedStatements`` masks, or when a mask marks no column (a row listed as updated whose
        /// values stay), one statement sets every value column, to itself where the mask says unchanged.
        /// A mask marks column i when its character i is `1`, as SQLite's `substr` reads it, in both ways.
        private func updates(
            of shape: TableShape, source: String, target: String, keys: [String], values: [String], chunk: String?
        ) throws -> [(sql: String, arguments: StatementArguments)] {
            let match = zip(shape.key, keys).map { "t.\($0.quotedIdentifier) = d.\($1)" }.joined(separator: " AND ")
            func statement(_ assignments: [String], where condition: String?) -> String {
                let conditions = [condition, chunk].compactMap { $0 }
                let rows = conditions.isEmpty ? source : "(SELECT * FROM \(source) WHERE \(conditions.joined(separator: " AND ")))"
                return "UPDATE OR ABORT \(target) AS t SET \(assignments.joined(separator: ", ")) FROM \(rows) AS d WHERE \(match)"
            }
            let everyColumn = [(statement(shape.values.enumerated().map { offset, column in
                let quoted = column.quotedIdentifier
                return "\(quoted) = CASE WHEN substr(d.\(Names.changed), \(offset + 1), 1) = '1' THEN d.\(values[offset]) ELSE t.\(quoted) END"
            }, where: nil), StatementArguments())]
            let masks = try DatabaseValue.fetchAll(db, sql: "SELECT DISTINCT \(Names.changed) FROM \(source) LIMIT \(Self.maskedStatements + 1)")
            guard !shape.values.isEmpty, masks.count <= Self.maskedStatements else { return everyColumn }
            let marks = (1...shape.values.count).map { "substr(?1, \($0), 1) = '1'" }.joined(separator: ", ")
            var statements: [(sql: String, arguments: StatementArguments)] = []
            for mask in masks {
                guard let row = try Row.fetchOne(db, sql: "SELECT \(marks)", arguments: [mask]) else { return everyColumn }
                let assignments = shape.values.indices.filter { (row[$0] as Bool?) == true }.map { offset in
                    "\(shape.values[offset].quotedIdentifier) = d.\(values[offset])"
                }
                guard !assignments.isEmpty else { return everyColumn }
                statements.append((statement(assignments, where: "\(Names.changed) IS ?"), [mask]))
            }
            return statements
        }

        func invalid(_ message: String) -> ReseedError {
            ReseedError(.invalidDelta, step: .applyDelta, path: deltaPath, message: message)
        }

        func mismatch(_ list: Names.List, _ table: Header.Table, _ detail: String, _ error: DatabaseError?) -> ReseedError {
            ReseedError(.deltaMismatch, step: .applyDelta, path: targetPath, databaseError: error,
                        message: "the delta does not fit this seed: table \(table.name), \(list.rawValue) rows: \(detail)")
        }
    }
}
