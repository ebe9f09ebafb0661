import Foundation
import GRDB
@testable import Reseed
import ReseedPackaging
import ReseedTestSupport
import Testing

/// A format-2 delta is signed, yet its SQL is treated as hostile: each edit of its schema list below
/// is refused before the commit, and the seed is left as it was.
@Suite struct SeedDeltaHostileSchemaTests {
    static let schema = "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT); CREATE TABLE keep (id INTEGER PRIMARY KEY)"
    static let newSchema = schema + """
        ; CREATE TABLE tag (k TEXT PRIMARY KEY, v); CREATE INDEX tag_v ON tag (v); CREATE VIEW tags AS SELECT k FROM tag;
        CREATE TRIGGER item_named AFTER INSERT ON item BEGIN SELECT 1; END
        """

    /// An edit of the delta's schema list and the error code the apply must refuse it with.
    struct Damage: Sendable, CustomTestStringConvertible {
        var label: String
        var sql: String
        var code: ReseedError.Code = .invalidDelta
        var testDescription: String { label }
    }

    static func setSQL(of name: String, to sql: String) -> String {
        "UPDATE reseed_delta_schema SET sql = '\(sql.replacingOccurrences(of: "'", with: "''"))' WHERE name = '\(name)' AND action = 'create'"
    }

    static let damages: [Damage] = [
        Damage(label: "a second statement after the table", sql: setSQL(of: "tag", to: "CREATE TABLE tag (k TEXT PRIMARY KEY, v); DROP TABLE keep")),
        Damage(label: "a trigger named otherwise", sql: setSQL(of: "item_named", to: "CREATE TRIGGER other AFTER INSERT ON item BEGIN SELECT 1; END")),
        Damage(label: "a trigger whose body drops a table", sql: setSQL(of: "item_named", to: "CREATE TRIGGER item_named AFTER INSERT ON item BEGIN DELETE FROM keep; END; DROP TABLE keep")),
        Damage(label: "a table created from a query", sql: setSQL(of: "tag", to: "CREATE TABLE tag AS SELECT id AS k, name AS v FROM item")),
        Damage(label: "an index on another table than its entry says", sql: setSQL(of: "tag_v", to: "CREATE INDEX tag_v ON keep (id)")),
        Damage(label: "a view in place of the index", sql: setSQL(of: "tag_v", to: "CREATE VIEW tag_v AS SELECT 1")),
        Damage(label: "a temporary trigger", sql: setSQL(of: "item_named", to: "CREATE TEMP TRIGGER item_named AFTER INSERT ON item BEGIN SELECT 1; END")),
        Damage(label: "a comment hiding the kind", sql: setSQL(of: "tag", to: "CREATE /* VIRTUAL */ TABLE tag (k TEXT PRIMARY KEY, v)")),
        Damage(label: "a schema-qualified name", sql: setSQL(of: "tag", to: "CREATE TABLE main.tag (k TEXT PRIMARY KEY, v)")),
        Damage(label: "an unknown module", sql: setSQL(of: "tag", to: "CREATE VIRTUAL TABLE tag USING dbstat")),
        Damage(label: "a module hidden behind a comment", sql: setSQL(of: "tag", to: "CREATE VIRTUAL TABLE tag USING /* fts5 */ fts5vocab(item, row)")),
        Damage(label: "an entry over the size bound",
               sql: "UPDATE reseed_delta_schema SET sql = 'CREATE VIEW tags AS SELECT ''' || printf('%.*c', 1048576, 'x') || '''' WHERE name = 'tags'"),
        Damage(label: "SQLite's own table", sql: "UPDATE reseed_delta_schema SET name = 'sqlite_schema', tbl_name = 'sqlite_schema' WHERE name = 'tags'"),
        Damage(label: "a drop of a table the seed lacks",
               sql: "INSERT INTO reseed_delta_schema (idx, action, type, name, tbl_name) VALUES (99, 'drop', 'table', 'missing', 'missing')", code: .deltaMismatch),
        Damage(label: "a drop of another kind than the object",
               sql: "INSERT INTO reseed_delta_schema (idx, action, type, name, tbl_name) VALUES (99, 'drop', 'index', 'keep', 'keep')", code: .deltaMismatch),
        Damage(label: "a drop carrying SQL",
               sql: "INSERT INTO reseed_delta_schema (idx, action, type, name, tbl_name, sql) VALUES (99, 'drop', 'table', 'keep', 'keep', 'DROP TABLE item')"),
        Damage(label: "an unknown action", sql: "UPDATE reseed_delta_schema SET action = 'run' WHERE name = 'tags'"),
        Damage(label: "the schema list gone", sql: "DROP TABLE reseed_delta_schema"),
    ]

