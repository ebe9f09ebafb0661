import Foundation
import GRDB
@testable import Reseed
import ReseedPackaging
import ReseedTestSupport
import Testing

/// Format 4: a table whose `CREATE` statement changed but whose columns did not (a CHECK list
/// widened, a NOT NULL or a DEFAULT added, as a real registry does from release to release) is
/// rebuilt under its new definition with its rows kept, and travels as its changed rows, not whole.
@Suite struct SeedDeltaRebuildTests {
    /// A schema change (``SeedDeltaSchemaTests/Case``) and the rebuilt table's counts: deleted, updated, inserted, moved.
    struct Case: Sendable, CustomTestStringConvertible {
        var change: SeedDeltaSchemaTests.Case
        var counts: [Int]
        var testDescription: String { change.label }

        init(label: String, schema: String, newSchema: String, old: String, new: String, counts: [Int]) {
            change = .init(label: label, schema: schema, newSchema: newSchema, old: old, new: new)
            self.counts = counts
        }
    }

    static let cases: [Case] = [
        Case(label: "integer primary key, CHECK list widened",
             schema: "CREATE TABLE item (id INTEGER PRIMARY KEY, kind TEXT CHECK (kind IN ('a', 'b')), size INTEGER); CREATE INDEX item_kind ON item (kind); CREATE TRIGGER item_touch AFTER UPDATE ON item BEGIN SELECT 1; END",
             newSchema: "CREATE TABLE item (id INTEGER PRIMARY KEY, kind TEXT CHECK (kind IN ('a', 'b', 'c')), size INTEGER); CREATE INDEX item_kind ON item (kind); CREATE TRIGGER item_touch AFTER UPDATE ON item BEGIN SELECT 1; END",
             old: "INSERT INTO item VALUES (1, 'a', 10), (2, 'b', 20), (3, 'a', NULL), (4, 'b', 4); ANALYZE",
             new: "INSERT INTO item VALUES (1, 'a', 10), (2, 'b', 21), (4, 'b', 4), (5, 'c', 5); ANALYZE",
             counts: [1, 1, 1, 0]),
        Case(label: "key-less table, an insert in the middle",
             schema: "CREATE TABLE alias (name TEXT NOT NULL, source TEXT CHECK (source IN ('EPSG')))",
             newSchema: "CREATE TABLE alias (name TEXT NOT NULL, source TEXT CHECK (source IN ('EPSG', 'ESRI')))",
             old: "INSERT INTO alias (rowid, name, source) VALUES (1, 'a', 'EPSG'), (2, 'b', 'EPSG'), (3, 'c', NULL), (4, 'd', 'EPSG')",
             new: "INSERT INTO alias (rowid, name, source) VALUES (1, 'a', 'EPSG'), (2, 'x', 'ESRI'), (3, 'b', 'EPSG'), (4, 'c', NULL), (5, 'd', 'EPSG')",
             counts: [0, 0, 1, 3]),
        Case(label: "a key holding NULL, CHECK and DEFAULT changed",
             schema: "CREATE TABLE usage (auth TEXT, code TEXT, obj TEXT NOT NULL CHECK (obj IN ('crs')), scope TEXT DEFAULT 'x', PRIMARY KEY (auth, code))",
             newSchema: "CREATE TABLE usage (auth TEXT, code TEXT, obj TEXT NOT NULL CHECK (obj IN ('crs', 'datum')), scope TEXT DEFAULT 'y', PRIMARY KEY (auth, code))",
             old: "INSERT INTO usage VALUES (NULL, NULL, 'crs', 's'), ('E', '1', 'crs', 's'), (NULL, NULL, 'crs', 't')",
             new: "INSERT INTO usage VALUES (NULL, NULL, 'crs', 's'), ('E', '1', 'crs', 's'), ('E', '2', 'datum', 'y'), (NULL, NULL, 'crs', 't')",
             // Matched by rowid, which carries less here than a move: the third row updated, a fourth inserted.
             counts: [0, 1, 1, 0]),
        Case(label: "a trigger and an index naming their table in another case",
             schema: "CREATE TABLE item (id INTEGER PRIMARY KEY, kind TEXT CHECK (kind != '')); CREATE INDEX item_kind ON ITEM (kind); CREATE TRIGGER item_touch AFTER UPDATE ON Item BEGIN SELECT 1; END",
             newSchema: "CREATE TABLE item (id INTEGER PRIMARY KEY, kind TEXT CHECK (kind != '' AND kind != '-')); CREATE INDEX item_kind ON ITEM (kind); CREATE TRIGGER item_touch AFTER UPDATE ON Item BEGIN SELECT 1; END",
             old: "INSERT INTO item VALUES (1, 'a'), (2, 'b')", new: "INSERT INTO item VALUES (1, 'a'), (2, 'c')",
             counts: [0, 1, 0, 0]),
        Case(label: "WITHOUT ROWID, NOT NULL added the rows keep",
             schema: "CREATE TABLE unit (code TEXT PRIMARY KEY, factor REAL) WITHOUT ROWID",
             newSchema: "CREATE TABLE unit (code TEXT PRIMARY KEY, factor REAL NOT NULL) WITHOUT ROWID",
             old: "INSERT INTO unit VALUES ('m', 1.0), ('ft', 0.3048)",
             new: "INSERT INTO unit VALUES ('m', 1.0), ('ft', 0.3048006), ('km', 1000.0)",
             counts: [0, 1, 1, 0]),
    ]

