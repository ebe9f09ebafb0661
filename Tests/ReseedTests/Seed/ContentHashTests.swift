import Foundation
import GRDB
import Reseed
import ReseedTestSupport
import Testing

/// ``SeedContentHash``: the same content in any layout gives the same hash; any change of content changes it.
@Suite struct ContentHashTests {
    /// A schema with every kind of table the encoding treats apart, an index, a view and a trigger.
    static let schema = """
        CREATE TABLE level (id INTEGER PRIMARY KEY, name TEXT NOT NULL, weight REAL);
        CREATE TABLE code (code TEXT PRIMARY KEY, label TEXT, data BLOB);
        CREATE TABLE pair (a TEXT, b INTEGER, note, PRIMARY KEY (a, b)) WITHOUT ROWID;
        CREATE TABLE log (message TEXT, value);
        CREATE TABLE computed (x INTEGER PRIMARY KEY, y INTEGER, doubled INTEGER GENERATED ALWAYS AS (y * 2) STORED);
        CREATE INDEX code_label ON code (label);
        CREATE VIEW heavy AS SELECT * FROM level WHERE weight > 1;
        CREATE TRIGGER level_guard BEFORE DELETE ON level BEGIN SELECT RAISE(ABORT, 'no'); END;
        """

    /// The rows of every table; the keyless `log` keeps its order (its rowids are content).
    static let keyedRows: [String] = [
        "INSERT INTO level VALUES (1, 'one', 1.5)", "INSERT INTO level VALUES (2, 'two', 2.0)",
        "INSERT INTO level VALUES (3, 'three', NULL)", "INSERT INTO level VALUES (9223372036854775807, 'max', 1e308)",
        "INSERT INTO code VALUES ('b', 'bee', x'00ff')", "INSERT INTO code VALUES ('a', 'ay', x'')",
        "INSERT INTO code VALUES ('é', 'e acute', NULL)", "INSERT INTO code VALUES ('Z', 'zed', x'5a')",
        "INSERT INTO pair VALUES ('x', 2, 1)", "INSERT INTO pair VALUES ('x', 1, 1.0)",
        "INSERT INTO pair VALUES ('w', 7, '1')", "INSERT INTO pair VALUES ('v', 0, -0.0)", "INSERT INTO computed (x, y) VALUES (1, 21)",
        "INSERT INTO computed (x, y) VALUES (2, NULL)",
    ]
    static let keylessRows = [
        "INSERT INTO log VALUES ('first', 1)", "INSERT INTO log VALUES ('second', 'two')",
        "INSERT INTO log VALUES ('first', 1)",
    ]

    /// Builds a database at `url` with the given pragmas, rows in the given order, and pages freed by a dropped table.
    func build(_ url: URL, pragmas: String = "", keyed: [String] = keyedRows, extra: [String] = []) throws {
        let queue = try DatabaseQueue(path: url.path)
        try queue.writeWithoutTransaction { db in
            if !pragmas.isEmpty { try db.execute(sql: pragmas) }
            try db.execute(sql: "PRAGMA user_version = 5; PRAGMA application_id = 1381188932")
            try db.inTransaction {
                try db.execute(sql: Self.schema)
                for statement in keyed + Self.keylessRows + extra { try db.execute(sql: statement) }
                try db.execute(sql: "CREATE TABLE scratch (x); INSERT INTO scratch SELECT zeroblob(5000) FROM level, code, pair")
                return .commit
            }
            try db.execute(sql: "DROP TABLE scratch")
        }
        try queue.close()
    }

    func hash(_ url: URL) throws -> String { try SeedContentHash.compute(path: url.path) }

    @Test func sameContentInAnyLayoutHashesTheSame() throws {
        let sandbox = try TemporaryDirectory()
        let base = sandbox.appending("base.sqlite")
        try build(base)
        let reference = try hash(base)
        #expect(reference.utf8.count == 64 && reference.allSatisfy { "0123456789abcdef".contains($0) })

        let small = sandbox.appending("small-pages.sqlite")
        try build(small, pragmas: "PRAGMA page_size = 512", keyed: Self.keyedRows.reversed())
        let large = sandbox.appending("large-pages.sqlite")
        var random = SplitMix64(seed: 14)
        try build(large, pragmas: "PRAGMA page_size = 65536; PRAGMA auto_vacuum = FULL", keyed: Self.keyedRows.shuffled(using: &random))
        let utf16 = sandbox.appending("utf16.sqlite")
        try build(utf16, pragmas: "PRAGMA encoding = 'UTF-16le'")
        let wal = sandbox.appending("wal.sqlite")
        try build(wal, pragmas: "PRAGMA journal_mode = WAL")
        let vacuumed = sandbox.appending("vacuumed.sqlite")
        let queue = try DatabaseQueue(path: base.path)
        try queue.writeWithoutTransaction { try $0.execute(sql: "VACUUM INTO ?", arguments: [vacuumed.path]) }
        try queue.writeWithoutTransaction { try $0.execute(sql: "PRAGMA page_size = 1024; VACUUM") }
        try queue.close()

        // The files differ; their content does not.
        #expect(try Data(contentsOf: small) != Data(contentsOf: base))
        let incremental = try IncrementalContentHash.compute(path: base.path)
        #expect(incremental.hash != reference && incremental.rowSet.count == 2048)
        for url in [small, large, utf16, wal, vacuumed, base] {
            #expect(try hash(url) == reference, "\(url.lastPathComponent)")
            #expect(try IncrementalContentHash.compute(path: url.path) == incremental, "\(url.lastPathComponent)")
        }
    }

