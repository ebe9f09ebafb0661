import Foundation
import GRDB
import GRDBSQLite
import ReseedSystem

/// Compares the rows of the tables two databases share, one table at a time.
///
/// Each table is read from both databases in key order, and the two cursors
/// advance like a merge join: memory holds two rows and the examples, never a table.
/// A rowid table whose key does not identify its rows (none, or one holding NULL) is matched by
/// content instead, as a row-level delta matches it (see `compareByContent`): memory
/// then holds 24 bytes per row of that table.
struct TableComparison {
    /// How a table's rows are matched and which values are compared.
    struct Plan {
        /// The key's names as reported: column names, or one rowid alias.
        var keyNames: [String]
        var oldKey: [String]
        var newKey: [String]
        /// The non-key columns present in both databases, in the new column order.
        var columns: [String]
        /// A rowid alias that orders rows with equal keys; only rowid tables can hold those.
        var oldTieBreak: String?
        var newTieBreak: String?
    }

    var old: SchemaSnapshot
    var new: SchemaSnapshot
    var oldPath: String
    var newPath: String
    var exampleLimit: Int

    /// The tables present in both databases whose rows differ, or cannot be compared, sorted by name.
    func run(old oldDB: Database, new newDB: Database) throws -> [SeedDiff.TableChange] {
        let order = ValueOrder(oldEncoding: old.encoding, newEncoding: new.encoding)
        var changes: [SeedDiff.TableChange] = []
        for name in new.tables.keys.sorted() {
            guard let newTable = new.tables[name], let oldTable = old.tables[name] else { continue }
            let name = newTable.name
            // An FTS or R-tree table is compared through its module; another module's rows live in
            // its shadow tables, which are compared as tables.
            guard oldTable.isVirtual == oldTable.readsThroughModule, newTable.isVirtual == newTable.readsThroughModule else { continue }
            let change: SeedDiff.TableChange
            switch Self.plan(old: oldTable, new: newTable) {
            case .success(let plan):
                if let rowids = try Self.rowidsMatchedByContent(old: oldTable, new: newTable, plan: plan, oldDB, newDB) {
                    change = try compareByContent(of: name, plan: plan, rowids: rowids, order: order, old: oldDB, new: newDB)
                } else {
                    change = try compareRows(of: name, plan: plan, order: order, old: oldDB, new: newDB)
                }
            case .failure(let reason):
                change = SeedDiff.TableChange(
                    name: name, key: [], added: 0, removed: 0, changed: 0,
                    addedExamples: [], removedExamples: [], changedExamples: [], rowsNotCompared: reason.message)
            }
            if change.added > 0 || change.removed > 0 || change.changed > 0 || change.rowsNotCompared != nil {
                changes.append(change)
            }
        }
        return changes
    }

    struct NotComparable: Error {
        var message: String
    }

    /// Picks the key: the new primary key, else the old one, when its columns exist on both sides; else the rowid.
    static func plan(old: SchemaSnapshot.Table, new: SchemaSnapshot.Table) -> Result<Plan, NotComparable> {
        // Names as SQLite compares them: a column whose name changed case is the same column.
        let oldColumns = Set(old.columns.filter { $0.hidden == 0 }.map(\.name.sqlFolded))
        let newColumns = Set(new.columns.filter { $0.hidden == 0 }.map(\.name.sqlFolded))
        func common(excluding key: Set<String>) -> [String] {
            let key = Set(key.map(\.sqlFolded))
            return new.columns.map(\.name).filter { oldColumns.contains($0.sqlFolded) && newColumns.contains($0.sqlFolded) && !key.contains($0.sqlFolded) }
        }
        func tieBreak(_ table: SchemaSnapshot.Table, key: [String]) -> String? {
            table.primaryKey == key && table.primaryKeyIsRowidAlias ? nil : table.rowidAlias
        }

        for key in [new.primaryKey, old.primaryKey] where !key.isEmpty {
            guard key.allSatisfy({ oldColumns.contains($0.sqlFolded) && newColumns.contains($0.sqlFolded) }) else { continue }
            let quoted = key.map(\.quotedIdentifier)
            return .success(Plan(
                keyNames: key, oldKey: quoted, newKey: quoted,
                columns: common(excluding: Set(key)),
                oldTieBreak: tieBreak(old, key: key), newTieBreak: tieBreak(new, key: key)))
        }
        if let oldAlias = old.rowidAlias, let newAlias = new.rowidAlias {
            return .success(Plan(
                keyNames: [newAlias], oldKey: [oldAlias], newKey: [newAlias],
                columns: common(excluding: []), oldTieBreak: nil, newTieBreak: nil))
        }
        func describe(_ key: [String]) -> String { key.isEmpty ? "none" : "(\(key.joined(separator: ", ")))" }
        if old.hasRowid && new.hasRowid {
            return .failure(NotComparable(message: "columns named rowid, _rowid_ and oid hide the rowid"))
        }
        return .failure(NotComparable(message:
            "the primary key changed from \(describe(old.primaryKey)) to \(describe(new.primaryKey)) and the rowid cannot stand in"))
    }

