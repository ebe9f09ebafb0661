import Foundation
import GRDB
@testable import Reseed
import ReseedPackaging
import ReseedTestSupport
import Testing

/// Format-2 deltas: a schema change is carried as drops, `CREATE` statements and whole tables, and
/// applying it reaches the new seed's content hash; a hostile schema list is refused untouched.
@Suite struct SeedDeltaSchemaTests {
    /// One kind of schema change: the old seed, the new one (both from `schema` unless `newSchema`), the rows of each.
    struct Case: Sendable, CustomTestStringConvertible {
        var label: String
        var schema: String
        var newSchema: String
        var old: String
        var new: String
        var testDescription: String { label }
    }

    static let base = "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL, size INTEGER)"
    static let rows = "INSERT INTO item VALUES (1, 'one', 10), (2, 'two', 20), (3, 'three', NULL)"
    static let changedRows = "INSERT INTO item VALUES (1, 'one', 10), (2, 'TWO', 20), (4, 'four', 40)"

    static let cases: [Case] = [
        Case(label: "table added", schema: base, newSchema: base + "; CREATE TABLE tag (k TEXT PRIMARY KEY, v) WITHOUT ROWID",
             old: rows, new: rows + "; INSERT INTO tag VALUES ('a', 1), ('b', x'00')"),
        Case(label: "empty table added", schema: base, newSchema: base + "; CREATE TABLE tag (k TEXT PRIMARY KEY, v)", old: rows, new: rows),
        Case(label: "table dropped", schema: base + "; CREATE TABLE tag (k TEXT PRIMARY KEY, v); CREATE INDEX tag_v ON tag (v)", newSchema: base,
             old: rows + "; INSERT INTO tag VALUES ('a', 1)", new: rows),
        Case(label: "column added", schema: base + "; CREATE INDEX item_name ON item (name)",
             newSchema: "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL, size INTEGER, note TEXT DEFAULT 'x'); CREATE INDEX item_name ON item (name)",
             old: rows, new: "INSERT INTO item VALUES (1, 'one', 10, NULL), (2, 'two', 20, 'n'), (3, 'three', NULL, 'x')"),
        Case(label: "keyless table redefined", schema: "CREATE TABLE log (line TEXT)", newSchema: "CREATE TABLE log (line TEXT, level INTEGER)",
             old: "INSERT INTO log (rowid, line) VALUES (3, 'a'), (7, 'b')", new: "INSERT INTO log (rowid, line, level) VALUES (3, 'a', 1), (9, 'c', 2)"),
        Case(label: "index added", schema: base, newSchema: base + "; CREATE INDEX item_size ON item (size)", old: rows, new: changedRows),
        Case(label: "index dropped", schema: base + "; CREATE INDEX item_size ON item (size)", newSchema: base, old: rows, new: rows),
        Case(label: "index replaced", schema: base + "; CREATE INDEX item_size ON item (size)",
             newSchema: base + "; CREATE UNIQUE INDEX item_size ON item (size, name)", old: rows, new: changedRows),
        Case(label: "view added", schema: base, newSchema: base + "; CREATE VIEW big AS SELECT * FROM item WHERE size > 10", old: rows, new: rows),
        Case(label: "view dropped", schema: base + "; CREATE VIEW big AS SELECT * FROM item WHERE size > 10", newSchema: base, old: rows, new: rows),
        Case(label: "view replaced", schema: base + "; CREATE VIEW big AS SELECT * FROM item WHERE size > 10",
             newSchema: base + "; CREATE VIEW big AS SELECT id FROM item WHERE size > 15", old: rows, new: rows),
        Case(label: "trigger added", schema: base,
             newSchema: base + "; CREATE TRIGGER item_named AFTER INSERT ON item BEGIN UPDATE item SET size = 0 WHERE id = new.id; END",
             old: rows, new: rows + "; INSERT INTO item VALUES (9, 'nine', 9)"),
        Case(label: "trigger dropped", schema: base + "; CREATE TRIGGER item_named AFTER INSERT ON item BEGIN SELECT 1; END",
             newSchema: base, old: rows, new: rows),
        Case(label: "trigger replaced", schema: base + "; CREATE TRIGGER item_named AFTER INSERT ON item BEGIN SELECT 1; END",
             newSchema: base + "; CREATE TRIGGER item_named AFTER UPDATE ON item BEGIN SELECT 2; END", old: rows, new: changedRows),
        Case(label: "user_version and application_id", schema: base, newSchema: base + "; CREATE INDEX item_size ON item (size)",
             old: rows, new: rows + "; PRAGMA user_version = 7; PRAGMA application_id = 99"),
        Case(label: "FTS5 added", schema: base, newSchema: base + "; CREATE VIRTUAL TABLE doc USING fts5(title, body)",
             old: rows, new: rows + "; INSERT INTO doc (rowid, title, body) VALUES (5, 'hello', 'world wide'), (8, 'again', 'hello world')"),
        Case(label: "FTS5 dropped", schema: base + "; CREATE VIRTUAL TABLE doc USING fts5(title, body)", newSchema: base,
             old: rows + "; INSERT INTO doc VALUES ('hello', 'world')", new: rows),
        Case(label: "FTS5 redefined", schema: base + "; CREATE VIRTUAL TABLE doc USING fts5(title, body)",
             newSchema: base + "; CREATE VIRTUAL TABLE doc USING fts5(title, body, tokenize = 'porter')",
             old: rows + "; INSERT INTO doc VALUES ('hello', 'worlds')", new: rows + "; INSERT INTO doc VALUES ('hello', 'worlds'), ('running', 'fast')"),
        Case(label: "external-content FTS5 added", schema: base,
             newSchema: base + "; CREATE VIRTUAL TABLE item_text USING fts5(name, content='item', content_rowid='id')",
             old: rows, new: rows + "; INSERT INTO item_text (item_text) VALUES ('rebuild')"),
        Case(label: "R-tree added", schema: base, newSchema: base + "; CREATE VIRTUAL TABLE place USING rtree(id, minX, maxX, minY, maxY)",
             old: rows, new: rows + "; INSERT INTO place VALUES (1, 0, 1, 0, 1), (2, 5, 6, -1, 2)"),
        Case(label: "R-tree dropped", schema: base + "; CREATE VIRTUAL TABLE place USING rtree(id, minX, maxX)", newSchema: base,
             old: rows + "; INSERT INTO place VALUES (1, 0, 1)", new: rows),
        Case(label: "R-tree redefined", schema: base + "; CREATE VIRTUAL TABLE place USING rtree(id, minX, maxX)",
             newSchema: base + "; CREATE VIRTUAL TABLE place USING rtree_i32(id, minX, maxX, minY, maxY)",
             old: rows + "; INSERT INTO place VALUES (1, 0, 1)", new: rows + "; INSERT INTO place VALUES (1, 0, 1, 2, 3), (4, -5, 5, 0, 0)"),
    ]

