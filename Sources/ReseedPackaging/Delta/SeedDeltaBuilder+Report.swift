import Reseed
import Foundation

extension SeedDeltaBuilder.TableCounts {
    /// What a delta carries for a table.
    public enum Carries: String, Sendable, Equatable, Codable {
        /// Its deleted keys, updated values and inserted rows.
        case rows
        /// The table's `CREATE` statement and all its rows (``SeedDeltaBuilder/TableCounts/inserted``).
        case wholeTable
        /// Only its drop.
        case drop
    }

    /// Why a delta carries what it does for a table.
    public enum Reason: String, Sendable, Equatable, Codable {
        /// Rows changed; the definition did not.
        case rowsChanged
        /// The table is only in the new seed.
        case added
        /// Its `CREATE` statement changed.
        case definitionChanged
        /// An FTS table whose content table is shipped whole or dropped: changed row by row, its index
        /// would lose the wrong terms.
        case contentTableReplaced
        /// The table is only in the old seed.
        case dropped
        /// Its rows cannot be changed row by row: a key holding NULL with columns that hide the rowid, or
        /// changes SQLite refuses in the order a delta applies them.
        case rowsNotMatchable
        /// Its `CREATE` statement changed and its columns did not: rebuilt with its rows kept, and
        /// changed row by row (format 4).
        case definitionChangedRowsKept

        /// As the report says it: `added`, `definition changed`, `its content table is shipped whole`.
        var phrase: String {
            switch self {
            case .rowsChanged: "rows changed"
            case .added: "added"
            case .definitionChanged: "definition changed"
            case .contentTableReplaced: "its content table is shipped whole"
            case .dropped: "dropped"
            case .rowsNotMatchable: "its rows cannot be changed row by row"
            case .definitionChangedRowsKept: "definition changed, rows kept"
            }
        }
    }

    /// `item: 6 deleted, 10 updated, 2 inserted`, `genre: whole table, 12 rows (added)`, `legacy: dropped`.
    var line: String {
        switch carries {
        case .rows: "\(name): \(deleted) deleted, \(updated) updated, \(inserted) inserted" + (moved > 0 ? ", \(moved) moved" : "")
            + (reason == .definitionChangedRowsKept ? " (\(reason.phrase))" : "")
        case .wholeTable: "\(name): whole table, \(inserted) row\(inserted == 1 ? "" : "s") (\(reason.phrase))"
        case .drop: "\(name): dropped"
        }
    }
}

extension SeedDeltaBuilder {
    /// An index, view or trigger a format-2 delta drops or creates.
    public struct SchemaObjectChange: Sendable, Equatable, Codable {
        /// What happens to it.
        public enum Change: String, Sendable, Equatable, Codable {
            /// Only in the new seed: created.
            case added
            /// Only in the old seed: dropped.
            case dropped
            /// Its `CREATE` statement changed: dropped, then created.
            case replaced
            /// Unchanged, but its table is shipped whole or rebuilt: created again with it.
            case recreated
        }

        /// `index`, `view` or `trigger`.
        public var type: String
        public var name: String
        public var change: Change

        public init(type: String, name: String, change: Change) {
            self.type = type
            self.name = name
            self.change = change
        }

        /// `index song_year: added`.
        var line: String {
            "\(type) \(name): " + (change == .recreated ? "recreated (with its table)" : change.rawValue)
        }
    }

    /// What a delta's format says beside its size: `, with schema changes (format 2)`, `, with rows
    /// matched by content (format 3)`, both for a format-3 delta that also changes the schema, or
    /// nothing for format 1; without `(format N)` when not `numbered`.
    public static func formatLabel(format: Int?, tables: [TableCounts], schemaObjects: [SchemaObjectChange], numbered: Bool = true) -> String {
        guard let format, format >= SeedDelta.Format.schema.rawValue else { return "" }
        let schema = format == SeedDelta.Format.schema.rawValue || !schemaObjects.isEmpty
            || tables.contains { [.added, .definitionChanged, .definitionChangedRowsKept, .dropped].contains($0.reason) }
        let byContent = format == SeedDelta.Format.rowids.rawValue || (format == SeedDelta.Format.rebuild.rawValue && tables.contains { $0.moved > 0 })
        let parts = (schema ? ["schema changes"] : []) + (byContent ? ["rows matched by content"] : [])
        return ", with " + parts.joined(separator: " and ") + (numbered ? " (format \(format))" : "")
    }

    /// The lines that say what a delta carries, per table then per schema object, each indented by `indent`.
    ///
    /// ```
    ///   item: 6 deleted, 10 updated, 2 inserted
    ///   genre: whole table, 12 rows (added)
    ///   trigger item_touched: replaced
    /// ```
    public static func contentLines(tables: [TableCounts], schemaObjects: [SchemaObjectChange], indent: String = "  ") -> [String] {
        guard !tables.isEmpty || !schemaObjects.isEmpty else { return [indent + "no rows change"] }
        return tables.map { indent + $0.line } + schemaObjects.map { indent + $0.line }
    }
}
