import Foundation
import GRDB
import ReseedSystem

extension SeedDelta {
    /// The external-content FTS4 and FTS5 tables of a delta's target (`content='article'`), whose index
    /// entries the device rebuilds itself from the content table: a delta never writes them.
    ///
    /// Such a table's rows, as a query reads them, are its content table's text; only its index is its
    /// own. A delta carries that text once, in the content table's rows; the index table's row lists
    /// carry only rowids (`k1`), or, in a delta written before, values this reader ignores. The index
    /// is changed around the row lists, inside their transaction:
    ///
    /// 1. before any row changes, the entries of every rowid the delta touches are removed through the
    ///    module (`DELETE`), which reads the old text from the content table as it still is: the rowids
    ///    of the content rows the delta deletes or updates, and those the index table's lists name;
    /// 2. after every row changed, the entries of those rowids and of the content rows the delta updates
    ///    or inserts are added again from the content table (`INSERT … SELECT` through the module).
    ///
    /// Where that touches at least 3/8 of the table's rows (the span of its rowids), or the delta creates the index or its
    /// content table, one `'rebuild'` re-reads the whole content table instead: it took as long as
    /// removing and adding the entries of 35–40 % of the rows (20,000 rows of 20–60 words).
    ///
    /// Given an installed index that followed its content (what the recorded content hash and the
    /// module's check stand for), the index then follows the new content, whichever rows the delta
    /// lists for the index table: its lists only say which rows of the index table the row set loses and gains.
    struct FollowingIndexes {
        /// One external-content FTS table of the target.
        struct Index {
            var name: String
            /// Its content table (or view), as its `content` option names it.
            var content: String
            /// The column of the content table its rowid is: FTS5's `content_rowid`, else `rowid`.
            var contentRowid: String
            /// Its columns, in order.
            var columns: [String]
        }

        /// How an index's entries are rebuilt, decided before any row changes.
        enum Rebuild: Equatable {
            /// The entries of the rowids listed in ``FollowingIndexes/rowids`` under this number.
            case rows(Int)
            /// The whole index, from the content table.
            case whole
        }

        var db: Database
        var targetPath: String
        /// The target's external-content FTS tables, by lowercased name.
        private var indexes: [String: Index] = [:]
        /// The indexes the delta changes and how, in the order of their names.
        private var planned: [(index: Index, rebuild: Rebuild)] = []

        /// The temp table of the rowids whose entries are rebuilt: `(idx, r)`, `idx` numbering the indexes.
        static let rowidsTable = "reseed_fulltext_rowids"
        static let rowids = "temp.\(rowidsTable)"
        /// An index is rebuilt whole when the rowids to re-index reach this fraction of its rows.
        static let wholeRebuildShare = (rowids: 3, rows: 8)
        private static let delta = Names.attached

        /// The external-content FTS4 and FTS5 tables among `tables` (the target's content tables).
        init(db: Database, targetPath: String, tables: [ContentTables.Table]) throws {
            self.db = db
            self.targetPath = targetPath
            for table in tables where table.kind == .virtual {
                guard let content = table.contentTable,
                      let sql = try String.fetchOne(db, sql: "SELECT sql FROM main.sqlite_schema WHERE type = 'table' AND name = ?", arguments: [table.name]),
                      let definition = VirtualTableDefinition(sql), ["fts4", "fts5"].contains(definition.module),
                      case .success(let shape) = try TableShape.read(table.name, withoutRowid: false, in: "main", db) else { continue }
                let contentRowid = definition.module == "fts5" ? definition.option("content_rowid") : nil
                indexes[table.name.lowercased()] = Index(name: table.name, content: content, contentRowid: contentRowid ?? "rowid", columns: shape.values)
            }
        }

        /// Whether table `name` is an external-content FTS table, whose row lists are never applied as rows.
        func follows(_ name: String) -> Bool { indexes[name.lowercased()] != nil }

        /// Whether `list` of `table` is a row list of rowids only (`k1`) with as many rows as the header
        /// says, as the builder writes them for an external-content FTS table; false when it is another
        /// table's list or has the columns of the format's row lists, which the caller checks as such.
        func acceptsRowids(_ list: Names.List, of table: Header.Table, shape: TableShape) throws -> Bool {
            guard follows(table.name) else { return false }
            let name = Names.table(table.index, list)
            let columns = try String.fetchAll(db, sql: "SELECT name FROM pragma_table_xinfo(?, ?)", arguments: [name, Self.delta])
            let listed = try String.fetchOne(db, sql: "SELECT type FROM pragma_table_list WHERE schema = ? AND name = ?", arguments: [Self.delta, name])
            guard listed == "table", columns == Names.keys(shape.key.count) else { return false }
            let rows = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(Self.delta).\(name.quotedIdentifier)") ?? -1
            guard rows == table.count(list) else {
                throw ReseedError(.invalidDelta, step: .applyDelta, path: targetPath, message: "table \(table.name): \(name) holds \(rows) rows; the header says \(table.count(list))")
            }
            return true
        }