    /// The delta's format, read from its header.
    static func format(of delta: String) throws -> Int? {
        try DatabaseQueue(path: delta).read { try Int.fetchOne($0, sql: "SELECT value FROM reseed_delta WHERE key = 'format'") }
    }

    @Test(arguments: cases) func eachSchemaChangeAloneReachesTheNewSeedsContentHash(_ change: Case) throws {
        let sandbox = try DeltaSandbox(schema: change.schema, old: change.old, new: change.new, newSchema: change.newSchema)
        let built = try #require(try sandbox.roundTrip())
        #expect(built.format == 2)
        #expect(try Self.format(of: sandbox.delta) == 2)
        // The module keeps its index consistent: its own check passes on the result.
        let problems = try DatabaseQueue(path: sandbox.target).write { try VirtualTableCheck.problems($0) }
        #expect(problems.isEmpty, "\(problems)")
    }

    @Test func aChangedTableIsShippedWholeAndItsIndexAndTriggerAreCreatedAgain() throws {
        let schema = "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT); CREATE INDEX item_name ON item (name); CREATE TRIGGER item_touch AFTER UPDATE ON item BEGIN SELECT 1; END"
        let sandbox = try DeltaSandbox(
            schema: schema, old: "INSERT INTO item VALUES (1, 'a'), (2, 'b')", new: "INSERT INTO item VALUES (1, 'a', 3), (2, 'b', NULL), (5, 'e', 1)",
            newSchema: schema.replacingOccurrences(of: "name TEXT)", with: "name TEXT, rank INTEGER)"))
        let built = try #require(try sandbox.roundTrip())
        #expect(built.tables == [.init(name: "item", deleted: 0, updated: 0, inserted: 3, carries: .wholeTable, reason: .definitionChanged)])
        #expect(built.schemaObjects == [
            .init(type: "index", name: "item_name", change: .recreated), .init(type: "trigger", name: "item_touch", change: .recreated),
        ])
        let names = try DatabaseQueue(path: sandbox.target).read { try String.fetchAll($0, sql: "SELECT name FROM sqlite_schema ORDER BY name") }
        #expect(names == ["item", "item_name", "item_touch"])
    }

    @Test func everyKindOfChangeAtOnceWithRowChangesRoundTrips() throws {
        let old = """
            CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT); CREATE TABLE gone (k TEXT PRIMARY KEY); CREATE TABLE kept (id INTEGER PRIMARY KEY, v);
            CREATE INDEX item_name ON item (name); CREATE INDEX kept_v ON kept (v); CREATE VIEW kept_view AS SELECT v FROM kept;
            CREATE TRIGGER kept_touch AFTER UPDATE ON kept BEGIN SELECT 1; END; CREATE TRIGGER gone_touch AFTER INSERT ON gone BEGIN SELECT 1; END;
            CREATE VIRTUAL TABLE doc USING fts5(body); CREATE VIRTUAL TABLE old_place USING rtree(id, a, b)
            """
        let new = """
            CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT, extra); CREATE TABLE kept (id INTEGER PRIMARY KEY, v); CREATE TABLE fresh (id INTEGER PRIMARY KEY, w);
            CREATE INDEX item_name ON item (name); CREATE INDEX kept_v ON kept (v DESC); CREATE VIEW kept_view AS SELECT v, id FROM kept;
            CREATE VIEW fresh_view AS SELECT w FROM fresh JOIN item USING (id);
            CREATE TRIGGER kept_touch AFTER DELETE ON kept BEGIN SELECT 2; END; CREATE TRIGGER fresh_touch AFTER INSERT ON fresh BEGIN INSERT INTO kept (v) VALUES (new.w); END;
            CREATE VIRTUAL TABLE doc USING fts5(body, title); CREATE VIRTUAL TABLE new_place USING rtree(id, a, b)
            """
        let sandbox = try DeltaSandbox(
            schema: old,
            old: """
                INSERT INTO item VALUES (1, 'a'), (2, 'b'); INSERT INTO gone VALUES ('x'); INSERT INTO kept VALUES (1, 1), (2, 2), (3, 3);
                INSERT INTO doc (rowid, body) VALUES (1, 'one two'); INSERT INTO old_place VALUES (1, 0, 1); PRAGMA user_version = 1
                """,
            new: """
                INSERT INTO item VALUES (1, 'a', NULL), (2, 'B', 1); INSERT INTO kept VALUES (1, 1), (2, 20), (4, 4); INSERT INTO fresh VALUES (1, 'w');
                INSERT INTO doc (rowid, body, title) VALUES (1, 'one two', 't'), (2, 'three', NULL); INSERT INTO new_place VALUES (3, 1, 2);
                PRAGMA user_version = 2
                """,
            newSchema: new)
        let built = try #require(try sandbox.roundTrip())
        let byName = Dictionary(uniqueKeysWithValues: built.tables.map { ($0.name, $0) })
        // Row 5 of kept came from fresh_touch while the new seed was built: the delta carries it as a row; no trigger fires on apply.
        #expect(byName["kept"].map { [$0.deleted, $0.updated, $0.inserted] } == [1, 1, 2])
        #expect(byName["kept"]?.carries == .rows)
        #expect(byName["item"]?.reason == .definitionChanged)
        #expect(byName["doc"]?.reason == .definitionChanged)
        #expect(byName["fresh"]?.reason == .added)
        #expect(byName["new_place"]?.carries == .wholeTable)
        #expect(byName["gone"]?.carries == .drop)
        #expect(byName["old_place"]?.carries == .drop)
        let changes = Dictionary(uniqueKeysWithValues: built.schemaObjects.map { ($0.name, $0.change) })
        #expect(changes == [
            "item_name": .recreated, "kept_v": .replaced, "kept_view": .replaced, "fresh_view": .added, "kept_touch": .replaced,
            "fresh_touch": .added, "gone_touch": .dropped,
        ])
        // The FTS table answers queries through its new index.
        let hits = try DatabaseQueue(path: sandbox.target).read { try Int.fetchOne($0, sql: "SELECT rowid FROM doc WHERE doc MATCH 'three'") }
        #expect(hits == 2)
    }

    @Test func aDeltaWithoutSchemaChangesStaysFormat1WithNoSchemaList() throws {
        let sandbox = try DeltaSandbox(schema: Self.base + "; CREATE INDEX item_size ON item (size)", old: Self.rows, new: Self.changedRows)
        let built = try #require(try sandbox.roundTrip())
        #expect(built.format == 1)
        #expect(built.schemaObjects.isEmpty)
        let names = try DatabaseQueue(path: sandbox.delta).read { try String.fetchAll($0, sql: "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name") }
        #expect(names == ["reseed_delta", "reseed_delta_1_deleted", "reseed_delta_1_inserted", "reseed_delta_1_updated", "reseed_delta_tables"])
        #expect(try Self.format(of: sandbox.delta) == 1)
    }

    /// An app that reads format 1 only refuses a format-2 delta as a malformed one, so its update falls back to the full seed.
    @Test func aFormat1ReaderRefusesAFormat2Delta() throws {
        let change = Self.cases[0]
        let sandbox = try DeltaSandbox(schema: change.schema, old: change.old, new: change.new, newSchema: change.newSchema)
        guard case .built = try sandbox.build() else { Issue.record("no delta"); return }
        let error = #expect(throws: ReseedError.self) {
            try DatabaseQueue(path: sandbox.delta).read { db in
                try SeedDelta.HeaderReader(db: db, schema: "main", path: sandbox.delta, readable: 1...1).read()
            }
        }
        #expect(error?.code == .invalidDelta)
        #expect(error?.message == "the delta has format 2; this Reseed reads format 1 only")
    }

    @Test func aChangeToAContentlessFullTextTableIsNotExpressible() throws {
        let sandbox = try DeltaSandbox(
            schema: Self.base, old: Self.rows, new: Self.rows + "; INSERT INTO terms (rowid, body) VALUES (1, 'x')",
            newSchema: Self.base + "; CREATE VIRTUAL TABLE terms USING fts5(body, content='')")
        guard case .notExpressible(let reason) = try sandbox.build() else { Issue.record("a delta was built"); return }
        #expect(reason.contains("terms"), "\(reason)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.delta))
    }
}

