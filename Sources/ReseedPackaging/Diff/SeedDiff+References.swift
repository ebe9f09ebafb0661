import Foundation
import GRDB
import Reseed
import ReseedSystem

extension SeedDiff {
    /// The keys of one referenced seed column that the old seed has and the new one does not:
    /// values that user rows may point to (see ``SeedReference``).
    ///
    /// ```swift
    /// // ReferencedKeys(reference: incident.category_id->injury_category.id, removed: 2, keys: ["7", "8"])
    /// ```
    public struct ReferencedKeys: Sendable, Codable, Equatable {
        /// The reference; encoded as its text, `table.column->seedTable.seedColumn`.
        public var reference: SeedReference
        /// How many distinct non-NULL values of the seed column the new seed no longer has.
        public var removed: Int
        /// The first of them in the old seed's order, as SQL literals (`7`, `'BURN'`), at most the limit asked for.
        public var keys: [String]
        /// Why every key counts as removed, when the new seed lacks the table or the column.
        public var note: String?

        private enum CodingKeys: String, CodingKey { case reference, removed, keys, note }

        public init(reference: SeedReference, removed: Int, keys: [String], note: String? = nil) {
            self.reference = reference
            self.removed = removed
            self.keys = keys
            self.note = note
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let text = try container.decode(String.self, forKey: .reference)
            reference = try SeedReference(parsing: text)
            removed = try container.decode(Int.self, forKey: .removed)
            keys = try container.decode([String].self, forKey: .keys)
            note = try container.decodeIfPresent(String.self, forKey: .note)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(reference.description, forKey: .reference)
            try container.encode(removed, forKey: .removed)
            try container.encode(keys, forKey: .keys)
            try container.encodeIfPresent(note, forKey: .note)
        }
    }

    /// The keys a release removes that user rows may point to: per reference, the distinct
    /// non-NULL values of `seedTable.seedColumn` in `old` that `new` does not have.
    ///
    /// Both files are opened read-only. The old values are read in order with a cursor and each
    /// is looked up in the new seed (`WHERE column = ?`, which a key's index answers), so memory
    /// stays flat however large the tables. A new seed without the table or the column removes
    /// every key, and ``ReferencedKeys/note`` says why.
    ///
    /// ```swift
    /// let removed = try SeedDiff.referencedKeys(old: v1, new: v2, references: [
    ///     SeedReference("incident.category_id", to: "injury_category.id")])
    /// for entry in removed where entry.removed > 0 { print(entry.reference, entry.keys) }
    /// ```
    ///
    /// - Parameters:
    ///   - keyLimit: How many keys to list per reference; the count stays exact beyond it.
    ///     Default 20; a negative value counts as 0.
    /// - Returns: One entry per reference, in the order given.
    /// - Throws: ``PackagingError`` (step ``PackagingError/Step/diff``) when a file cannot be opened as a database,
    ///   ``PackagingError/Code/unknownTable`` or ``PackagingError/Code/unknownColumn`` naming the
    ///   old seed and the reference when the old seed has no such table or column.
    public static func referencedKeys(old: URL, new: URL, references: [SeedReference], keyLimit: Int = 20) throws(PackagingError) -> [ReferencedKeys] {
        try packaging(.diff, path: old.path) {
            try readingBoth(old: old, new: new) { oldDB, newDB in
                try references.map { reference in
                    try removedKeys(reference, old: oldDB, oldPath: old.path, new: newDB, limit: max(0, keyLimit))
                }
            }
        }
    }

    private static func removedKeys(_ reference: SeedReference, old: Database, oldPath: String, new: Database, limit: Int) throws -> ReferencedKeys {
        let table = reference.seedTable, column = reference.seedColumn
        guard try old.tableExists(table) else {
            throw PackagingError(.unknownTable, step: .diff, path: oldPath, message: "reference '\(reference)': the old seed has no table '\(table)'")
        }
        guard try hasColumn(column, of: table, in: old) else {
            throw PackagingError(.unknownColumn, step: .diff, path: oldPath, message: "reference '\(reference)': the old seed's table '\(table)' has no column '\(column)'")
        }
        let note: String?
        if try !new.tableExists(table) {
            note = "the new seed has no table '\(table)'"
        } else if try !hasColumn(column, of: table, in: new) {
            note = "the new seed's table '\(table)' has no column '\(column)'"
        } else {
            note = nil
        }
        let quotedTable = table.quotedIdentifier, quotedColumn = column.quotedIdentifier
        let lookup = note == nil
            ? try new.makeStatement(sql: "SELECT 1 FROM \(quotedTable) WHERE \(quotedColumn) = ? LIMIT 1") : nil
        let values = try DatabaseValue.fetchCursor(old, sql: """
            SELECT DISTINCT \(quotedColumn) FROM \(quotedTable) WHERE \(quotedColumn) IS NOT NULL ORDER BY \(quotedColumn)
            """)
        var removed = 0
        var keys: [String] = []
        while let value = try values.next() {
            if let lookup, try Bool.fetchOne(lookup, arguments: [value]) != nil { continue }
            removed += 1
            if keys.count < limit { keys.append(literal(value)) }
        }
        return ReferencedKeys(reference: reference, removed: removed, keys: keys, note: note)
    }

    private static func hasColumn(_ column: String, of table: String, in db: Database) throws -> Bool {
        try db.columns(in: table).contains { $0.name.isSameSQLName(as: column) }
    }
}
