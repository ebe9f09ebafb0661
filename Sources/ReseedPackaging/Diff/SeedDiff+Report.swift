import Foundation
import GRDB

extension SeedDiff {
    /// The diff as a plain-text report: both sides, the schema changes, a table of
    /// row counts per table, then the example rows of each table.
    ///
    /// The same diff always gives the same text. Lines start with `+` for added,
    /// `-` for removed and `~` for changed; SQL is shown with whitespace collapsed.
    ///
    /// ```swift
    /// print(try SeedDiff.compare(old: oldURL, new: newURL).renderText())
    /// // old: songs-1.0.sqlite (songs 1.0)
    /// // new: songs-1.1.sqlite (songs 1.1)
    /// //
    /// // Rows:
    /// //   table  key  added  removed  changed
    /// //   songs  id       2        0        1
    /// // …
    /// ```
    public func renderText() -> String {
        var lines = ["old: \(Self.describe(old))", "new: \(Self.describe(new))", ""]
        if isEmpty {
            lines.append("No differences.")
            if let referencedKeys { lines += [""] + Self.referencedKeyLines(referencedKeys) }
            if let delta { lines += [""] + delta.lines() }
            return lines.joined(separator: "\n") + "\n"
        }
        if !schema.isEmpty {
            lines.append("Schema: \(schema.count) \(schema.count == 1 ? "change" : "changes")")
            lines += schema.flatMap(Self.lines(for:))
            lines.append("")
        }
        if !tables.isEmpty {
            lines.append("Rows:")
            lines += Self.countTable(tables)
            for table in tables {
                lines.append("")
                lines += Self.exampleLines(for: table)
            }
        }
        if let referencedKeys {
            if lines.last != "" { lines.append("") }
            lines += Self.referencedKeyLines(referencedKeys)
        }
        if let delta {
            if lines.last != "" { lines.append("") }
            lines += delta.lines()
        }
        while lines.last == "" { lines.removeLast() }
        return lines.joined(separator: "\n") + "\n"
    }

    /// One line per reference: the keys the new seed no longer has, or `none`.
    ///
    /// ```
    /// Referenced keys removed:
    ///   incident.category_id->injury_category.id: 2 (7, 8)
    ///   incident.level_id->triage_level.id: none
    /// ```
    private static func referencedKeyLines(_ entries: [ReferencedKeys]) -> [String] {
        var lines = ["Referenced keys removed:"]
        for entry in entries {
            var line = "  \(entry.reference): "
            if entry.removed == 0 {
                line += "none"
            } else {
                let more = entry.removed > entry.keys.count ? ", … and \(entry.removed - entry.keys.count) more" : ""
                line += "\(entry.removed) (\(entry.keys.joined(separator: ", "))\(more))"
            }
            if let note = entry.note { line += " [\(note)]" }
            lines.append(line)
        }
        return lines
    }

    private static func describe(_ side: Side) -> String {
        switch (side.name, side.version) {
        case let (name?, version?): "\(side.path) (\(name) \(version))"
        case let (name?, nil): "\(side.path) (\(name))"
        case let (nil, version?): "\(side.path) (version \(version))"
        case (nil, nil): side.path
        }
    }

    private static func symbol(_ kind: SchemaChange.Kind) -> String {
        switch kind {
        case .added: "+"
        case .removed: "-"
        case .changed: "~"
        }
    }