    static func rows(_ path: String, _ sql: String) throws -> [[DatabaseValue]] {
        try DatabaseQueue(path: path).read { try Row.fetchAll($0, sql: sql).map { Array($0.databaseValues) } }
    }

    /// Builds the delta of `sandbox`, forges it with `forge` (SQL run on the delta), applies it to a
    /// copy of the old seed as a publisher checks it and as an app does (incrementally, with the
    /// starting content hash vouched for): each is refused with `code`, its message containing
    /// `message` when given, and leaves the copy as it was.
    static func expectForgedRefused(
        _ sandbox: DeltaSandbox, code: ReseedError.Code, message: String? = nil, expectedContentHash: String? = nil,
        expectedIncremental: String? = nil, sourceLocation: SourceLocation = #_sourceLocation, forge: (Database) throws -> Void
    ) throws {
        guard case .built(let built) = try sandbox.build() else { Issue.record("no delta", sourceLocation: sourceLocation); return }
        try DatabaseQueue(path: sandbox.delta).write(forge)
        let expected = try expectedIncremental ?? IncrementalContentHash.compute(path: sandbox.new).hash
        for incremental in [false, true] {
            try sandbox.copyOld()
            let error = #expect(throws: ReseedError.self, sourceLocation: sourceLocation) {
                try SeedDelta.apply(deltaPath: sandbox.delta, to: sandbox.target, expectedContentHash: expectedContentHash ?? built.toContentHash,
                                    incremental: incremental ? (from: built.fromContentHash, installed: nil, expected: expected) : nil)
            }
            #expect(error?.code == code, "incremental: \(incremental), \(String(describing: error))", sourceLocation: sourceLocation)
            if let message { #expect(error?.message.contains(message) == true, "\(String(describing: error))", sourceLocation: sourceLocation) }
            #expect(try sandbox.hash(sandbox.target) == built.fromContentHash, sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: cases) func aTableWhoseDefinitionChangedKeepsItsRowsAndTravelsAsItsChangedRows(_ rebuild: Case) throws {
        let change = rebuild.change
        let sandbox = try DeltaSandbox(schema: change.schema, old: change.old, new: change.new, newSchema: change.newSchema)
        // Applied as a publisher checks it and as an app does, incrementally: both reach the new seed's content hash.
        let built = try #require(try sandbox.roundTrip())
        #expect(built.format == 4)
        #expect(try SeedDeltaSchemaTests.format(of: sandbox.delta) == 4)
        let table = try #require(built.tables.first { $0.reason == .definitionChangedRowsKept }, "\(built.tables)")
        #expect(table.carries == .rows)
        #expect([table.deleted, table.updated, table.inserted, table.moved] == rebuild.counts, "\(table)")
        let name = table.name
        let rows = change.schema.contains("WITHOUT ROWID") ? "SELECT * FROM \(name) ORDER BY 1" : "SELECT rowid, * FROM \(name) ORDER BY rowid"
        for sql in ["SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY name", rows] {
            #expect(try Self.rows(sandbox.target, sql) == Self.rows(sandbox.new, sql), "\(sql)")
        }
        if change.old.contains("ANALYZE") {
            let stat = "SELECT tbl, idx, stat FROM sqlite_stat1 ORDER BY tbl, idx"
            #expect(try Self.rows(sandbox.target, stat) == Self.rows(sandbox.new, stat))
        }
    }

    /// A NOT NULL the new definition adds, which a row the delta deletes breaks: SQLite refuses the
    /// rows under the new definition, and the table is shipped whole on the next try.
    @Test func aConstraintAnOldRowBreaksShipsTheTableWhole() throws {
        let sandbox = try DeltaSandbox(
            schema: "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT)", old: "INSERT INTO item VALUES (1, 'a'), (2, NULL), (3, 'c')",
            new: "INSERT INTO item VALUES (1, 'a'), (3, 'c'), (4, 'd')", newSchema: "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        let built = try #require(try sandbox.roundTrip())
        #expect(built.format == 2)
        #expect(built.tables == [.init(name: "item", deleted: 0, updated: 0, inserted: 3, carries: .wholeTable, reason: .definitionChanged)])
    }

    /// Another declared type stores values otherwise (its affinity): the table is shipped whole.
    @Test func aColumnWhoseTypeChangedShipsTheTableWhole() throws {
        let sandbox = try DeltaSandbox(
            schema: "CREATE TABLE item (id INTEGER PRIMARY KEY, code INTEGER)", old: "INSERT INTO item VALUES (1, 10), (2, 20)",
            new: "INSERT INTO item VALUES (1, '10'), (2, '20'), (3, '30')", newSchema: "CREATE TABLE item (id INTEGER PRIMARY KEY, code TEXT)")
        let built = try #require(try sandbox.roundTrip())
        #expect(built.tables.map(\.reason) == [.definitionChanged])
    }

    /// A rebuild whose `CREATE` statement (signed, or forged) gives the table other columns is refused, the target as it was.
    @Test func aRebuildIntoOtherColumnsIsRefused() throws {
        let change = Self.cases[0].change
        let forged = "CREATE TABLE item (id INTEGER PRIMARY KEY, kind TEXT CHECK (kind IN ('a', 'b', 'c')), size INTEGER, extra)"
        try Self.expectForgedRefused(
            try DeltaSandbox(schema: change.schema, old: change.old, new: change.new, newSchema: change.newSchema),
            code: .invalidDelta, message: "the delta rebuilds table item with other columns than the seed's"
        ) { try $0.execute(sql: "UPDATE reseed_delta_schema SET sql = ? WHERE action = 'rebuild'", arguments: [forged]) }
    }

    /// A rebuild must leave the rows as they were, to the byte: the incremental check takes the
    /// rebuilt table's rows to be unchanged. Here the new seed declares `code TEXT` over rows that
    /// still hold integers (its schema edited in place, as some apps do), and a rebuild under that
    /// definition would store row 1's code as text, a row no list names: refused as the rows go
    /// back, with and without the incremental check (which would have accepted it otherwise).
    @Test func aRebuildThatStoresARowOtherwiseIsRefusedByTheIncrementalCheckToo() throws {
        let sandbox = try DeltaSandbox(
            schema: "CREATE TABLE item (id INTEGER PRIMARY KEY, code INTEGER, note TEXT CHECK (note != ''))",
            old: "INSERT INTO item VALUES (1, 10, 'a'), (2, NULL, 'b')", new: "INSERT INTO item VALUES (1, 10, 'a'), (2, NULL, 'B')",
            newSchema: "CREATE TABLE item (id INTEGER PRIMARY KEY, code INTEGER, note TEXT CHECK (note != '' AND note != '-'))")
        guard case .built(let built) = try sandbox.build() else { Issue.record("no delta"); return }
        #expect(built.tables.map(\.reason) == [.definitionChangedRowsKept])
        // The new seed's definition edited in place: the rows keep their integers.
        let edited = sandbox.directory.appending("edited.sqlite").path
        try FileManager.default.copyItem(atPath: sandbox.new, toPath: edited)
        let queue = try DatabaseQueue(path: edited)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA writable_schema = ON")
            try db.execute(sql: "UPDATE sqlite_schema SET sql = replace(sql, 'code INTEGER', 'code TEXT') WHERE name = 'item'")
            try db.execute(sql: "PRAGMA writable_schema = OFF")
        }
        try queue.close()
        let editedSQL = try #require(try Self.rows(edited, "SELECT sql FROM sqlite_schema WHERE name = 'item'").first?.first.flatMap { String.fromDatabaseValue($0) })
        #expect(editedSQL.contains("code TEXT"))
        #expect(try Self.rows(edited, "SELECT typeof(code) FROM item WHERE id = 1") == [["integer".databaseValue]])
        let toContentHash = try sandbox.hash(edited)
        try DatabaseQueue(path: sandbox.delta).write { db in
            try db.execute(sql: "UPDATE reseed_delta_schema SET sql = ? WHERE action = 'rebuild'", arguments: [editedSQL])
            try db.execute(sql: "UPDATE reseed_delta SET value = ? WHERE key = 'toContentHash'", arguments: [toContentHash])
        }
        let expected = try IncrementalContentHash.compute(path: edited).hash
        for incremental in [false, true] {
            try sandbox.copyOld()
            let error = #expect(throws: ReseedError.self) {
                try SeedDelta.apply(deltaPath: sandbox.delta, to: sandbox.target, expectedContentHash: toContentHash,
                                    incremental: incremental ? (from: built.fromContentHash, installed: nil, expected: expected) : nil)
            }
            #expect(error?.code == .deltaMismatch, "incremental: \(incremental), \(String(describing: error))")
            #expect(error?.message.contains("table item, its rows under its new definition: SQLite stores them otherwise") == true)
            #expect(try sandbox.hash(sandbox.target) == built.fromContentHash)
        }
    }

