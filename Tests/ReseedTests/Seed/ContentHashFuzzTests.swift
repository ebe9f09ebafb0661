import Foundation
import GRDB
import Reseed
import ReseedTestSupport
import Testing

/// Random small databases: a `VACUUM INTO` copy hashes the same, and any one value changed changes the hash.
@Suite struct ContentHashFuzzTests {
    /// One random table: its name, its key columns, its other columns, and SQL to create it.
    struct Table {
        var name: String
        var key: [String]
        var columns: [String]
        var withoutRowid: Bool
        var integerKey: Bool
    }

    static func value(_ random: inout SplitMix64) -> DatabaseValue {
        switch random.int(0..<6) {
        case 0: return .null
        case 1: return Int64(bitPattern: random.next() >> UInt64(random.int(0..<64))).databaseValue
        case 2:
            // Any bits but NaN, which SQLite stores as NULL; -0.0 and infinities included.
            var bits = random.next() >> UInt64(random.pick([0, 0, 1, 12]))
            if Double(bitPattern: bits).isNaN { bits = 0x8000_0000_0000_0000 }
            return Double(bitPattern: bits).databaseValue
        case 3: return Int64(random.int(-3..<4)).databaseValue
        case 4:
            let alphabet = Array("ab1 .é€😀\u{0}Z")
            return String((0..<random.int(0..<6)).map { _ in random.pick(alphabet) }).databaseValue
        default: return Data((0..<random.int(0..<6)).map { _ in UInt8(random.int(0..<256)) }).databaseValue
        }
    }

    static func makeTables(_ random: inout SplitMix64) -> [Table] {
        (0..<random.int(1..<4)).map { index in
            let columns = (0..<random.int(1..<4)).map { "c\($0)" }
            switch random.int(0..<4) {
            case 0: return Table(name: "t\(index)", key: ["id"], columns: columns, withoutRowid: false, integerKey: true)
            case 1: return Table(name: "t\(index)", key: ["k"], columns: columns, withoutRowid: false, integerKey: false)
            case 2: return Table(name: "t\(index)", key: ["k", "j"], columns: columns, withoutRowid: true, integerKey: false)
            default: return Table(name: "t\(index)", key: [], columns: columns, withoutRowid: false, integerKey: false)
            }
        }
    }

    static func createSQL(_ table: Table, _ random: inout SplitMix64) -> String {
        let types = ["", " INTEGER", " REAL", " TEXT", " BLOB", " NUMERIC"]
        // A key column declared INTEGER alone would be the rowid, which holds no text keys.
        var parts = table.integerKey ? ["id INTEGER PRIMARY KEY"] : table.key.map { $0 + random.pick(types.filter { $0 != " INTEGER" }) }
        parts += table.columns.map { $0 + random.pick(types) }
        if !table.key.isEmpty && !table.integerKey { parts.append("PRIMARY KEY (\(table.key.joined(separator: ", ")))") }
        return "CREATE TABLE \(table.name) (\(parts.joined(separator: ", ")))\(table.withoutRowid ? " WITHOUT ROWID" : "")"
    }

    @Test func vacuumedCopyHashesTheSameAndOneChangedValueDoesNot() throws {
        let sandbox = try TemporaryDirectory()
        var random = SplitMix64(seed: 0x5EED_C0DE)
        var changesChecked = 0
        for round in 0..<60 {
            let url = sandbox.appending("random-\(round).sqlite")
            let tables = Self.makeTables(&random)
            let queue = try DatabaseQueue(path: url.path)
            try queue.write { db in
                for table in tables {
                    try db.execute(sql: Self.createSQL(table, &random))
                    if random.chance(0.3) { try db.execute(sql: "CREATE INDEX \(table.name)_i ON \(table.name) (\(table.columns[0]))") }
                    for row in 0..<random.int(0..<15) {
                        let names = (table.integerKey ? ["id"] : table.key) + table.columns
                        var values = table.columns.map { _ in Self.value(&random) }
                        // Unique keys: the row number, as an integer or as text.
                        if table.integerKey { values.insert(Int64(row * 7 - 20).databaseValue, at: 0) }
                        else if !table.key.isEmpty {
                            values.insert(contentsOf: table.key.map { _ in (random.chance(0.5) ? "r\(row)" : "\(row)").databaseValue }, at: 0)
                        }
                        let marks = Array(repeating: "?", count: names.count).joined(separator: ", ")
                        try db.execute(sql: "INSERT OR IGNORE INTO \(table.name) (\(names.joined(separator: ", "))) VALUES (\(marks))",
                                       arguments: StatementArguments(values))
                    }
                }
            }
            let copy = sandbox.appending("copy-\(round).sqlite")
            try queue.writeWithoutTransaction { try $0.execute(sql: "VACUUM INTO ?", arguments: [copy.path]) }
            let original = try SeedContentHash.compute(path: url.path)
            #expect(try SeedContentHash.compute(path: copy.path) == original, "round \(round)")

            // One value of one row becomes a text no generator makes: whatever the column's affinity, it differs.
            let filled = try queue.read { db in try tables.filter { try Int.fetchOne(db, sql: "SELECT count(*) FROM \($0.name)") ?? 0 > 0 } }
            guard !filled.isEmpty else { continue }
            let table = random.pick(filled)
            let column = random.pick((table.integerKey ? [] : table.key) + table.columns)
            let changed = try queue.write { db -> Int in
                let offset = random.int(0..<(try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table.name)") ?? 1))
                let row = table.withoutRowid ? "(\(table.key.joined(separator: ", "))) = (SELECT \(table.key.joined(separator: ", ")) FROM \(table.name) LIMIT 1 OFFSET \(offset))"
                    : "rowid = (SELECT rowid FROM \(table.name) LIMIT 1 OFFSET \(offset))"
                try db.execute(sql: "UPDATE \(table.name) SET \(column) = 'changed-\(round)' WHERE \(row)")
                return db.changesCount
            }
            try queue.close()
            #expect(changed == 1)
            #expect(try SeedContentHash.compute(path: url.path) != original, "round \(round): \(table.name).\(column)")
            changesChecked += 1
        }
        #expect(changesChecked > 30)
    }
}
