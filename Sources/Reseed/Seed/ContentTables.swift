import Foundation
import GRDB
import ReseedSystem

/// The tables of a database whose rows are its content, as the content hash, `reseed diff` and
/// row-level deltas read them, and the shadow tables that are only a virtual table's index layout.
///
/// A full-text (FTS3, FTS4, FTS5) or R-tree table is read through its module: its rowid and
/// declared columns, as a query sees them. Its shadow tables (`doc_data`, `doc_idx`, `place_node`, …)
/// hold an index whose layout depends on how and in which order the rows were written, so they
/// are left out: two seeds with the same rows hash the same however their index was built, and a
/// delta changes such a table through its module, which keeps the index consistent.
///
/// A contentless FTS table (`content=''`) has no rows to read back: its index is all there is,
/// so its shadow tables are content, row for row, as are those of a module Reseed does not know.
package struct ContentTables: Sendable {
    /// What a table of ``tables`` is.
    package enum Kind: Sendable, Equatable {
        /// An ordinary table, or a shadow table whose rows are content (see the type's summary).
        case stored
        /// A virtual table read through its module; ``Table/contentTable`` names the table an
        /// external-content FTS table reads its text from.
        case virtual
    }

    /// A table whose rows are content.
    package struct Table: Sendable, Equatable {
        package var name: String
        package var kind: Kind
        package var withoutRowid: Bool
        /// For an external-content FTS table (`content='article'`), the table it reads its text from.
        var contentTable: String?
    }

    /// The tables whose rows are content, virtual tables first (a delta changes an external-content
    /// FTS table while its content table still holds the old text), each group sorted by the UTF-8
    /// bytes of the names. SQLite's own tables (`sqlite_*`) are not among them.
    package var tables: [Table]
    /// The shadow tables left out because their rows are a virtual table's index layout, lowercased.
    package var layout: Set<String>

    /// Whether a virtual table is read through its module: then the content hash is version 2.
    var readsVirtualTables: Bool { tables.contains { $0.kind == .virtual } }

    /// The modules whose tables are read through the module: they are compiled into the SQLite
    /// Reseed runs on, and their rows are the table's content.
    static let readModules: Set<String> = ["fts3", "fts4", "fts5", "rtree", "rtree_i32"]

    /// Reads the tables of database `schemaName` of `db`.
    ///
    /// - Throws: the `DatabaseError` of reading the schema.
    package static func read(in schemaName: String = "main", _ db: Database) throws -> ContentTables {
        let quoted = schemaName.quotedIdentifier
        var definitions: [String: String] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT name, sql FROM \(quoted).sqlite_schema WHERE type = 'table' AND sql IS NOT NULL") {
            if let name: String = row["name"], let sql: String = row["sql"] { definitions[name.lowercased()] = sql }
        }
        var listed: [(name: String, type: String, withoutRowid: Bool)] = []
        for row in try Row.fetchAll(db, sql: "PRAGMA \(quoted).table_list") {
            let name: String = row["name"] ?? ""
            guard !name.lowercased().hasPrefix("sqlite_") else { continue }
            listed.append((name, row["type"] ?? "", row["wr"] ?? false))
        }
        var virtual: [Table] = []
        // Lowercased names of the virtual tables whose shadow tables are index layout.
        var readThroughModule: [String] = []
        for entry in listed where entry.type == "virtual" {
            guard let definition = definitions[entry.name.lowercased()].flatMap(VirtualTableDefinition.init),
                  readModules.contains(definition.module), !definition.isContentless else { continue }
            virtual.append(Table(name: entry.name, kind: .virtual, withoutRowid: false, contentTable: definition.externalContent))
            readThroughModule.append(entry.name.lowercased())
        }
        var stored: [Table] = []
        var layout: Set<String> = []
        for entry in listed where entry.type == "table" || entry.type == "shadow" {
            let lowered = entry.name.lowercased()
            if entry.type == "shadow", readThroughModule.contains(where: { lowered.hasPrefix($0 + "_") }) {
                layout.insert(lowered)
                continue
            }
            stored.append(Table(name: entry.name, kind: .stored, withoutRowid: entry.withoutRowid, contentTable: nil))
        }
        func byName(_ a: Table, _ b: Table) -> Bool { a.name.utf8.lexicographicallyPrecedes(b.name.utf8) }
        return ContentTables(tables: virtual.sorted(by: byName) + stored.sorted(by: byName), layout: layout)
    }
}