    /// Only an ordinary table is rebuilt: a (forged) rebuild of a virtual table is refused, the target as it was.
    @Test func aRebuildOfAVirtualTableIsRefused() throws {
        let change = Self.cases[0].change
        let fullText = "CREATE VIRTUAL TABLE doc USING fts5(body)"
        let sandbox = try DeltaSandbox(schema: change.schema + "; " + fullText, old: change.old + "; INSERT INTO doc VALUES ('hello')",
                                       new: change.new + "; INSERT INTO doc VALUES ('hello')", newSchema: change.newSchema + "; " + fullText)
        try Self.expectForgedRefused(sandbox, code: .invalidDelta, message: "the delta rebuilds doc, which is not an ordinary table") {
            try $0.execute(sql: "INSERT INTO reseed_delta_schema (idx, action, type, name, tbl_name, sql) VALUES (1000, 'rebuild', 'table', 'doc', 'doc', ?)",
                           arguments: [fullText])
        }
    }

    /// A (forged) rebuild that creates the table again as a virtual one is refused before a row goes into it.
    @Test func aRebuildIntoAVirtualTableIsRefused() throws {
        let change = Self.cases[0].change
        try Self.expectForgedRefused(
            try DeltaSandbox(schema: change.schema, old: change.old, new: change.new, newSchema: change.newSchema),
            code: .invalidDelta, message: "the delta rebuilds item as a table that is not an ordinary one"
        ) { try $0.execute(sql: "UPDATE reseed_delta_schema SET sql = 'CREATE VIRTUAL TABLE item USING fts5(id, kind, size)' WHERE action = 'rebuild'") }
    }