extension SeedDeltaSchemaTests {
    /// The content table changes its definition; its FTS table does not. Changed row by row after the
    /// content table holds the new text, the FTS index would keep `pear` for row 2 (its integrity-check does not compare).
    @Test func anFTSTableWhoseContentTableIsShippedWholeIsShippedWholeToo() throws {
        let fts = "CREATE VIRTUAL TABLE item_text USING fts5(name, content='item', content_rowid='id')"
        let sandbox = try DeltaSandbox(
            schema: "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT); " + fts,
            old: "INSERT INTO item VALUES (1, 'apple'), (2, 'pear'); INSERT INTO item_text (item_text) VALUES ('rebuild')",
            new: "INSERT INTO item VALUES (1, 'apple', 0), (2, 'plum', 1); INSERT INTO item_text (item_text) VALUES ('rebuild')",
            newSchema: "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT, rank INTEGER); " + fts)
        let built = try #require(try sandbox.roundTrip())
        #expect(built.tables.first { $0.name == "item_text" }?.reason == .contentTableReplaced)
        let queue = try DatabaseQueue(path: sandbox.target)
        #expect(try queue.read { try Int.fetchAll($0, sql: "SELECT rowid FROM item_text WHERE item_text MATCH 'pear'") } == [])
        #expect(try queue.read { try Int.fetchAll($0, sql: "SELECT rowid FROM item_text WHERE item_text MATCH 'plum'") } == [2])
    }
}