        /// Step 1: plans each index the delta changes (listed itself, or its content table listed) and
        /// removes the entries of the rowids it touches, before any row list is applied. `checked` are
        /// the delta's tables with their shapes; `created` the tables the delta created. Without
        /// `rowsTracked` (the incremental check, which proves the index table's lists name every row of
        /// it that changes), an index over a view is rebuilt whole: which of its rows change, only those
        /// lists say, and the whole content hash reads its rows from the view, not from the index.
        mutating func unindex(_ checked: [(table: Header.Table, shape: TableShape)], created: Set<String>, rowsTracked: Bool) throws {
            try checkListedBefore(checked)
            let byName = Dictionary(checked.map { ($0.table.name.lowercased(), $0) }, uniquingKeysWith: { first, _ in first })
            let createdNames = Set(created.map { $0.lowercased() })
            var changed: [Index] = []
            for index in indexes.values.sorted(by: { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }) {
                let listed = byName[index.name.lowercased()] != nil || byName[index.content.lowercased()] != nil
                if try listed || (!rowsTracked && !checked.isEmpty && !contentIsTable(index)) { changed.append(index) }
            }
            guard !changed.isEmpty else { return }
            try db.execute(sql: "CREATE TEMP TABLE \(Self.rowidsTable) (idx INTEGER, r INTEGER, PRIMARY KEY (idx, r)) WITHOUT ROWID")
            for (number, index) in changed.enumerated() {
                let own = byName[index.name.lowercased()]
                let content = byName[index.content.lowercased()]
                // A new index, or a new content table (whose old text is gone already), is filled from the content whole.
                if createdNames.contains(index.name.lowercased()) || createdNames.contains(index.content.lowercased()) {
                    planned.append((index, .whole))
                    continue
                }
                if let own {
                    for list in Names.List.allCases where own.table.count(list) > 0 {
                        try db.execute(sql: "INSERT OR IGNORE INTO \(Self.rowids) (idx, r) SELECT ?, k1 FROM \(source(own.table, list))", arguments: [number])
                    }
                }
                if let content {
                    for list in [Names.List.deleted, .updated] where content.table.count(list) > 0 {
                        try addContentRowids(of: index, number: number, content, list)
                    }
                }
                let touched = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(Self.rowids) WHERE idx = ?", arguments: [number]) ?? 0
                let rows = try contentRows(of: index)
                let rebuild: Rebuild = (rows == nil && !rowsTracked) || Self.rebuildsWhole(touched: touched, rows: rows) ? .whole : .rows(number)
                planned.append((index, rebuild))
                if rebuild == .rows(number) {
                    try db.execute(sql: "DELETE FROM main.\(index.name.quotedIdentifier) WHERE rowid IN (SELECT r FROM \(Self.rowids) WHERE idx = ?)", arguments: [number])
                }
            }
        }

        /// Whether re-indexing `touched` rowids of a table of `rows` rows (nil: unknown, a view) costs more than a rebuild.
        static func rebuildsWhole(touched: Int, rows: Int?) -> Bool {
            guard let rows else { return false }
            return touched * wholeRebuildShare.rows >= rows * wholeRebuildShare.rowids
        }