/// What `CREATE VIRTUAL TABLE name USING module(arguments)` says: the module, and for FTS4/FTS5
/// the `content` option (empty: contentless; a name: external content).
struct VirtualTableDefinition: Equatable {
    /// The module name, lowercased.
    var module: String
    /// The module's arguments as written, split at the commas outside quotes and parentheses.
    var arguments: [String]

    init?(_ sql: String) {
        let scalars = Array(sql.unicodeScalars)
        // `USING` is the first word outside quotes after `CREATE VIRTUAL TABLE name`.
        let (words, open) = Self.split(scalars[...], at: " ", keepingEmpty: false, stopAt: "(")
        guard let using = words.firstIndex(where: { $0.uppercased() == "USING" }), using + 1 < words.count else { return nil }
        module = Self.unquoted(words[using + 1].trimmingCharacters(in: .whitespacesAndNewlines)).lowercased()
        if let open, let close = scalars.lastIndex(of: ")"), open < close {
            arguments = Self.split(scalars[(open + 1)..<close], at: ",", keepingEmpty: true, stopAt: nil).parts
                .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        } else {
            arguments = []
        }
    }

    /// The value of the `content` option, unquoted; nil when there is none.
    var content: String? {
        guard module == "fts4" || module == "fts5" else { return nil }
        for argument in arguments {
            let parts = argument.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            guard parts.count == 2, Self.unquoted(parts[0]).lowercased() == "content" else { continue }
            return Self.unquoted(parts[1])
        }
        return nil
    }

    /// `content=''`: the table keeps no copy of its text, only its index.
    var isContentless: Bool { content?.isEmpty == true }

    /// The table an external-content FTS table reads its text from.
    var externalContent: String? { content.flatMap { $0.isEmpty ? nil : $0 } }

    /// `'a''b'` → `a'b`; also `"…"`, `` `…` `` and `[…]`; other text as it is.
    static func unquoted(_ text: String) -> String {
        guard let first = text.first, let last = text.last, text.count >= 2 else { return text }
        switch (first, last) {
        case ("'", "'"), ("\"", "\""), ("`", "`"):
            return String(text.dropFirst().dropLast()).replacingOccurrences(of: "\(first)\(first)", with: "\(first)")
        case ("[", "]"):
            return String(text.dropFirst().dropLast())
        default:
            return text
        }
    }

    /// Splits at `separator` outside quotes and parentheses; stops at an unquoted `stopAt` at
    /// depth 0, and says where (nil when it never came).
    private static func split(
        _ scalars: ArraySlice<Unicode.Scalar>, at separator: Unicode.Scalar, keepingEmpty: Bool, stopAt: Unicode.Scalar?
    ) -> (parts: [String], stoppedAt: Int?) {
        var parts: [String] = []
        var current = String.UnicodeScalarView()
        var quote: Unicode.Scalar?
        var depth = 0
        func finish() {
            let part = String(current)
            if keepingEmpty || !part.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { parts.append(part) }
            current = String.UnicodeScalarView()
        }
        for (index, scalar) in zip(scalars.indices, scalars) {
            if let open = quote {
                current.append(scalar)
                // A doubled quote closes and reopens: the same text either way.
                if scalar == (open == "[" ? "]" : open) { quote = nil }
                continue
            }
            switch scalar {
            case "'", "\"", "`", "[":
                quote = scalar
                current.append(scalar)
            case "(":
                if depth == 0, scalar == stopAt { finish(); return (parts, index) }
                depth += 1
                current.append(scalar)
            case ")":
                depth -= 1
                current.append(scalar)
            case separator where depth == 0,
                 _ where separator == " " && depth == 0 && (scalar == "\n" || scalar == "\t" || scalar == "\r"):
                finish()
            default:
                current.append(scalar)
            }
        }
        finish()
        return (parts, nil)
    }
}
