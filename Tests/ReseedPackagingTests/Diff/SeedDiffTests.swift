import Foundation
import GRDB
import Testing
@testable import ReseedPackaging

/// A fresh directory for one test, where it builds its two databases.
private struct Scratch {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appending(path: "seed-diff-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func database(_ name: String, _ sql: String, encoding: String = "UTF-8") throws -> URL {
        let url = directory.appending(path: name)
        let queue = try DatabaseQueue(path: url.path)
        try queue.writeWithoutTransaction { try $0.execute(sql: "PRAGMA encoding = '\(encoding)'") }
        try queue.write { try $0.execute(sql: sql) }
        try queue.close()
        return url
    }

    /// Builds `old.sqlite` and `new.sqlite`, each from `shared` then its own SQL, and compares them.
    func diff(shared: String = "", old: String, new: String, exampleLimit: Int = 5) throws -> SeedDiff {
        let oldURL = try database("old.sqlite", shared + "\n" + old)
        let newURL = try database("new.sqlite", shared + "\n" + new)
        return try SeedDiff.compare(old: oldURL, new: newURL, exampleLimit: exampleLimit)
    }

    func remove() {
        try? FileManager.default.removeItem(at: directory)
    }
}

private func table(_ diff: SeedDiff, _ name: String) throws -> SeedDiff.TableChange {
    try #require(diff.tables.first { $0.name == name })
}

private let songsSchema = """
    CREATE TABLE songs(id INTEGER PRIMARY KEY, title TEXT NOT NULL, year INTEGER);
    INSERT INTO songs VALUES (1, 'Blue', 1999), (2, 'Green', 2001), (3, 'Red', 2005);
    """