    private func compareRows(
        of table: String, plan: Plan, order: ValueOrder, old oldDB: Database, new newDB: Database
    ) throws -> SeedDiff.TableChange {
        let keyCount = plan.keyNames.count
        var oldRows = try OrderedRows(
            oldDB, path: oldPath, table: table, key: plan.oldKey, columns: plan.columns,
            tieBreak: plan.oldTieBreak, order: order)
        var newRows = try OrderedRows(
            newDB, path: newPath, table: table, key: plan.newKey, columns: plan.columns,
            tieBreak: plan.newTieBreak, order: order)
        var change = SeedDiff.TableChange(
            name: table, key: plan.keyNames, added: 0, removed: 0, changed: 0,
            addedExamples: [], removedExamples: [], changedExamples: [], rowsNotCompared: nil)

        func keyExample(_ row: [StoredValue]) -> SeedDiff.TableChange.RowExample {
            .init(key: row[..<keyCount].map(SeedDiff.literal), changes: [])
        }

        var oldRow = try oldRows.next()
        var newRow = try newRows.next()
        while true {
            switch (oldRow, newRow) {
            case (nil, nil):
                return change
            case let (removed?, nil):
                change.removed += 1
                if change.removedExamples.count < exampleLimit { change.removedExamples.append(keyExample(removed)) }
                oldRow = try oldRows.next()
            case let (nil, added?):
                change.added += 1
                if change.addedExamples.count < exampleLimit { change.addedExamples.append(keyExample(added)) }
                newRow = try newRows.next()
            case let (before?, after?):
                let comparison = order.compare(before[..<keyCount], after[..<keyCount])
                if comparison < 0 {
                    change.removed += 1
                    if change.removedExamples.count < exampleLimit { change.removedExamples.append(keyExample(before)) }
                    oldRow = try oldRows.next()
                } else if comparison > 0 {
                    change.added += 1
                    if change.addedExamples.count < exampleLimit { change.addedExamples.append(keyExample(after)) }
                    newRow = try newRows.next()
                } else {
                    let columns = keyCount..<before.count
                    if columns.contains(where: { order.compare(before[$0], after[$0]) != 0 }) {
                        change.changed += 1
                        if change.changedExamples.count < exampleLimit {
                            let differing = columns.filter { order.compare(before[$0], after[$0]) != 0 }
                            let values = differing.map {
                                SeedDiff.TableChange.ValueChange(
                                    column: plan.columns[$0 - keyCount],
                                    old: SeedDiff.literal(before[$0]), new: SeedDiff.literal(after[$0]))
                            }
                            change.changedExamples.append(.init(key: keyExample(after).key, changes: values))
                        }
                    }
                    oldRow = try oldRows.next()
                    newRow = try newRows.next()
                }
            }
        }
    }
}

/// One side of the merge: a table's rows, key values first, checked to arrive in ``ValueOrder``.
private struct OrderedRows {
    private let statement: Statement
    private let cursor: RowCursor
    private let keyCount: Int
    private let order: ValueOrder
    private let path: String
    private let table: String
    private var previousKey: [StoredValue]?

    init(
        _ db: Database, path: String, table: String, key: [String], columns: [String],
        tieBreak: String?, order: ValueOrder
    ) throws {
        let selected = (key + columns.map(\.quotedIdentifier)).joined(separator: ", ")
        // BINARY, whatever the declared collation, because that is the order ValueOrder reproduces.
        let ordering = (key.map { "\($0) COLLATE BINARY" } + (tieBreak.map { [$0] } ?? [])).joined(separator: ", ")
        let sql = "SELECT \(selected) FROM main.\(table.quotedIdentifier) ORDER BY \(ordering)"
        self.statement = try SeedDiff.Failure.attributing(to: path) { try db.makeStatement(sql: sql) }
        self.cursor = try SeedDiff.Failure.attributing(to: path) { [statement] in try Row.fetchCursor(statement) }
        self.keyCount = key.count
        self.order = order
        self.path = path
        self.table = table
    }