    private static func lines(for change: SchemaChange) -> [String] {
        let type = change.type.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0)
        var line = "  \(symbol(change.kind)) \(type)"
        switch change.type {
        case .column: line += "\(change.table ?? "?").\(change.name)"
        case .index, .trigger: line += "\(change.name) on \(change.table ?? "?")"
        case .table, .view: line += change.name
        }
        if let detail = change.detail { line += ": \(detail)" }
        guard change.kind == .changed, change.type != .column else { return [line] }
        let indent = String(repeating: " ", count: 12)
        return [
            line,
            "\(indent)old: \(SchemaSnapshot.normalizedSQL(change.oldSQL) ?? "(none)")",
            "\(indent)new: \(SchemaSnapshot.normalizedSQL(change.newSQL) ?? "(none)")",
        ]
    }

    /// The counts as an aligned table: names to the left, numbers to the right.
    private static func countTable(_ tables: [TableChange]) -> [String] {
        let header = ["table", "key", "added", "removed", "changed"]
        let rows = tables.map { table -> [String] in
            let key = table.key.isEmpty ? "-" : table.key.joined(separator: ", ")
            guard table.rowsNotCompared == nil else { return [table.name, key, "-", "-", "-"] }
            return [table.name, key, String(table.added), String(table.removed), String(table.changed)]
        }
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        return ([header] + rows).map { cells in
            let padded = cells.enumerated().map { column, cell in
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                return column < 2 ? cell + padding : padding + cell
            }
            return "  " + padded.joined(separator: "  ").trimmingTrailingSpaces()
        }
    }

    private static func exampleLines(for table: TableChange) -> [String] {
        var lines = ["\(table.name) (key: \(table.key.isEmpty ? "none" : table.key.joined(separator: ", ")))"]
        if let reason = table.rowsNotCompared {
            lines.append("  rows not compared: \(reason)")
            return lines
        }
        func key(_ example: TableChange.RowExample) -> String {
            zip(table.key, example.key).map { "\($0)=\($1)" }.joined(separator: ", ")
        }
        func section(_ symbol: String, _ examples: [TableChange.RowExample], total: Int, word: String) {
            for example in examples {
                let changes = example.changes.map { "\($0.column) \($0.old) → \($0.new)" }
                lines.append("  \(symbol) \(key(example))" + (changes.isEmpty ? "" : ": " + changes.joined(separator: ", ")))
            }
            if total > examples.count { lines.append("    … and \(total - examples.count) more \(word)") }
        }
        section("+", table.addedExamples, total: table.added, word: "added")
        section("-", table.removedExamples, total: table.removed, word: "removed")
        section("~", table.changedExamples, total: table.changed, word: "changed")
        return lines
    }
}

// MARK: - Values as SQL literals

extension SeedDiff {
    /// Text longer than this many characters is cut in examples.
    static let textLimit = 200
    /// Blobs longer than this many bytes are cut in examples.
    static let blobLimit = 100

    /// A value as an SQL literal: `NULL`, `42`, `3.5`, `'it''s'`, `X'ABCD'`; long values are cut and sized.
    static func literal(_ value: DatabaseValue) -> String {
        switch value.storage {
        case .null:
            return "NULL"
        case .int64(let integer):
            return String(integer)
        case .double(let real):
            // SQLite has no infinity literal; it reads 9e999 as one.
            guard real.isFinite else { return real < 0 ? "-9e999" : "9e999" }
            return String(real)
        case .string(let text):
            guard text.count > textLimit else { return "'\(text.replacingOccurrences(of: "'", with: "''"))'" }
            let cut = String(text.prefix(textLimit)).replacingOccurrences(of: "'", with: "''")
            return "'\(cut)…' (\(text.utf8.count) bytes)"
        case .blob(let data):
            guard data.count > blobLimit else { return "X'\(hex(data))'" }
            return "X'\(hex(data.prefix(blobLimit)))…' (\(data.count) bytes)"
        }
    }

    /// A stored value as an SQL literal, as ``literal(_:)-(DatabaseValue)`` writes it; text that is
    /// not valid UTF-8 or holds a NUL is written as `CAST(X'…' AS TEXT)`, which SQLite reads back
    /// as those very bytes.
    static func literal(_ value: StoredValue) -> String {
        switch value {
        case .null: return literal(DatabaseValue.null)
        case .integer(let integer): return literal(integer.databaseValue)
        case .real(let real): return literal(real.databaseValue)
        case .blob(let bytes): return literal(Data(bytes).databaseValue)
        case .text(let bytes):
            if !bytes.contains(0), let text = String(validating: bytes, as: UTF8.self) { return literal(text.databaseValue) }
            guard bytes.count > blobLimit else { return "CAST(X'\(hex(bytes))' AS TEXT)" }
            return "CAST(X'\(hex(bytes.prefix(blobLimit)))…' AS TEXT) (\(bytes.count) bytes)"
        }
    }

    private static func hex(_ bytes: some Collection<UInt8>) -> String {
        let digits = Array("0123456789ABCDEF")
        var result = ""
        result.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            result.append(digits[Int(byte >> 4)])
            result.append(digits[Int(byte & 0x0F)])
        }
        return result
    }
}

private extension String {
    func trimmingTrailingSpaces() -> String {
        var result = self
        while result.last == " " { result.removeLast() }
        return result
    }
}