        /// Step 2, after every row list was applied: adds the entries of the rowids step 1 removed and of
        /// the content rows the delta updated or inserted, or rebuilds the index whole; checks that each
        /// index table's lists name rows it has (deleted: before, not after; updated: both; inserted: after).
        /// Returns the rows of the index tables' lists, for the progress of the apply.
        func reindex(_ checked: [(table: Header.Table, shape: TableShape)]) throws -> Int64 {
            let byName = Dictionary(checked.map { ($0.table.name.lowercased(), $0) }, uniquingKeysWith: { first, _ in first })
            var listed: Int64 = 0
            for (index, rebuild) in planned {
                let table = "main.\(index.name.quotedIdentifier)"
                switch rebuild {
                case .whole:
                    try db.execute(sql: "INSERT INTO \(table)(\(index.name.quotedIdentifier)) VALUES ('rebuild')")
                case .rows(let number):
                    if let content = byName[index.content.lowercased()] {
                        for list in [Names.List.updated, .inserted] where content.table.count(list) > 0 {
                            try addContentRowids(of: index, number: number, content, list)
                        }
                    }
                    let columns = index.columns.quotedList()
                    try db.execute(sql: """
                        INSERT INTO \(table) (rowid, \(columns)) SELECT rowid, \(columns) FROM \(table)
                        WHERE rowid IN (SELECT r FROM \(Self.rowids) WHERE idx = ?)
                        """, arguments: [number])
                }
                if let own = byName[index.name.lowercased()] {
                    for list in Names.List.allCases where own.table.count(list) > 0 {
                        let present = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table) WHERE rowid IN (SELECT k1 FROM \(source(own.table, list)))") ?? 0
                        guard present == (list == .deleted ? 0 : own.table.count(list)) else {
                            throw ReseedError(.deltaMismatch, step: .applyDelta, path: targetPath, message:
                                "the delta does not fit this seed: table \(index.name), \(list.rawValue) rows: \(present) of the \(own.table.count(list)) it lists are rows of its content table \(index.content) after the delta")
                        }
                        listed += Int64(own.table.count(list))
                    }
                }
            }
            if !planned.isEmpty { try db.execute(sql: "DROP TABLE \(Self.rowids)") }
            return listed
        }

        /// Checks, before any row changes, that the index tables' deleted and updated lists name rows they have.
        private func checkListedBefore(_ checked: [(table: Header.Table, shape: TableShape)]) throws {
            for (table, _) in checked where follows(table.name) {
                for list in [Names.List.deleted, .updated] where table.count(list) > 0 {
                    let present = try Int.fetchOne(db, sql: "SELECT count(*) FROM main.\(table.name.quotedIdentifier) WHERE rowid IN (SELECT k1 FROM \(source(table, list)))") ?? 0
                    guard present == table.count(list) else {
                        throw ReseedError(.deltaMismatch, step: .applyDelta, path: targetPath, message:
                            "the delta does not fit this seed: table \(table.name), \(list.rawValue) rows: \(present) of the \(table.count(list)) it lists are rows of the seed")
                    }
                }
            }
        }

        /// Adds to the rowids of index `number` those of the content rows whose key `list` of the content table holds.
        private func addContentRowids(of index: Index, number: Int, _ content: (table: Header.Table, shape: TableShape), _ list: Names.List) throws {
            try db.execute(sql: """
                INSERT OR IGNORE INTO \(Self.rowids) (idx, r) SELECT ?, \(index.contentRowid.quotedIdentifier) FROM main.\(content.shape.name.quotedIdentifier)
                WHERE \(DeltaApplier.listed(content.shape, in: source(content.table, list)))
                """, arguments: [number])
        }

        /// At least the rows of the content table of `index`: the span of its rowids, two b-tree descents
        /// where counting would read every page; nil for a view, or a table without rowids.
        private func contentRows(of index: Index) throws -> Int? {
            guard try contentIsTable(index) else { return nil }
            do {
                // In REAL arithmetic: rowids from -2⁶³ to 2⁶³ - 1 span more than an INTEGER holds.
                let span = try Double.fetchOne(db, sql: "SELECT 1.0 * max(rowid) - min(rowid) + 1 FROM main.\(index.content.quotedIdentifier)") ?? 0
                return Int(min(span, 1e15))
            } catch let error as DatabaseError where error.resultCode == .SQLITE_ERROR {
                return nil
            }
        }

        private func contentIsTable(_ index: Index) throws -> Bool {
            try String.fetchOne(db, sql: "SELECT type FROM main.sqlite_schema WHERE name = ? COLLATE NOCASE", arguments: [index.content]) == "table"
        }

        private func source(_ table: Header.Table, _ list: Names.List) -> String {
            "\(Self.delta).\(Names.table(table.index, list).quotedIdentifier)"
        }
    }
}

extension VirtualTableDefinition {
    /// The value of option `name` (`content_rowid = 'id'`), unquoted; nil when the statement has none.
    func option(_ name: String) -> String? {
        for argument in arguments {
            let parts = argument.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            guard parts.count == 2, Self.unquoted(parts[0]).lowercased() == name else { continue }
            return Self.unquoted(parts[1])
        }
        return nil
    }
}