    @Test(arguments: damages) func aHostileSchemaListIsRefusedAndTheSeedIsUnchanged(_ damage: Damage) throws {
        let sandbox = try DeltaSandbox(
            schema: Self.schema, old: "INSERT INTO item VALUES (1, 'a'); INSERT INTO keep VALUES (1)",
            new: "INSERT INTO item VALUES (1, 'a'), (2, 'b'); INSERT INTO keep VALUES (1); INSERT INTO tag VALUES ('x', 1)", newSchema: Self.newSchema)
        guard case .built(let built) = try sandbox.build() else { Issue.record("no delta"); return }
        #expect(built.format == 2)
        try sandbox.execute(sandbox.delta, damage.sql)
        try sandbox.copyOld()
        let before = try Data(contentsOf: URL(fileURLWithPath: sandbox.target))
        let error = #expect(throws: ReseedError.self) {
            try SeedDelta.apply(deltaPath: sandbox.delta, to: sandbox.target, expectedContentHash: built.toContentHash)
        }
        #expect(error?.code == damage.code, "\(String(describing: error))")
        #expect(try Data(contentsOf: URL(fileURLWithPath: sandbox.target)) == before)
        #expect(try sandbox.hash(sandbox.target) == built.fromContentHash)
    }

    @Test func theStatementCheckReadsOnlyWhatTheEntryClaims() {
        typealias Kind = SeedDelta.SchemaChange.Kind
        let accepted: [(String, Kind, String, String?)] = [
            ("CREATE TABLE \"odd name\" (a)", .table, "odd name", nil),
            ("CREATE VIRTUAL TABLE doc USING fts5(body)", .table, "doc", "fts5"),
            ("CREATE VIRTUAL TABLE [p] USING \"rtree\"(id, a, b)", .table, "p", "rtree"),
            ("CREATE UNIQUE INDEX `i` ON t (a)", .index, "i", nil),
            ("create view v as select 1", .view, "v", nil),
            ("CREATE TRIGGER t2 AFTER INSERT ON t BEGIN SELECT 1; END", .trigger, "t2", nil),
        ]
        for (sql, kind, name, module) in accepted {
            #expect((try? CreateStatement.check(sql, kind: kind, name: name).get()) == .some(module), "\(sql)")
        }
        let refused: [(String, Kind, String)] = [
            ("CREATE TABLE IF NOT EXISTS t (a)", .table, "t"),
            ("CREATE TEMP TABLE t (a)", .table, "t"),
            ("CREATE TABLE t.x (a)", .table, "t"),
            ("CREATE TABLE t", .table, "t"),
            ("CREATE INDEX i ON t (a)", .trigger, "i"),
            ("CREATE VIRTUAL TABLE d USING fts5(body, content='')", .table, "d"),
            ("CREATE VIRTUAL TABLE d USING fts5vocab(a, b)", .table, "d"),
            ("-- x\nCREATE TABLE t (a)", .table, "t"),
            ("CREATE TABLE T (a)", .table, "t"),
        ]
        for (sql, kind, name) in refused {
            #expect(throws: CreateStatement.Refused.self, "\(sql)") { try CreateStatement.check(sql, kind: kind, name: name).get() }
        }
    }
}
