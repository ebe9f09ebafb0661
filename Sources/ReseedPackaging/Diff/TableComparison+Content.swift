import GRDB
import ReseedSystem

/// The rows of a rowid table whose key does not identify them, matched by content as a row-level
/// delta matches them (``RowAlignment``): a row that only moved to another rowid (an upstream insert
/// in the middle of the table) is no change, duplicates count, and rows left between two equal rows
/// are paired in order as changed rows. The rows are named by their rowids.
extension TableComparison {
    /// The names that reach each side's rowid when the table's rows are matched by content: a rowid
    /// table, not read through a module, whose plan falls back to the rowid or whose declared key (not
    /// an INTEGER PRIMARY KEY) holds NULL in either database; nil when they are matched by key.
    static func rowidsMatchedByContent(
        old: SchemaSnapshot.Table, new: SchemaSnapshot.Table, plan: Plan, _ oldDB: Database, _ newDB: Database
    ) throws -> (old: String, new: String)? {
        guard !old.isVirtual, !new.isVirtual, let oldRowid = old.rowidAlias, let newRowid = new.rowidAlias else { return nil }
        if plan.oldKey == [oldRowid], plan.newKey == [newRowid] { return (oldRowid, newRowid) }
        guard !old.primaryKeyIsRowidAlias || !new.primaryKeyIsRowidAlias else { return nil }
        let nullKey = plan.keyNames.map { "\($0.quotedIdentifier) IS NULL" }.joined(separator: " OR ")
        for (db, table) in [(oldDB, old), (newDB, new)] where !table.primaryKeyIsRowidAlias {
            let sql = "SELECT 1 FROM main.\(table.name.quotedIdentifier) WHERE \(nullKey) LIMIT 1"
            if try Bool.fetchOne(db, sql: sql) == true { return (oldRowid, newRowid) }
        }
        return nil
    }

    /// Compares the rows of `table` by content: added and removed rows are those left unpaired,
    /// changed rows the pairs whose compared values differ.
    func compareByContent(
        of table: String, plan: Plan, rowids: (old: String, new: String), order: ValueOrder, old oldDB: Database, new newDB: Database
    ) throws -> SeedDiff.TableChange {
        // Every compared column, the declared key's too: here the key is content like the rest.
        let columns = (plan.oldKey == [rowids.old] ? [] : plan.keyNames) + plan.columns
        let quoted = "main." + table.quotedIdentifier
        let old = try SeedDiff.Failure.attributing(to: oldPath) { try RowAlignment.rows(of: quoted, rowid: rowids.old, columns: columns, oldDB) }
        let new = try SeedDiff.Failure.attributing(to: newPath) { try RowAlignment.rows(of: quoted, rowid: rowids.new, columns: columns, newDB) }
        let pairs = RowAlignment.pairs(old: old.digests, new: new.digests)

        var pairedOld = [Bool](repeating: false, count: old.rowids.count)
        var pairedNew = [Bool](repeating: false, count: new.rowids.count)
        for pair in pairs { (pairedOld[pair.old], pairedNew[pair.new]) = (true, true) }
        let removed = old.rowids.indices.filter { !pairedOld[$0] }.map { old.rowids[$0] }
        let added = new.rowids.indices.filter { !pairedNew[$0] }.map { new.rowids[$0] }
        let changed = pairs.filter { !$0.same }

        func example(_ rowid: Int64) -> SeedDiff.TableChange.RowExample {
            .init(key: [SeedDiff.literal(.integer(rowid))], changes: [])
        }
        var changedExamples: [SeedDiff.TableChange.RowExample] = []
        let selected = columns.map(\.quotedIdentifier).joined(separator: ", ")
        for pair in changed.prefix(exampleLimit) {
            let (oldRowid, newRowid) = (old.rowids[pair.old], new.rowids[pair.new])
            let before = try SeedDiff.Failure.attributing(to: oldPath) { try Self.storedValues(oldDB, "SELECT \(selected) FROM \(quoted) WHERE \(rowids.old) = \(oldRowid)") }
            let after = try Self.storedValues(newDB, "SELECT \(selected) FROM \(quoted) WHERE \(rowids.new) = \(newRowid)")
            guard let before, let after else { continue }
            let values = zip(columns, zip(before, after)).compactMap { column, pair in
                order.compare(pair.0, pair.1) == 0 ? nil
                    : SeedDiff.TableChange.ValueChange(column: column, old: SeedDiff.literal(pair.0), new: SeedDiff.literal(pair.1))
            }
            changedExamples.append(.init(key: example(newRowid).key, changes: values))
        }
        return SeedDiff.TableChange(
            name: table, key: [rowids.new], added: added.count, removed: removed.count, changed: changed.count,
            addedExamples: added.prefix(exampleLimit).map(example), removedExamples: removed.prefix(exampleLimit).map(example),
            changedExamples: changedExamples, rowsNotCompared: nil)
    }

    /// The values of the first row `sql` selects, read as SQLite stores them; nil for none.
    private static func storedValues(_ db: Database, _ sql: String) throws -> [StoredValue]? {
        var values: [StoredValue]?
        try forEachRow(db, sql) { statement in
            values = StoredValue.values(ofRowAt: statement)
            return false
        }
        return values
    }
}