extension SeedDeltaSchemaTests {
    /// Shaped like the issue's geodesy pair: 36 tables become 38 (two added, one redefined), every
    /// trigger rewritten, rows changed in 26 tables; the rest goes row by row.
    @Test func aReleaseShapedLikeTheGeodesyPairRoundTrips() throws {
        func tables(_ generation: Int) -> String {
            (0..<36).map { index in
                let columns = generation > 0 && index == 5 ? "code TEXT NOT NULL, value REAL, unit TEXT, source TEXT" : "code TEXT NOT NULL, value REAL, unit TEXT"
                let trigger = index % 3 == 0
                    ? "; CREATE TRIGGER t\(index)_check BEFORE INSERT ON t\(index) WHEN new.value < \(generation == 0 ? "0" : "-1") BEGIN SELECT RAISE(ABORT, 'negative \(generation)'); END"
                    : ""
                return "CREATE TABLE t\(index) (id INTEGER PRIMARY KEY, \(columns)); CREATE INDEX t\(index)_code ON t\(index) (code)\(trigger)"
            }.joined(separator: "; ")
                + (generation > 0 ? "; CREATE TABLE datum (id INTEGER PRIMARY KEY, name TEXT NOT NULL); CREATE TABLE datum_alias (alias TEXT PRIMARY KEY, datum_id INTEGER) WITHOUT ROWID" : "")
        }
        func rows(_ generation: Int) -> String {
            (0..<36).map { index in
                let changed = generation > 0 && index < 26
                let extra = generation > 0 && index == 5 ? ", 'epsg'" : ""
                return """
                    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
                    INSERT INTO t\(index) SELECT i, 'C' || i, i * \(index + 1) * 0.5\(changed ? " + (i % 50 = \(index % 50)) * 0.25" : ""), 'm'\(extra) FROM n
                    WHERE \(changed ? "i <> \(index + 3)" : "1")
                    """ + (changed ? "; INSERT INTO t\(index) VALUES (1000, 'new', 1.0, 'km'\(extra))" : "")
            }.joined(separator: "; ")
                + (generation > 0 ? "; INSERT INTO datum VALUES (1, 'WGS 84'), (2, 'ETRS89'); INSERT INTO datum_alias VALUES ('wgs84', 1)" : "")
        }
        let sandbox = try DeltaSandbox(schema: tables(0), old: rows(0), new: rows(1), newSchema: tables(1))
        let built = try #require(try sandbox.roundTrip())
        #expect(built.format == 2)
        let byCarry = Dictionary(grouping: built.tables, by: \.carries).mapValues { $0.map(\.name).sorted() }
        #expect(byCarry[.wholeTable] == ["datum", "datum_alias", "t5"])
        #expect(byCarry[.rows]?.count == 25)
        #expect(built.schemaObjects.filter { $0.type == "trigger" }.count == 12)
        #expect(built.schemaObjects.contains(.init(type: "index", name: "t5_code", change: .recreated)))
    }
}
