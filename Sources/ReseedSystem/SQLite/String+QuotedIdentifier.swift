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