    /// An app that reads formats 1 to 3 refuses a format-4 delta before it changes anything, and its update falls back to the full seed.
    @Test func aFormat3ReaderRefusesAFormat4Delta() throws {
        let change = Self.cases[0].change
        let sandbox = try DeltaSandbox(schema: change.schema, old: change.old, new: change.new, newSchema: change.newSchema)
        guard case .built = try sandbox.build() else { Issue.record("no delta"); return }
        let error = #expect(throws: ReseedError.self) {
            try DatabaseQueue(path: sandbox.delta).read { db in
                try SeedDelta.HeaderReader(db: db, schema: "main", path: sandbox.delta, readable: 1...3).read()
            }
        }
        #expect(error?.code == .invalidDelta)
        #expect(error?.message == "the delta has format 4; this Reseed reads formats 1, 2 and 3 only")
    }

    /// A format-3 delta's schema list may not hold a rebuild: only format 4 has them.
    @Test func aRebuildInAnEarlierFormatIsRefused() throws {
        let change = Self.cases[0].change
        let sandbox = try DeltaSandbox(schema: change.schema, old: change.old, new: change.new, newSchema: change.newSchema)
        guard case .built(let built) = try sandbox.build() else { Issue.record("no delta"); return }
        try DatabaseQueue(path: sandbox.delta).write { try $0.execute(sql: "UPDATE reseed_delta SET value = 3 WHERE key = 'format'") }
        try sandbox.copyOld()
        let error = #expect(throws: ReseedError.self) {
            try SeedDelta.apply(deltaPath: sandbox.delta, to: sandbox.target, expectedContentHash: built.toContentHash)
        }
        #expect(error?.code == .invalidDelta)
        #expect(error?.message.contains("the rebuild of table item is not in this format") == true, "\(String(describing: error))")
    }
}