@Suite struct SeedDiffTests {
    @Test func identicalDatabasesGiveAnEmptyDiff() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let sql = songsSchema + """
            CREATE INDEX songs_by_title ON songs(title);
            CREATE VIEW recent AS SELECT * FROM songs WHERE year > 2000;
            """
        let diff = try scratch.diff(shared: sql, old: "", new: "")
        #expect(diff.isEmpty)
        #expect(diff.schema.isEmpty)
        #expect(diff.tables.isEmpty)
        #expect(diff.renderText().contains("No differences."))
    }

    @Test func addedAndRemovedTablesAreSchemaChanges() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let diff = try scratch.diff(
            shared: songsSchema,
            old: "CREATE TABLE albums(id INTEGER PRIMARY KEY); CREATE INDEX albums_id ON albums(id);",
            new: "CREATE TABLE playlists(id INTEGER PRIMARY KEY, name TEXT);")
        #expect(diff.schema.map { "\($0.kind) \($0.type) \($0.name)" } == [
            "removed table albums", "removed index albums_id", "added table playlists",
        ])
        let added = try #require(diff.schema.first { $0.name == "playlists" })
        #expect(added.newSQL == "CREATE TABLE playlists(id INTEGER PRIMARY KEY, name TEXT)")
        #expect(added.oldSQL == nil)
        #expect(diff.schema.first { $0.name == "albums_id" }?.table == "albums")
        // Tables on one side only have no row comparison.
        #expect(diff.tables.isEmpty)
    }

    /// Issue 32: names compare as SQLite compares them. A table and a column whose names changed
    /// only in case are the same table and column: their rows are compared, nothing is removed or added.
    @Test func aTableWhoseNameChangedCaseIsTheSameTable() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let diff = try scratch.diff(
            old: "CREATE TABLE Songs(id INTEGER PRIMARY KEY, Title TEXT); INSERT INTO Songs VALUES (1, 'Blue'), (2, 'Green');",
            new: "CREATE TABLE songs(id INTEGER PRIMARY KEY, title TEXT); INSERT INTO songs VALUES (1, 'Blue'), (2, 'Grey');")
        #expect(diff.schema.map { "\($0.kind) \($0.type) \($0.name)" } == ["changed table songs", "changed column title"])
        #expect(diff.schema.last?.detail == "name Title → title")
        let songs = try table(diff, "songs")
        #expect((songs.added, songs.removed, songs.changed) == (0, 0, 1))
    }

    @Test func addedAndChangedColumnsAreReported() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let diff = try scratch.diff(
            old: "CREATE TABLE songs(id INTEGER PRIMARY KEY, title TEXT, gone BLOB);",
            new: "CREATE TABLE songs(id INTEGER PRIMARY KEY, title TEXT NOT NULL, rating INTEGER NOT NULL DEFAULT 0);")
        let columns = diff.schema.filter { $0.type == .column }
        #expect(columns.map { "\($0.kind) \($0.table ?? "") \($0.name)" } == [
            "removed songs gone", "added songs rating", "changed songs title",
        ])
        #expect(columns.first { $0.name == "rating" }?.detail == "INTEGER NOT NULL DEFAULT 0")
        #expect(columns.first { $0.name == "title" }?.detail == "NOT NULL added")
        #expect(diff.schema.first { $0.type == .table }?.kind == .changed)
    }

    @Test func changedIndexViewAndTriggerAreReportedButWhitespaceIsNot() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let diff = try scratch.diff(
            shared: songsSchema + "CREATE TABLE log(message TEXT);",
            old: """
                CREATE INDEX songs_by_title ON songs(title);
                CREATE VIEW recent AS SELECT * FROM songs WHERE year > 2000;
                CREATE VIEW spaced AS SELECT   title FROM songs WHERE title = 'a  b';
                CREATE TRIGGER songs_log AFTER INSERT ON songs BEGIN INSERT INTO log VALUES ('added'); END;
                """,
            new: """
                CREATE INDEX songs_by_title ON songs(title, year);
                CREATE VIEW recent AS SELECT * FROM songs WHERE year > 2010;
                CREATE VIEW spaced AS SELECT title
                    FROM songs   WHERE title = 'a  b';
                CREATE TRIGGER songs_log AFTER INSERT ON songs BEGIN INSERT INTO log VALUES ('new song'); END;
                """)
        #expect(diff.schema.map { "\($0.kind) \($0.type) \($0.name)" } == [
            "changed view recent", "changed index songs_by_title", "changed trigger songs_log",
        ])
        let index = try #require(diff.schema.first { $0.type == .index })
        #expect(index.oldSQL == "CREATE INDEX songs_by_title ON songs(title)")
        #expect(index.newSQL == "CREATE INDEX songs_by_title ON songs(title, year)")
        #expect(index.table == "songs")
        #expect(diff.tables.isEmpty)
    }

    @Test func whitespaceInsideQuotesIsAChange() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let diff = try scratch.diff(
            shared: songsSchema,
            old: "CREATE VIEW v AS SELECT * FROM songs WHERE title = 'a b';",
            new: "CREATE VIEW v AS SELECT * FROM songs WHERE title = 'a  b';")
        #expect(diff.schema.map(\.name) == ["v"])
    }

    @Test func rowsKeyedBySinglePrimaryKey() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let diff = try scratch.diff(
            shared: songsSchema,
            old: "",
            new: """
                DELETE FROM songs WHERE id = 2;
                UPDATE songs SET title = 'Navy', year = NULL WHERE id = 1;
                INSERT INTO songs VALUES (4, 'It''s', 2020);
                """)
        #expect(diff.schema.isEmpty)
        let songs = try table(diff, "songs")
        #expect(songs.key == ["id"])
        #expect((songs.added, songs.removed, songs.changed) == (1, 1, 1))
        #expect(songs.addedExamples.map(\.key) == [["4"]])
        #expect(songs.removedExamples.map(\.key) == [["2"]])
        #expect(songs.changedExamples == [
            .init(key: ["1"], changes: [
                .init(column: "title", old: "'Blue'", new: "'Navy'"),
                .init(column: "year", old: "1999", new: "NULL"),
            ]),
        ])
    }

    @Test func rowsKeyedByCompositePrimaryKeyInKeyOrder() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let diff = try scratch.diff(
            shared: """
                CREATE TABLE names(language TEXT, id INTEGER, name TEXT, PRIMARY KEY(id, language));
                INSERT INTO names VALUES ('en', 1, 'one'), ('fr', 1, 'un'), ('en', 2, 'two'), ('fr', 2, 'deux');
                """,
            old: "",
            new: """
                UPDATE names SET name = 'Deux' WHERE id = 2 AND language = 'fr';
                DELETE FROM names WHERE id = 1 AND language = 'en';
                INSERT INTO names VALUES ('de', 1, 'eins');
                """)
        let names = try table(diff, "names")
        #expect(names.key == ["id", "language"])
        #expect((names.added, names.removed, names.changed) == (1, 1, 1))
        #expect(names.addedExamples.map(\.key) == [["1", "'de'"]])
        #expect(names.removedExamples.map(\.key) == [["1", "'en'"]])
        #expect(names.changedExamples.map(\.key) == [["2", "'fr'"]])
        #expect(names.changedExamples.first?.changes == [.init(column: "name", old: "'deux'", new: "'Deux'")])
    }

    @Test func rowsWithoutPrimaryKeyAreKeyedByRowid() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let diff = try scratch.diff(
            shared: "CREATE TABLE log(message TEXT, level INTEGER); INSERT INTO log VALUES ('a', 1), ('b', 2), ('c', 3);",
            old: "",
            new: "DELETE FROM log WHERE message = 'a'; UPDATE log SET level = 9 WHERE message = 'c'; INSERT INTO log VALUES ('d', 4);")
        let log = try table(diff, "log")
        #expect(log.key == ["rowid"])
        #expect((log.added, log.removed, log.changed) == (1, 1, 1))
        #expect(log.addedExamples.map(\.key) == [["4"]])
        #expect(log.removedExamples.map(\.key) == [["1"]])
        #expect(log.changedExamples.first?.changes == [.init(column: "level", old: "3", new: "9")])
    }

    @Test func withoutRowidTableIsKeyedByItsPrimaryKey() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let diff = try scratch.diff(
            shared: """
                CREATE TABLE codes(code TEXT PRIMARY KEY, label TEXT) WITHOUT ROWID;
                INSERT INTO codes VALUES ('AA', 'first'), ('BB', 'second'), ('CC', 'third');
                """,
            old: "",
            new: "UPDATE codes SET label = 'Second' WHERE code = 'BB'; INSERT INTO codes VALUES ('AB', 'between');")
        let codes = try table(diff, "codes")
        #expect(codes.key == ["code"])
        #expect((codes.added, codes.removed, codes.changed) == (1, 0, 1))
        #expect(codes.addedExamples.map(\.key) == [["'AB'"]])
        #expect(codes.changedExamples.map(\.key) == [["'BB'"]])
    }

    @Test func integerAndTextWithTheSameDigitsDiffer() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let diff = try scratch.diff(
            shared: "CREATE TABLE t(id INTEGER PRIMARY KEY, v, w);",
            old: "INSERT INTO t VALUES (1, 1, 1), (2, 'é', 2);",
            // 1.0 equals 1 for SQLite; a decomposed é is other bytes than a precomposed one.
            new: "INSERT INTO t VALUES (1, '1', 1.0), (2, 'e' || char(769), 2);")
        let t = try table(diff, "t")
        #expect(t.changed == 2)
        #expect(t.changedExamples.map(\.changes) == [
            [.init(column: "v", old: "1", new: "'1'")],
            [.init(column: "v", old: "'é'", new: "'e\u{301}'")],
        ])
    }

    @Test func exampleLimitCapsExamplesButNotCounts() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let diff = try scratch.diff(
            shared: """
                CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER);
                WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 100) INSERT INTO n SELECT x, x FROM i;
                """,
            old: "",
            new: """
                UPDATE n SET v = -v WHERE id <= 20;
                DELETE FROM n WHERE id > 90;
                WITH RECURSIVE i(x) AS (SELECT 101 UNION ALL SELECT x + 1 FROM i WHERE x < 107) INSERT INTO n SELECT x, x FROM i;
                """,
            exampleLimit: 3)
        let n = try table(diff, "n")
        #expect((n.added, n.removed, n.changed) == (7, 10, 20))
        #expect(n.addedExamples.map(\.key) == [["101"], ["102"], ["103"]])
        #expect(n.removedExamples.map(\.key) == [["91"], ["92"], ["93"]])
        #expect(n.changedExamples.map(\.key) == [["1"], ["2"], ["3"]])
        #expect(diff.renderText().contains("… and 17 more changed"))
    }

    @Test func reseedTablesAreExcludedAndSeedNameAndVersionReported() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let diff = try scratch.diff(
            shared: songsSchema + """
                CREATE TABLE reseed_metadata(key TEXT PRIMARY KEY, value TEXT);
                CREATE TABLE reseed_steps(position INTEGER PRIMARY KEY, id TEXT, checksum TEXT);
                INSERT INTO reseed_metadata VALUES ('name', 'songs'), ('format', '1');
                """,
            old: "INSERT INTO reseed_metadata VALUES ('version', '1.0.0'); INSERT INTO reseed_steps VALUES (1, 'a.sql', 'x');",
            new: """
                INSERT INTO reseed_metadata VALUES ('version', '1.1.0');
                INSERT INTO reseed_steps VALUES (1, 'a.sql', 'y'), (2, 'b.sql', 'z');
                CREATE INDEX reseed_steps_by_id ON reseed_steps(id);
                """)
        #expect(diff.isEmpty)
        #expect(diff.old.name == "songs")
        #expect(diff.old.version == "1.0.0")
        #expect(diff.new.version == "1.1.0")
        #expect(diff.renderText().contains("(songs 1.1.0)"))
    }

    @Test func seedWithoutMetadataHasNoNameOrVersion() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let diff = try scratch.diff(
            shared: songsSchema, old: "",
            new: "CREATE TABLE reseed_metadata(key TEXT PRIMARY KEY, value TEXT); INSERT INTO reseed_metadata VALUES ('name', 'songs');")
        #expect(diff.old == .init(path: scratch.directory.appending(path: "old.sqlite").path, name: nil, version: nil))
        #expect(diff.new.name == "songs")
        #expect(diff.new.version == nil)
    }

    @Test func largeTableGivesExactCounts() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let diff = try scratch.diff(
            shared: """
                CREATE TABLE big(id INTEGER PRIMARY KEY, name TEXT, score REAL);
                WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 200000)
                INSERT INTO big SELECT x, 'name ' || x, x * 0.5 FROM i;
                """,
            old: "",
            new: """
                UPDATE big SET name = name || '!' WHERE id % 100 = 0;
                DELETE FROM big WHERE id % 1000 = 1;
                WITH RECURSIVE i(x) AS (SELECT 200001 UNION ALL SELECT x + 1 FROM i WHERE x < 200300)
                INSERT INTO big SELECT x, 'name ' || x, x * 0.5 FROM i;
                """)
        let big = try table(diff, "big")
        #expect((big.added, big.removed, big.changed) == (300, 200, 2000))
        #expect(big.changedExamples.first == .init(key: ["100"], changes: [
            .init(column: "name", old: "'name 100'", new: "'name 100!'"),
        ]))
    }

    @Test func textKeysMergeInBinaryOrderWhateverTheCollation() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        // Under NOCASE 'b' sorts before 'C'; the merge must still see both sides in one order.
        let diff = try scratch.diff(
            shared: """
                CREATE TABLE tags(name TEXT PRIMARY KEY COLLATE NOCASE, uses INTEGER);
                INSERT INTO tags VALUES ('a', 1), ('b', 2), ('C', 3), ('D', 4), ('é', 5);
                """,
            old: "", new: "UPDATE tags SET uses = 30 WHERE name = 'C'; INSERT INTO tags VALUES ('B2', 6);")
        let tags = try table(diff, "tags")
        #expect((tags.added, tags.removed, tags.changed) == (1, 0, 1))
        #expect(tags.changedExamples.map(\.key) == [["'C'"]])
    }

    @Test func keysOfMixedTypesMergeInSQLiteOrder() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let diff = try scratch.diff(
            shared: """
                CREATE TABLE mixed(k PRIMARY KEY, v);
                INSERT INTO mixed VALUES (-1, 'a'), (1.5, 'b'), (2, 'c'), (9007199254740994, 'd'),
                    (9007199254740992.0, 'e'), ('10', 'f'), ('9', 'g'), (x'00', 'h'), (x'FF', 'i');
                """,
            old: "",
            // 2^53 + 1 is no Double: it must not be taken for the REAL 2^53 it rounds to. (A NULL key
            // would have the rows matched by content: `duplicateNullKeysPairUpInRowidOrder`.)
            new: """
                UPDATE mixed SET v = 'G' WHERE k = '9';
                DELETE FROM mixed WHERE v = 'e';
                INSERT INTO mixed VALUES (1.75, 'j'), ('1', 'k'), (9007199254740993, 'e');
                """)
        let mixed = try table(diff, "mixed")
        #expect((mixed.added, mixed.removed, mixed.changed) == (3, 1, 1))
        #expect(mixed.addedExamples.map(\.key) == [["1.75"], ["9007199254740993"], ["'1'"]])
        #expect(mixed.removedExamples.map(\.key) == [["9007199254740992.0"]])
        #expect(mixed.changedExamples.first?.changes == [.init(column: "v", old: "'g'", new: "'G'")])
    }

    @Test func duplicateNullKeysPairUpInRowidOrder() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        // A rowid table's non-integer primary key accepts several NULLs.
        let diff = try scratch.diff(
            shared: "CREATE TABLE t(k TEXT PRIMARY KEY, v TEXT); INSERT INTO t VALUES (NULL, 'x'), ('a', 'y'), (NULL, 'z');",
            old: "", new: "INSERT INTO t VALUES (NULL, 'w'); UPDATE t SET v = 'Z' WHERE v = 'z';")
        let t = try table(diff, "t")
        // A key holding NULL does not identify the rows: they are matched by content and named by rowid.
        #expect(t.key == ["rowid"])
        #expect((t.added, t.removed, t.changed) == (1, 0, 1))
        #expect(t.addedExamples.map(\.key) == [["4"]])
        #expect(t.changedExamples.first?.changes == [.init(column: "v", old: "'z'", new: "'Z'")])
    }

    /// An upstream release that inserts rows in the middle of a table without a key (as PROJ's
    /// `alias_name`) renumbers every row after them: matched by rowid, each would be a changed row.
    @Test func rowsThatOnlyMovedInATableWithoutAKeyAreNoChange() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        func release(_ name: String, inserting inserted: [Int], deleting deleted: Int?) throws -> URL {
            var rows: [String] = []
            for x in 1...2_000 {
                if x != deleted { rows.append("('alias \(x)', 'code', \(x))") }
                if inserted.contains(x) { rows.append("('new after \(x)', 'code', NULL)") }
            }
            return try scratch.database(name, "CREATE TABLE alias_name(alt_name TEXT, table_name TEXT, code INTEGER); INSERT INTO alias_name VALUES \(rows.joined(separator: ", "));")
        }
        let old = try release("old.sqlite", inserting: [], deleting: nil)
        let new = try release("new.sqlite", inserting: [100, 900, 1_500], deleting: 50)
        let diff = try SeedDiff.compare(old: old, new: new)
        let aliases = try table(diff, "alias_name")
        #expect(aliases.key == ["rowid"])
        #expect((aliases.added, aliases.removed, aliases.changed) == (3, 1, 0))
        #expect(aliases.removedExamples.map(\.key) == [["50"]])
        #expect(aliases.addedExamples.map(\.key) == [["100"], ["901"], ["1502"]])
        // The same counts as the row-level delta between the two.
        let delta = try SeedDiff.deltaSize(old: old, new: new)
        let counts = try #require(delta.tables.first { $0.name == "alias_name" })
        #expect((counts.inserted, counts.deleted, counts.updated) == (aliases.added, aliases.removed, aliases.changed))
    }

    @Test func aDeltaThatMovesRowsAndChangesTheSchemaSaysBoth() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let rows = (1...300).map { "('alias \($0)')" }
        let old = try scratch.database("old.sqlite", "CREATE TABLE alias_name(alt_name TEXT); INSERT INTO alias_name VALUES \(rows.joined(separator: ", "));")
        let new = try scratch.database("new.sqlite", """
            CREATE TABLE alias_name(alt_name TEXT); CREATE INDEX alias_by_name ON alias_name(alt_name);
            INSERT INTO alias_name VALUES ('first'), \(rows.joined(separator: ", "));
            """)
        let delta = try SeedDiff.deltaSize(old: old, new: new)
        #expect(delta.format == 3)
        #expect(delta.lines().first?.hasSuffix(", with schema changes and rows matched by content (format 3)") == true, "\(delta.lines())")
    }

    /// Rows matched by content are told apart by every byte SQLite stores, past an embedded NUL too.
    @Test func textThatDiffersAfterANulIsAChangeInATableWithoutAKey() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let diff = try scratch.diff(
            shared: "CREATE TABLE note(body TEXT); INSERT INTO note VALUES ('first'), (CAST(x'610062' AS TEXT)), ('last');",
            old: "", new: "UPDATE note SET body = CAST(x'610063' AS TEXT) WHERE rowid = 2;")
        let note = try table(diff, "note")
        #expect((note.added, note.removed, note.changed) == (0, 0, 1))
    }

    /// Rows matched by their key are compared by every byte SQLite stores too: a value that differs
    /// only after an embedded NUL is a changed row, shown as the text's bytes, and keys that differ
    /// only after a NUL are two rows.
    @Test func textThatDiffersAfterANulIsAChangeInAKeyedTable() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let diff = try scratch.diff(
            shared: """
                CREATE TABLE note(id INTEGER PRIMARY KEY, body TEXT);
                INSERT INTO note VALUES (1, 'first'), (2, CAST(x'610062' AS TEXT)), (3, 'last');
                CREATE TABLE tag(name TEXT PRIMARY KEY, n INTEGER) WITHOUT ROWID;
                INSERT INTO tag VALUES (CAST(x'610062' AS TEXT), 1), ('b', 2);
                """,
            old: "", new: """
                UPDATE note SET body = CAST(x'610063' AS TEXT) WHERE id = 2;
                UPDATE tag SET name = CAST(x'610063' AS TEXT) WHERE n = 1;
                """)
        let note = try table(diff, "note")
        #expect((note.added, note.removed, note.changed) == (0, 0, 1))
        #expect(note.changedExamples == [.init(key: ["2"], changes: [
            .init(column: "body", old: "CAST(X'610062' AS TEXT)", new: "CAST(X'610063' AS TEXT)"),
        ])])
        let tag = try table(diff, "tag")
        #expect((tag.added, tag.removed, tag.changed) == (1, 1, 0))
        #expect(tag.addedExamples.map(\.key) == [["CAST(X'610063' AS TEXT)"]])
    }

    @Test func aRowChangedInPlaceInATableWithoutAKeyIsOneChangedRow() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let diff = try scratch.diff(
            shared: "CREATE TABLE log(message TEXT, level INTEGER); INSERT INTO log VALUES ('a', 1), ('b', 2), ('c', 3), ('d', 4);",
            old: "",
            new: "DELETE FROM log WHERE message = 'a'; UPDATE log SET level = 30, message = 'C' WHERE message = 'c';")
        let log = try table(diff, "log")
        #expect((log.added, log.removed, log.changed) == (0, 1, 1))
        #expect(log.changedExamples == [.init(key: ["3"], changes: [
            .init(column: "message", old: "'c'", new: "'C'"), .init(column: "level", old: "3", new: "30"),
        ])])
    }

    @Test func utf16DatabasesMergeInTheirOwnByteOrder() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        // In UTF-16LE bytes 'Ā' (00 01) sorts before 'b' (62 00); in UTF-8 after it.
        let sql = "CREATE TABLE t(k TEXT PRIMARY KEY, v INTEGER); INSERT INTO t VALUES ('b', 1), ('Ā', 2), ('c', 3);"
        let old = try scratch.database("old.sqlite", sql, encoding: "UTF-16le")
        let new = try scratch.database("new.sqlite", sql + "UPDATE t SET v = 20 WHERE k = 'Ā';", encoding: "UTF-16le")
        let diff = try SeedDiff.compare(old: old, new: new)
        let t = try table(diff, "t")
        #expect((t.added, t.removed, t.changed) == (0, 0, 1))
        #expect(t.changedExamples.map(\.key) == [["'Ā'"]])
    }

    @Test func textKeysInDifferentEncodingsFailRatherThanMismatch() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let sql = "CREATE TABLE t(k TEXT PRIMARY KEY, v INTEGER); INSERT INTO t VALUES ('b', 1), ('Ā', 2);"
        let old = try scratch.database("old.sqlite", sql, encoding: "UTF-16le")
        let new = try scratch.database("new.sqlite", sql)
        let failure = #expect(throws: PackagingError.self) { try SeedDiff.compare(old: old, new: new) }
        #expect(failure?.path == old.path)
        #expect(failure?.message.contains("text encodings") == true)
    }

    @Test func changedPrimaryKeyFallsBackToTheNewKeyOrRowid() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let diff = try scratch.diff(
            old: "CREATE TABLE t(a INTEGER, b TEXT, c TEXT); INSERT INTO t VALUES (1, 'x', 'one'), (2, 'y', 'two');",
            new: "CREATE TABLE t(a INTEGER, b TEXT, c TEXT, PRIMARY KEY(b)); INSERT INTO t VALUES (1, 'x', 'ONE'), (2, 'y', 'two');")
        let t = try table(diff, "t")
        #expect(t.key == ["b"])
        #expect(t.changedExamples == [.init(key: ["'x'"], changes: [.init(column: "c", old: "'one'", new: "'ONE'")])])
        #expect(diff.schema.first { $0.name == "b" }?.detail == "primary key position 0 → 1")
    }

    @Test func valuesAreShownAsSQLLiterals() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let diff = try scratch.diff(
            shared: "CREATE TABLE v(id INTEGER PRIMARY KEY, a, b, c, d);",
            old: "INSERT INTO v VALUES (1, NULL, 3.5, x'ABCD', 'plain'), (2, 'short', 0, zeroblob(300), 1);",
            new: "INSERT INTO v VALUES (1, 'it''s', 2, x'ABCE', NULL), (2, replace(hex(zeroblob(300)), '00', 'z'), 1e300, zeroblob(301), 2);")
        let v = try table(diff, "v")
        #expect(v.changedExamples.first?.changes == [
            .init(column: "a", old: "NULL", new: "'it''s'"),
            .init(column: "b", old: "3.5", new: "2"),
            .init(column: "c", old: "X'ABCD'", new: "X'ABCE'"),
            .init(column: "d", old: "'plain'", new: "NULL"),
        ])
        let long = try #require(v.changedExamples.last?.changes)
        #expect(long[0].new == "'" + String(repeating: "z", count: 200) + "…' (300 bytes)")
        #expect(long[1].new == "1e+300")
        #expect(long[2].old == "X'" + String(repeating: "00", count: 100) + "…' (300 bytes)")
    }

    @Test func jsonDecodesBackToAnEqualDiff() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let diff = try scratch.diff(
            shared: songsSchema,
            old: "CREATE VIEW old_view AS SELECT 1;",
            new: "UPDATE songs SET year = 2000 WHERE id = 1; ALTER TABLE songs ADD COLUMN genre TEXT;")
        let data = try diff.jsonData()
        #expect(try JSONDecoder().decode(SeedDiff.self, from: data) == diff)
        #expect(try diff.jsonData() == data)
        let json = try #require(String(data: data, encoding: .utf8))
        #expect(json.contains("\"changedExamples\""))
        #expect(json.contains("\"old\" : \"1999\""))
    }

    @Test func renderTextListsEachChangedTableWithItsCounts() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let diff = try scratch.diff(
            shared: songsSchema + "CREATE TABLE tags(name TEXT PRIMARY KEY); INSERT INTO tags VALUES ('rock'), ('pop');",
            old: "",
            new: """
                INSERT INTO songs VALUES (4, 'White', 2021), (5, 'Black', 2022);
                DELETE FROM tags WHERE name = 'pop';
                CREATE INDEX songs_by_year ON songs(year);
                """)
        let text = diff.renderText()
        #expect(text.contains("Schema: 1 change\n  + index   songs_by_year on songs\n"))
        #expect(text.contains("""
              table  key   added  removed  changed
              songs  id        2        0        0
              tags   name      0        1        0
            """))
        #expect(text.contains("songs (key: id)\n  + id=4\n  + id=5\n"))
        #expect(text.contains("tags (key: name)\n  - name='pop'\n"))
        #expect(text == diff.renderText())
    }

    @Test func missingFilesAndNonDatabasesThrowAFailureNamingThePath() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let good = try scratch.database("good.sqlite", songsSchema)
        let missing = scratch.directory.appending(path: "missing.sqlite")
        let text = scratch.directory.appending(path: "notes.sqlite")
        try Data(String(repeating: "not a database ", count: 100).utf8).write(to: text)

        let notFound = #expect(throws: PackagingError.self) { try SeedDiff.compare(old: missing, new: good) }
        #expect(notFound?.path == missing.path)
        #expect(notFound?.message == "cannot open")
        #expect(notFound?.errno?.rawValue == ENOENT)
        let notADatabase = #expect(throws: PackagingError.self) { try SeedDiff.compare(old: good, new: text) }
        #expect(notADatabase?.path == text.path)
        #expect(notADatabase?.message == "not a SQLite database")
        #expect(notADatabase?.databaseError?.resultCode == .SQLITE_NOTADB)
    }

    @Test func aFolderOrAMissingFileKeepsItsErrnoInTheTypedError() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let good = try scratch.database("good.sqlite", songsSchema)
        let folder = scratch.directory.appending(path: "folder.sqlite")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        let missing = scratch.directory.appending(path: "gone/missing.sqlite")

        // `Result(catching:)` keeps the typed error: this only compiles while `compare` throws `PackagingError`.
        let intoFolder: Result<SeedDiff, PackagingError> = Result { () throws(PackagingError) in try SeedDiff.compare(old: good, new: folder) }
        guard case .failure(let isFolder) = intoFolder else { Issue.record("a folder compared as a database"); return }
        #expect(isFolder.path == folder.path)
        #expect(isFolder.code == .io)
        #expect(isFolder.errno?.rawValue == EISDIR)
        #expect(isFolder.message == "is a directory, not a database file")

        let fromMissing: Result<SeedDiff, PackagingError> = Result { () throws(PackagingError) in try SeedDiff.compare(old: missing, new: good) }
        guard case .failure(let isMissing) = fromMissing else { Issue.record("a missing file compared as a database"); return }
        #expect(isMissing.path == missing.path)
        #expect(isMissing.errno?.rawValue == ENOENT)
        #expect(isMissing.description == "\(missing.path): cannot open: no such file or directory; check the path")
    }
}
