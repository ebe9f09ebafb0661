extension String {
    /// The name as a SQL identifier: in double quotes, each embedded double quote doubled
    /// (`col "q"` → `"col ""q"""`), so any name (quotes, spaces, keywords, non-ASCII) reaches its object.
    ///
    /// GRDB's `quotedIdentifier` does not double embedded quotes; Reseed meets names it
    /// did not choose, so every name it writes into SQL goes through this one.
    package var quotedIdentifier: String {
        "\"" + replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

extension String {
    /// The name as SQLite compares identifiers: ASCII letters folded to lower case, every other
    /// character as it is (SQLite folds only ASCII in names: `Incident` is `incident`, `É` is not `é`).
    ///
    /// Every comparison of a table or column name Reseed makes goes through this one.
    package var sqlFolded: String {
        guard utf8.contains(where: { (0x41...0x5A).contains($0) }) else { return self }
        return String(decoding: utf8.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    /// Whether `self` and `other` name the same SQLite object.
    package func isSameSQLName(as other: String) -> Bool { sqlFolded == other.sqlFolded }
}
