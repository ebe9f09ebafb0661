import ReseedSystem

/// The savepoints a `.sql` step holds open, as SQLite keeps them: `SAVEPOINT name` pushes one,
/// `RELEASE [SAVEPOINT] name` pops it with every one above it, `ROLLBACK TO` leaves them open.
///
/// Names compare as SQLite compares them: without their quotes, ASCII letters in either case.
struct OpenSavepoints {
    struct Savepoint {
        /// The name as written, without its quotes.
        var name: String
        /// SQLite's form of the name: ASCII letters lower-cased (``Swift/String/sqlFolded``).
        var key: String
        /// The line of its `SAVEPOINT`.
        var line: Int
    }

    private var stack: [Savepoint] = []

    /// The first savepoint still open; nil when none is.
    var outermost: Savepoint? { stack.first }

    /// Updates the stack after `statement` ran; `words` are its ``SQLScript/leadingWords(_:_:)``.
    mutating func record(_ statement: SQLScript.Statement, words: [String]) {
        guard let first = words.first, first == "SAVEPOINT" || first == "RELEASE" else { return }
        let tokens = Self.tokens(Array(statement.sql.utf8), 3)
        // RELEASE [SAVEPOINT] name: a name alone after RELEASE SAVEPOINT is the name itself.
        let skipsKeyword = first == "RELEASE" && tokens.count == 3 && !tokens[1].quoted
            && String(decoding: tokens[1].text, as: UTF8.self).sqlFolded == "savepoint"
        let position = skipsKeyword ? 2 : 1
        guard position < tokens.count else { return }
        let name = String(decoding: tokens[position].text, as: UTF8.self)
        if first == "SAVEPOINT" {
            stack.append(Savepoint(name: name, key: name.sqlFolded, line: statement.line))
        } else if let index = stack.lastIndex(where: { $0.key == name.sqlFolded }) {
            stack.removeSubrange(index...)
        }
    }

    /// The first `count` tokens of a statement: a word as written, or a quoted name (`"…"`, `'…'`,
    /// `` `…` ``, `[…]`) without its quotes, a doubled quote inside read as one.
    private static func tokens(_ bytes: [UInt8], _ count: Int) -> [(text: [UInt8], quoted: Bool)] {
        var tokens: [(text: [UInt8], quoted: Bool)] = []
        var index = 0
        while tokens.count < count, let start = SQLScript.firstToken(bytes, index..<bytes.count) {
            let close: UInt8? = switch bytes[start] {
            case UInt8(ascii: "\""), UInt8(ascii: "'"), UInt8(ascii: "`"): bytes[start]
            case UInt8(ascii: "["): UInt8(ascii: "]")
            default: nil
            }
            var end = start + 1
            if let close {
                var text: [UInt8] = []
                while end < bytes.count {
                    if bytes[end] == close {
                        guard close != UInt8(ascii: "]"), end + 1 < bytes.count, bytes[end + 1] == close else { break }
                        end += 1
                    }
                    text.append(bytes[end])
                    end += 1
                }
                tokens.append((text, true))
                index = end + 1
            } else {
                // A word, or one byte of punctuation.
                if isWordByte(bytes[start]) {
                    while end < bytes.count, isWordByte(bytes[end]) { end += 1 }
                }
                tokens.append((Array(bytes[start..<end]), false))
                index = end
            }
        }
        return tokens
    }

    /// A byte of a bare identifier: an ASCII letter, digit, `_` or `$`, or any byte of a non-ASCII character.
    private static func isWordByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "_"), UInt8(ascii: "$"), 0x80...: true
        default: false
        }
    }
}