    @Test func anyChangeOfContentChangesTheHash() throws {
        let sandbox = try TemporaryDirectory()
        let variants: [(String, [String])] = [
            ("one value", ["UPDATE level SET name = 'One' WHERE id = 1"]),
            ("integer to real", ["UPDATE pair SET note = 1.0 WHERE a = 'x' AND b = 2"]),
            ("integer to text", ["UPDATE pair SET note = '1' WHERE a = 'x' AND b = 2"]),
            ("real to integer", ["UPDATE pair SET note = 1 WHERE a = 'x' AND b = 1"]),
            ("text to blob", ["UPDATE code SET label = CAST('ay' AS BLOB) WHERE code = 'a'"]),
            ("empty blob to NULL", ["UPDATE code SET data = NULL WHERE code = 'a'"]),
            ("sign of zero", ["UPDATE pair SET note = 0.0 WHERE a = 'v'"]),
            ("a key", ["UPDATE code SET code = 'c' WHERE code = 'b'"]),
            ("a deleted row", ["DELETE FROM code WHERE code = 'Z'"]),
            ("an inserted row", ["INSERT INTO pair VALUES ('x', 3, NULL)"]),
            ("a keyless row's rowid", ["UPDATE log SET rowid = 10 WHERE rowid = 3"]),
            ("an empty table", ["CREATE TABLE empty (x)"]),
            ("an index", ["DROP INDEX code_label", "CREATE INDEX code_label ON code (label DESC)"]),
            ("a table's definition", ["ALTER TABLE log ADD COLUMN extra"]),
            ("a view", ["DROP VIEW heavy", "CREATE VIEW heavy AS SELECT * FROM level WHERE weight > 2"]),
            ("a trigger", ["DROP TRIGGER level_guard"]),
            ("user_version", ["PRAGMA user_version = 6"]),
            ("application_id", ["PRAGMA application_id = 7"]),
            ("a generated column's input", ["UPDATE computed SET y = 22 WHERE x = 1"]),
        ]
        let base = sandbox.appending("base.sqlite")
        try build(base)
        var seen = [try hash(base): "base"]
        var seenIncremental = [try IncrementalContentHash.compute(path: base.path).hash: "base"]
        for (index, (change, statements)) in variants.enumerated() {
            let url = sandbox.appending("variant-\(index).sqlite")
            try FileManager.default.copyItem(at: base, to: url)
            let queue = try DatabaseQueue(path: url.path)
            try queue.writeWithoutTransaction { db in
                for statement in statements { try db.execute(sql: statement) }
            }
            try queue.close()
            let changed = try hash(url)
            #expect(seen[changed] == nil, "\(change) gives the hash of \(seen[changed] ?? "")")
            seen[changed] = change
            let incremental = try IncrementalContentHash.compute(path: url.path).hash
            #expect(seenIncremental[incremental] == nil, "\(change) gives the incremental hash of \(seenIncremental[incremental] ?? "")")
            seenIncremental[incremental] = change
        }
    }

    @Test func virtualTablesAreHashedByTheirShadowTables() throws {
        let sandbox = try TemporaryDirectory()
        let url = sandbox.appending("fts.sqlite")
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in
            try db.execute(sql: "CREATE VIRTUAL TABLE docs USING fts5(body); INSERT INTO docs VALUES ('hello world')")
        }
        let before = try SeedContentHash.compute(path: url.path)
        try queue.write { try $0.execute(sql: "INSERT INTO docs VALUES ('another')") }
        try queue.close()
        #expect(try SeedContentHash.compute(path: url.path) != before)
    }

    @Test func keylessTableWithHiddenRowidIsNamed() throws {
        let sandbox = try TemporaryDirectory()
        let url = sandbox.appending("hidden.sqlite")
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { try $0.execute(sql: "CREATE TABLE odd (rowid, _rowid_, oid)") }
        try queue.close()
        let error = try #require(throws: ReseedError.self) { try SeedContentHash.compute(path: url.path) }
        #expect(error.description.contains("odd"))
        #expect(error.path == url.path)
    }
}
