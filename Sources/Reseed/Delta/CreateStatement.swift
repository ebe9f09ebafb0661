import Foundation

/// The strict check of a format-2 delta's `CREATE` statement before SQLite sees it: the words that
/// start it must say exactly what the entry claims (the kind, the name, for a virtual table a module
/// Reseed reads), with no comment, `TEMP`, `IF NOT EXISTS` or schema name among them.
///
/// It reads only the statement's head; that the statement created exactly that object, and
/// nothing else, is proved afterwards against `sqlite_schema`.
enum CreateStatement {
    struct Refused: Error, Equatable {
        var reason: String
    }

    /// The words the statement must start with: `CREATE TABLE`, `CREATE VIRTUAL TABLE`, `CREATE INDEX`
    /// or `CREATE UNIQUE INDEX`, `CREATE VIEW`, `CREATE TRIGGER`, then the name.
    ///
    /// - Returns: the module of a virtual table (lowercased), nil for any other object.
    static func check(_ sql: String, kind: SeedDelta.SchemaChange.Kind, name: String) -> Result<String?, Refused> {
        let tokens = head(sql, count: 7)
        func word(_ index: Int) -> String? {
            guard index < tokens.count, case .word(let text) = tokens[index] else { return nil }
            return text.uppercased()
        }
        guard word(0) == "CREATE" else { return .failure(Refused(reason: "it does not start with CREATE")) }
        var next = 1
        var isVirtual = false
        switch kind {
        case .table:
            if word(1) == "VIRTUAL" { isVirtual = true; next = 2 }
            guard word(next) == "TABLE" else { return .failure(Refused(reason: "it is not CREATE TABLE or CREATE VIRTUAL TABLE")) }
        case .index:
            if word(1) == "UNIQUE" { next = 2 }
            guard word(next) == "INDEX" else { return .failure(Refused(reason: "it is not CREATE INDEX")) }
        case .view:
            guard word(1) == "VIEW" else { return .failure(Refused(reason: "it is not CREATE VIEW")) }
        case .trigger:
            guard word(1) == "TRIGGER" else { return .failure(Refused(reason: "it is not CREATE TRIGGER")) }
        }
        next += 1
        guard next < tokens.count, let named = tokens[next].identifier, named == name,
              word(next) != "IF", word(next) != "TEMP", word(next) != "TEMPORARY" else {
            return .failure(Refused(reason: "it does not name \(name) right after its kind"))
        }
        guard next + 1 < tokens.count else { return .failure(Refused(reason: "it ends after its name")) }
        if case .other(".") = tokens[next + 1] { return .failure(Refused(reason: "it names a schema")) }
        guard isVirtual else { return .success(nil) }
        guard word(next + 1) == "USING", next + 2 < tokens.count, let module = tokens[next + 2].identifier?.lowercased() else {
            return .failure(Refused(reason: "it names no module after USING"))
        }
        guard ContentTables.readModules.contains(module) else {
            return .failure(Refused(reason: "its module \(module) is not FTS3, FTS4, FTS5 or R-tree"))
        }
        if let definition = VirtualTableDefinition(sql), definition.module == module, !definition.isContentless {
            return .success(module)
        }
        return .failure(Refused(reason: "a contentless full-text table (content='') is created only with its index, which a delta does not carry"))
    }

    enum Token: Equatable {
        /// A bare word: a keyword or an unquoted identifier.
        case word(String)
        /// A quoted identifier, unquoted.
        case quoted(String)
        /// Any other character; a comment or a string literal is `.other` too, and stops the head.
        case other(String)

        var identifier: String? {
            switch self {
            case .word(let text), .quoted(let text): text
            case .other: nil
            }
        }
    }

    /// The first `count` tokens of `sql`; it stops at a comment or a string literal (an `.other` token).
    static func head(_ sql: String, count: Int) -> [Token] {
        let scalars = Array(sql.unicodeScalars.prefix(8192))
        var tokens: [Token] = []
        var index = 0
        func isWordScalar(_ scalar: Unicode.Scalar) -> Bool {
            scalar.value >= 0x80 || scalar == "_" || scalar == "$" || CharacterSet.alphanumerics.contains(scalar)
        }
        while index < scalars.count, tokens.count < count {
            let scalar = scalars[index]
            if scalar == " " || scalar == "\t" || scalar == "\n" || scalar == "\r" || scalar == "\u{0C}" {
                index += 1
                continue
            }
            if (scalar == "-" && index + 1 < scalars.count && scalars[index + 1] == "-")
                || (scalar == "/" && index + 1 < scalars.count && scalars[index + 1] == "*") || scalar == "'" {
                tokens.append(.other(String(scalar)))
                break
            }
            let closing: Unicode.Scalar? = switch scalar {
            case "\"": "\""
            case "`": "`"
            case "[": "]"
            default: nil
            }
            if let closing {
                var text = String.UnicodeScalarView()
                var cursor = index + 1
                var closed = false
                while cursor < scalars.count {
                    if scalars[cursor] == closing {
                        // A doubled quote is the quote itself; `]` has no escape.
                        if closing != "]", cursor + 1 < scalars.count, scalars[cursor + 1] == closing {
                            text.append(closing)
                            cursor += 2
                            continue
                        }
                        closed = true
                        break
                    }
                    text.append(scalars[cursor])
                    cursor += 1
                }
                guard closed else { tokens.append(.other(String(scalar))); break }
                tokens.append(.quoted(String(text)))
                index = cursor + 1
                continue
            }
            if isWordScalar(scalar) {
                var text = String.UnicodeScalarView()
                while index < scalars.count, isWordScalar(scalars[index]) {
                    text.append(scalars[index])
                    index += 1
                }
                tokens.append(.word(String(text)))
                continue
            }
            tokens.append(.other(String(scalar)))
            index += 1
        }
        return tokens
    }
}
