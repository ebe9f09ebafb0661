import Foundation
import GRDB
import ReseedPackaging
import Testing

@Suite struct JSONStepTests {
    @Test func valuesMapToSQLiteTypes() throws {
        let sandbox = try MigrationsSandbox([
            "0001_schema.sql": "CREATE TABLE thing (id INTEGER PRIMARY KEY, a, b, c, d, e, f, g);",
            "0002_thing.json": """
                [{"id": 1, "a": null, "b": true, "c": false, "d": 9007199254740993, "e": 2.5, "f": "text", "g": {"k": [1, 2]}},
                 {"id": 2, "a": 1e3, "g": [ "x", {"y": null} ]}]
                """,
        ])
        let result = try sandbox.build()
        let rows = try sandbox.read(result) { try Row.fetchAll($0, sql: "SELECT *, typeof(a) AS ta, typeof(d) AS td, typeof(e) AS te FROM thing ORDER BY id") }
        #expect(rows[0]["ta"] as String == "null")
        #expect(rows[0]["b"] as Int == 1)
        #expect(rows[0]["c"] as Int == 0)
        #expect(rows[0]["td"] as String == "integer")
        #expect(rows[0]["d"] as Int64 == 9_007_199_254_740_993)
        #expect(rows[0]["te"] as String == "real")
        #expect(rows[0]["f"] as String == "text")
        #expect(rows[0]["g"] as String == "{\"k\": [1, 2]}")
        #expect(rows[1]["ta"] as String == "real")
        #expect(rows[1]["g"] as String == "[ \"x\", {\"y\": null} ]")
    }

    @Test func unknownKeyIsNamedWithTheElementIndex() throws {
        let sandbox = try MigrationsSandbox([
            "0001_schema.sql": itemSchema,
            "0002_item.json": "[\n  {\"id\": 1},\n  {\"id\": 2, \"colour\": \"red\"}\n]",
        ])
        let error = try #require(buildError(sandbox))
        #expect(error.code == .unknownColumn)
        #expect(error.message.contains("element 1"))
        #expect(error.message.contains("'colour'"))
        #expect(error.line == 3)
    }

    @Test(arguments: ["{\"id\": 1}", "[1, 2]", "[{\"id\": 1},]", "nul"])
    func notAnArrayOfObjectsIsRejected(json: String) throws {
        let sandbox = try MigrationsSandbox(["0001_schema.sql": itemSchema, "0002_item.json": json])
        let error = try #require(buildError(sandbox))
        #expect(error.code == .invalidJSON)
        #expect(error.path?.hasSuffix("0002_item.json") == true)
    }
}