    /// The next row's values, or nil at the end.
    ///
    /// Throws when the rows break the expected order, which happens only if the two
    /// databases store text in different encodings: a merge would then report false changes.
    mutating func next() throws -> [StoredValue]? {
        let cursor = self.cursor
        guard try SeedDiff.Failure.attributing(to: path, { try cursor.next() }) != nil else { return nil }
        // Read from the statement: GRDB's `String` of a text value stops at an embedded NUL.
        let values = StoredValue.values(ofRowAt: statement.sqliteStatement)
        let key = Array(values[..<keyCount])
        if let previousKey, order.compare(previousKey[...], key[...]) > 0 {
            throw SeedDiff.Failure.make(
                path: path,
                message: "rows of table \(table) do not come in binary key order; do the two databases use different text encodings?")
        }
        previousKey = key
        return values
    }
}

/// Orders values as SQLite does with the BINARY collation: NULL, then numbers, then text, then blobs.
struct ValueOrder {
    /// How text compares: byte by byte in the database's encoding, as `memcmp` does.
    enum TextBytes {
        case utf8, utf16LittleEndian, utf16BigEndian
    }

    var text: TextBytes

    /// Text keys can be merged only if both sides sort them alike, hence the same encoding; UTF-8 otherwise.
    init(oldEncoding: String, newEncoding: String) {
        switch oldEncoding == newEncoding ? newEncoding.uppercased() : "UTF-8" {
        case "UTF-16LE": text = .utf16LittleEndian
        case "UTF-16BE": text = .utf16BigEndian
        default: text = .utf8
        }
    }

    /// Compares keys column by column: negative, zero or positive.
    func compare(_ a: ArraySlice<StoredValue>, _ b: ArraySlice<StoredValue>) -> Int {
        for (x, y) in zip(a, b) {
            let result = compare(x, y)
            if result != 0 { return result }
        }
        return a.count - b.count
    }

    /// Compares two values: zero means equal for SQLite, so 1 equals 1.0 but not '1'; text is
    /// compared by its bytes, an embedded NUL and what follows it included.
    func compare(_ a: StoredValue, _ b: StoredValue) -> Int {
        switch (a, b) {
        case (.null, .null): return 0
        case let (.integer(x), .integer(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.real(x), .real(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.integer(x), .real(y)): return Self.compare(x, y)
        case let (.real(x), .integer(y)): return -Self.compare(y, x)
        case let (.text(x), .text(y)):
            switch text {
            case .utf8: return Self.compare(x, y)
            case .utf16BigEndian: return Self.compare(String(decoding: x, as: UTF8.self).utf16, String(decoding: y, as: UTF8.self).utf16)
            case .utf16LittleEndian:
                return Self.compare(String(decoding: x, as: UTF8.self).utf16.lazy.map(\.byteSwapped),
                                    String(decoding: y, as: UTF8.self).utf16.lazy.map(\.byteSwapped))
            }
        case let (.blob(x), .blob(y)): return Self.compare(x, y)
        default: return a.rank - b.rank
        }
    }

    /// Compares an integer and a real exactly, without rounding the integer to a Double.
    private static func compare(_ integer: Int64, _ real: Double) -> Int {
        guard !real.isNaN else { return 1 }  // SQLite stores NaN as NULL; this only keeps Int64(_:) from trapping
        if real < -9_223_372_036_854_775_808.0 { return 1 }
        if real >= 9_223_372_036_854_775_808.0 { return -1 }
        let truncated = real.rounded(.towardZero)
        let whole = Int64(truncated)
        if integer != whole { return integer < whole ? -1 : 1 }
        return real > truncated ? -1 : (real < truncated ? 1 : 0)
    }

    private static func compare<A: Sequence, B: Sequence>(_ a: A, _ b: B) -> Int
    where A.Element == B.Element, A.Element: Comparable {
        var left = a.makeIterator()
        var right = b.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case let (x?, y?): if x != y { return x < y ? -1 : 1 }
            }
        }
    }
}

extension StoredValue {
    /// The values of the row `statement` is on, in its column order.
    static func values(ofRowAt statement: OpaquePointer) -> [StoredValue] {
        (0..<sqlite3_column_count(statement)).map { StoredValue(statement, column: $0) }
    }

    /// NULL, then numbers, then text, then blobs.
    var rank: Int {
        switch self {
        case .null: 0
        case .integer, .real: 1
        case .text: 2
        case .blob: 3
        }
    }
}
