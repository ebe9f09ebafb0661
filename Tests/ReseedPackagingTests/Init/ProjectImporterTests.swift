import Foundation
import GRDB
import GRDBSQLite
import Reseed
@testable import ReseedPackaging
import ReseedSystem
import ReseedTestSupport
import Synchronization
import Testing

/// `reseed init --from`'s library: a database → steps → a seed with the same rows, bit for bit.
@Suite struct ProjectImporterTests {
    /// A project folder with a source database written by `sql` (and `values`, bound in order).
    struct Project {
        let directory: TemporaryDirectory
        var source: URL { directory.appending("source.sqlite") }
        var seed: URL { directory.appending("SeedData/source.sqlite") }

        init(_ sql: String, arguments: StatementArguments = []) throws {
            directory = try TemporaryDirectory(prefix: "reseed-init")
            let queue = try DatabaseQueue(path: directory.appending("source.sqlite").path)
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA foreign_keys = OFF")
                try db.execute(sql: sql, arguments: arguments)
            }
            try queue.close()
        }

        func importer() -> ProjectImporter {
            ProjectImporter(source: source, directory: directory.url, name: "source")
        }

        /// init, then package with what reseed.json says.
        @discardableResult
        func initAndPackage() throws -> ProjectImporter.Result {
            let result = try importer().run()
            _ = try SeedBuilder(migrations: directory.appending("Migrations"), output: directory.appending("SeedData"),
                                name: "source", version: "1.0.0").build()
            return result
        }

        func names() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: directory.url.path).sorted()
        }
    }

    /// Every row of every user table, rowid included, each value as its storage type and exact
    /// bytes (a REAL by its bit pattern), and `sqlite_sequence`: what must survive the round trip.
    static func snapshot(_ url: URL) throws -> [String: [String]] {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: url.path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in
            var tables: [String: [String]] = [:]
            let names = try Row.fetchAll(db, sql: "SELECT name, wr FROM pragma_table_list WHERE schema = 'main' AND type = 'table' AND name NOT LIKE 'reseed!_%' ESCAPE '!' AND name NOT IN ('sqlite_schema', 'sqlite_temp_schema')")
            for row in names {
                let name: String = row["name"]
                let withoutRowid: Bool = row["wr"]
                let columns = try String.fetchAll(db, sql: "SELECT name FROM pragma_table_xinfo(?) WHERE hidden = 0", arguments: [name])
                let selected = (withoutRowid ? [] : ["_rowid_"]) + columns.map(\.quotedIdentifier)
                var lines: [String] = []
                try forEachRow(db, "SELECT \(selected.joined(separator: ", ")) FROM \(name.quotedIdentifier) ORDER BY 1") { handle in
                    lines.append(selected.indices.map { describe(StoredValue(handle, column: Int32($0))) }.joined(separator: " | "))
                    return true
                }
                tables[name] = lines
            }
            return tables
        }
    }

    static func describe(_ value: StoredValue) -> String {
        switch value {
        case .null: "null"
        case .integer(let integer): "integer \(integer)"
        case .real(let real): "real \(String(real.bitPattern, radix: 16)) (\(real))"
        case .text(let bytes): "text \(lowercaseHex(bytes))"
        case .blob(let bytes): "blob \(lowercaseHex(bytes))"
        }
    }

    /// The reals that are hard to carry: signed zero, subnormals, the extremes, 17-digit values,
    /// infinities, and ones SQLite 3.40 reads one bit off from their shortest decimal form.
    static let nastyReals: [Double] = [
        -0.0, 0.0, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, Double.leastNormalMagnitude.nextDown, .leastNormalMagnitude, 1e308, -1.7976931348623157e308,
        0.1, 1.0 / 3.0, 123456789.12345678, 9007199254740993.0, 0x1p63, -0x1p63, 1e-5, 100.0,
        -2.2606631148481385e-299, 1.829402849984213e-298, .infinity, -.infinity,
    ]

    static let nastyTexts: [String] = ["", "a,b", "say \"hi\"", "line\nbreak", "cr\rlf\r\n", "nul\u{0}inside", "'quoted'", " 42 ", "42", "1e5", "ünïcødé ✓", "-", "NULL"]

    @Test func roundTripKeepsEveryValueAndItsStorageType() throws {
        let project = try Project("""
            CREATE TABLE category(id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE, icon BLOB);
            CREATE TABLE item(id INTEGER PRIMARY KEY, category_id INTEGER NOT NULL REFERENCES category(id), label TEXT, weight REAL, amount NUMERIC, anything);
            CREATE TABLE note(item_id INTEGER REFERENCES item(id), body TEXT, PRIMARY KEY(item_id, body)) WITHOUT ROWID;
            CREATE TABLE loose(a, b TEXT);
            CREATE TABLE tree(id INTEGER PRIMARY KEY, parent INTEGER REFERENCES tree(id));
            CREATE TABLE strict_values(i INTEGER, r REAL, t TEXT, b BLOB, x ANY) STRICT;
            CREATE TABLE computed(a INTEGER, twice INTEGER GENERATED ALWAYS AS (a * 2) STORED);
            CREATE TABLE empty(a);
            CREATE INDEX item_category ON item(category_id);
            CREATE VIEW heavy AS SELECT * FROM item WHERE weight > 1;
            CREATE TRIGGER item_added AFTER INSERT ON item BEGIN UPDATE category SET name = name || '+' WHERE id = new.category_id; END;
            INSERT INTO category(name, icon) VALUES ('first', X'00FF10'), ('second', X''), ('third', NULL);
            DELETE FROM category WHERE name = 'third';
            INSERT INTO tree VALUES (1, 3), (2, 1), (3, NULL);
            INSERT INTO loose(rowid, a, b) VALUES (5, 1, 'x'), (9, 'text', NULL), (12, X'AB', ''), (20, CAST(X'FF00FE' AS TEXT), 'x');
            INSERT INTO computed(a) VALUES (1), (2);
            PRAGMA user_version = 12;
            """)
        let queue = try DatabaseQueue(path: project.source.path)
        try queue.write { db in
            for (index, real) in Self.nastyReals.enumerated() {
                let text = Self.nastyTexts[index % Self.nastyTexts.count]
                try db.execute(sql: "INSERT INTO item(category_id, label, weight, amount, anything) VALUES (?, ?, ?, ?, ?)",
                               arguments: [1 + index % 2, text, real, index % 3 == 0 ? real : (index % 3 == 1 ? Int64.min + Int64(index) : text), index % 2 == 0 ? real : Data(text.utf8)])
                try db.execute(sql: "INSERT INTO note VALUES (?, ?)", arguments: [index + 1, text])
                try db.execute(sql: "INSERT INTO strict_values VALUES (?, ?, ?, ?, ?)",
                               arguments: [Int64.max - Int64(index), real, text, Data([UInt8(index), 0]), index % 2 == 0 ? real : text])
            }
            try db.execute(sql: "INSERT INTO item(category_id, label, weight) VALUES (2, ?, ?)", arguments: [Double.nan, Double.nan])
        }
        try queue.close()
        let before = try Self.snapshot(project.source)

        let result = try project.initAndPackage()

        #expect(result.steps.first?.fileName == "0001_schema.sql")
        #expect(result.steps.last?.fileName.hasSuffix("_indexes_views_triggers.sql") == true)
        let files = result.steps.map(\.fileName)
        // Parents first: category before item before note; the empty table has no step.
        let position = { (table: String) in files.firstIndex { $0.dropFirst(5).hasPrefix(table + ".") } }
        #expect(try #require(position("category")) < #require(position("item")))
        #expect(try #require(position("item")) < #require(position("note")))
        #expect(position("empty") == nil)
        #expect(files.contains { $0.hasSuffix("_computed.csv") })
        #expect(result.notCarried.isEmpty)
        #expect(try AdoptionCorpusTests.configuredHeader(project.directory.appending("reseed.json")) == (12, nil))
        let diff = try SeedDiff.compare(old: project.source, new: project.seed)
        #expect(diff.isEmpty, "\(diff.renderText())")
        let after = try Self.snapshot(project.seed)
        #expect(after == before)
        // The trigger exists in the seed and did not fire while the rows loaded.
        let seed = try DatabaseQueue(path: project.seed.path)
        defer { try? seed.close() }
        let (name, objects, sequence) = try seed.read { db in
            (try String.fetchOne(db, sql: "SELECT name FROM category WHERE id = 1"),
             try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_schema WHERE name IN ('item_added', 'heavy', 'item_category')"),
             try Int.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'category'"))
        }
        // Fired once per item in the source (ten of category 1), never while the seed was built.
        #expect(name == "first" + String(repeating: "+", count: 10))
        #expect(objects == 3)
        #expect(sequence == 3)
    }

    @Test func aSeedIsImportedWithoutReseedsOwnTables() throws {
        let first = try Project("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a');")
        try first.initAndPackage()
        let second = try TemporaryDirectory(prefix: "reseed-init-again")
        let result = try ProjectImporter(source: first.seed, directory: second.url, name: "again").run()
        #expect(result.steps.map(\.fileName) == ["0001_schema.sql", "0002_t.csv"])
        #expect(try String(contentsOf: second.appending("Migrations/0001_schema.sql"), encoding: .utf8) == "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);\n")
        #expect(result.notCarried.isEmpty)
    }

    @Test(arguments: ["reseed.json", "Migrations"])
    func refusesToOverwriteAndWritesNothing(existing: String) throws {
        let project = try Project("CREATE TABLE t(a); INSERT INTO t VALUES (1);")
        if existing == "Migrations" {
            try FileManager.default.createDirectory(at: project.directory.appending(existing), withIntermediateDirectories: false)
        } else {
            try Data("{}".utf8).write(to: project.directory.appending(existing))
        }
        let before = try project.names()
        let error = try #require(throws: PackagingError.self) { try project.importer().run() }
        #expect(error.code == .alreadyExists)
        #expect(error.path == project.directory.appending(existing).path)
        #expect(try project.names() == before)
    }

    /// Fails the first rename to `path`: the one that puts the new `reseed.json` in place, after the
    /// new `Migrations/` went in (the rename that puts the old one back then succeeds).
    final class FailingRename: FileSystemObserver {
        let path: String
        private let failed = Mutex(false)
        init(path: String) { self.path = path }
        func willPerform(_ action: FileAction) throws {
            guard action.kind == .rename, action.path == path, !failed.withLock({ $0 }) else { return }
            failed.withLock { $0 = true }
            throw FileSystemFailure(operation: "rename", path: path, errno: .ioError)
        }
        func didPerform(_ action: FileAction) throws {}
    }

    @Test func forceThatFailsHalfwayPutsTheOldProjectBack() throws {
        let project = try Project("CREATE TABLE t(a); INSERT INTO t VALUES (1);")
        let migrations = project.directory.appending("Migrations")
        try FileManager.default.createDirectory(at: migrations, withIntermediateDirectories: false)
        try Data("CREATE TABLE old(a);\n".utf8).write(to: migrations.appendingPathComponent("0001_old.sql"))
        try Data("{\"name\": \"mine\"}".utf8).write(to: project.directory.appending("reseed.json"))
        let before = try project.names()
        var importer = project.importer()
        importer.force = true
        importer.fileSystem = FileSystem(observer: FailingRename(path: project.directory.appending("reseed.json").path))
        let error = try #require(throws: PackagingError.self) { try importer.run() }
        #expect(error.errno == .ioError)
        #expect(try project.names() == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: migrations.path) == ["0001_old.sql"])
        #expect(try String(contentsOf: project.directory.appending("reseed.json"), encoding: .utf8) == "{\"name\": \"mine\"}")

        importer.fileSystem = FileSystem()
        let result = try importer.run()
        #expect(result.steps.map(\.fileName) == ["0001_schema.sql", "0002_t.sql"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: migrations.path).sorted() == ["0001_schema.sql", "0002_t.sql"])
        #expect(try project.names() == before)
    }

    @Test func createsAMissingDirectoryWithItsParents() throws {
        let project = try Project("CREATE TABLE t(a); INSERT INTO t VALUES (1);")
        var importer = project.importer()
        importer.directory = project.directory.appending("a/b/c")
        _ = try importer.run()
        #expect(try FileManager.default.contentsOfDirectory(atPath: importer.directory.path).sorted() == ["Migrations", "reseed.json"])
    }

    @Test func refusesWhatIsNotADatabase() throws {
        let project = try Project("CREATE TABLE t(a);")
        let before = try project.names()
        func refusal(_ source: URL) throws -> PackagingError {
            var importer = project.importer()
            importer.source = source
            return try #require(throws: PackagingError.self) { try importer.run() }
        }
        let missing = try refusal(project.directory.appending("missing.sqlite"))
        #expect(missing.errno == .noSuchFileOrDirectory)
        #expect(missing.path == project.directory.appending("missing.sqlite").path)
        let text = project.directory.appending("notes.txt")
        try Data("just some text, longer than a header".utf8).write(to: text)
        #expect(try refusal(text).message.contains("not a SQLite database"))
        let fifo = project.directory.appending("pipe.sqlite")
        try #require(mkfifo(fifo.path, 0o644) == 0)
        // Opened without blocking: no writer ever comes.
        #expect(try refusal(fifo).message.contains("not a regular file"))
        #expect(try refusal(project.directory.url).message.contains("not a regular file"))
        // Nothing written: no reseed.json, no Migrations/, no temp folder.
        #expect(try project.names() == (before + ["notes.txt", "pipe.sqlite"]).sorted())
    }

    @Test func refusesRowsThatBreakAForeignKey() throws {
        let project = try Project("""
            CREATE TABLE parent(id INTEGER PRIMARY KEY);
            CREATE TABLE child(id INTEGER PRIMARY KEY, parent_id REFERENCES parent(id));
            INSERT INTO child VALUES (1, 99);
            """)
        let error = try #require(throws: PackagingError.self) { try project.importer().run() }
        #expect(error.code == .notImportable)
        #expect(error.message.contains("table 'child': rowid 1 names a missing row of 'parent'"))
    }

    /// Tables whose rowid is no column's (no alias) but is observable: an external-content FTS5
    /// index keyed on it, a trigger that writes it, a CHECK constraint (which `VACUUM INTO` on a
    /// read-only connection renumbers), columns that take some of its names.
    @Test func rowidsThatAreNotAnAliasSurviveInitAndPackage() throws {
        let project = try Project("""
            CREATE TABLE doc(id INTEGER PRIMARY KEY DESC, body TEXT);
            INSERT INTO doc VALUES (1, 'gone'), (2, 'gone'), (40, 'd'), (7, 'a b'), (12, 'c');
            DELETE FROM doc WHERE body = 'gone';
            CREATE VIRTUAL TABLE doc_rowid USING fts5(body, content='doc');
            INSERT INTO doc_rowid(doc_rowid) VALUES ('rebuild');
            CREATE TABLE keyed(id INTEGER PRIMARY KEY DESC, body TEXT);
            INSERT INTO keyed VALUES (1, 'gone'), (40, 'd'), (7, 'a b');
            DELETE FROM keyed WHERE body = 'gone';
            CREATE VIRTUAL TABLE keyed_id USING fts5(body, content='keyed', content_rowid='id');
            INSERT INTO keyed_id(keyed_id) VALUES ('rebuild');
            CREATE TABLE plain(body TEXT);
            INSERT INTO plain(rowid, body) VALUES (40, 'd'), (5, 'x y');
            CREATE VIRTUAL TABLE plain_index USING fts5(body, content='plain');
            INSERT INTO plain_index(plain_index) VALUES ('rebuild');
            CREATE TABLE checked(x TEXT CHECK (x <> ''), n INT PRIMARY KEY);
            INSERT INTO checked(rowid, x, n) VALUES (90, 'z', 1), (3, 'a', 2), (50, 'm', 3);
            CREATE TABLE named("rowid" TEXT, oid TEXT, v);
            INSERT INTO named(_rowid_, "rowid", oid, v) VALUES (9, 'r', 'o', 1), (3, 'r3', 'o3', 2);
            CREATE TABLE audit(changed INTEGER);
            CREATE TRIGGER plain_changed AFTER UPDATE ON plain BEGIN INSERT INTO audit VALUES (old.rowid); END;
            """)
        let before = try Self.snapshot(project.source)
        func answers(_ url: URL) throws -> [String] {
            let queue = try DatabaseQueue(path: url.path)
            defer { try? queue.close() }
            return try queue.write { db in
                try db.execute(sql: "UPDATE plain SET body = body WHERE body = 'd'")
                return try ["doc_rowid", "keyed_id", "plain_index"].map { index in
                    try String.fetchAll(db, sql: "SELECT rowid || ':' || body FROM \(index) WHERE \(index) MATCH 'd'").joined(separator: ",")
                } + [try String.fetchAll(db, sql: "SELECT changed FROM audit").joined(separator: ",")]
            }
        }

        try project.initAndPackage()

        #expect(try Self.snapshot(project.seed) == before)
        let expected = ["3:d", "40:d", "40:d", "40"]
        #expect(try answers(project.source) == expected)
        #expect(try answers(project.seed) == expected)
    }

    /// Key-less tables with a CHECK, a UNIQUE constraint and generated columns, their rowids out
    /// of order and with gaps (as in PROJ's `alias_name`): the seed holds the source's rowids.
    @Test func rowidsOfKeylessTablesWithConstraintsAndGeneratedColumnsSurviveInitAndPackage() throws {
        let project = try Project("""
            CREATE TABLE alias(name TEXT NOT NULL CHECK (length(name) >= 2), code TEXT UNIQUE,
                                shout TEXT AS (upper(name)) VIRTUAL, size INTEGER AS (length(name)) STORED);
            INSERT INTO alias(rowid, name, code) VALUES (19310, 'last', 'z'), (3, 'third', 'c'), (1, 'first', 'a'), (40, 'gone', 'g'), (41, 'kept', 'k');
            DELETE FROM alias WHERE name = 'gone';
            CREATE TABLE counted(n INTEGER CHECK (n > 0), UNIQUE (n));
            INSERT INTO counted(rowid, n) VALUES (2, 20), (1, 10), (4, 40);
            """)
        let before = try Self.snapshot(project.source)
        #expect(before["alias"]?.map { $0.prefix(while: { $0 != "|" }) } == ["integer 1 ", "integer 3 ", "integer 41 ", "integer 19310 "])
        try project.initAndPackage()
        #expect(try Self.snapshot(project.seed) == before)
        let queue = try DatabaseQueue(path: project.seed.path)
        defer { try? queue.close() }
        #expect(try queue.read { try String.fetchAll($0, sql: "SELECT rowid || ':' || shout || ':' || size FROM alias ORDER BY rowid") }
            == ["1:FIRST:5", "3:THIRD:5", "41:KEPT:4", "19310:LAST:4"])
    }

    @Test func aTableWhoseColumnsTakeEveryRowidNameIsRefused() throws {
        let project = try Project("CREATE TABLE hidden(rowid, _rowid_, oid); CREATE TABLE fine(a); INSERT INTO fine VALUES (1);")
        let before = try project.names()
        let error = try #require(throws: PackagingError.self) { try project.importer().run() }
        #expect(error.code == .notImportable)
        #expect(error.path == project.source.path)
        #expect(error.message.hasPrefix("table 'hidden' has columns named rowid, _rowid_ and oid and no INTEGER PRIMARY KEY"))
        #expect(try project.names() == before)
        // With an INTEGER PRIMARY KEY the rowid is that column: carried.
        let keyed = try Project("CREATE TABLE hidden(id INTEGER PRIMARY KEY, rowid, _rowid_, oid); INSERT INTO hidden VALUES (40, 1, 2, 3);")
        try keyed.initAndPackage()
        #expect(try Self.snapshot(keyed.seed) == Self.snapshot(keyed.source))
    }

    /// A CSV file's first bytes U+FEFF are read as a byte order mark and dropped.
    @Test func aFirstColumnNameThatStartsWithAByteOrderMarkIsCarried() throws {
        let project = try Project("CREATE TABLE marked(\"\u{FEFF}name\" TEXT, n INTEGER); INSERT INTO marked VALUES ('a', 1), ('b', 2);")
        let result = try project.initAndPackage()
        let step = try #require(result.steps.first { $0.fileName.hasSuffix("_marked.sql") })
        #expect(step.sqlBecause?.contains("U+FEFF") == true)
        #expect(try Self.snapshot(project.seed) == Self.snapshot(project.source))
        let queue = try DatabaseQueue(path: project.seed.path)
        defer { try? queue.close() }
        #expect(try queue.read { try String.fetchAll($0, sql: "SELECT name FROM pragma_table_info('marked')") } == ["\u{FEFF}name", "n"])
    }

    @Test func foreignKeyCyclesShareOneDeferredStep() throws {
        let project = try Project("""
            CREATE TABLE a(id INTEGER PRIMARY KEY, b_id REFERENCES b(id));
            CREATE TABLE b(id INTEGER PRIMARY KEY, a_id REFERENCES a(id));
            CREATE TABLE c(id INTEGER PRIMARY KEY, a_id INTEGER REFERENCES a(id));
            INSERT INTO a VALUES (1, 2); INSERT INTO b VALUES (2, 1); INSERT INTO c VALUES (3, 1);
            """)
        let result = try project.initAndPackage()
        #expect(result.steps.map(\.fileName) == ["0001_schema.sql", "0002_a_b.sql", "0003_c.csv"])
        #expect(try Self.snapshot(project.seed) == Self.snapshot(project.source))
    }

    /// Random tables of random declared types holding random values of every storage type.
    /// Text a CSV field cannot carry exactly (an embedded NUL, bytes that are not UTF-8, a CR) sends
    /// its table to SQL, and every value comes back with its bytes; text that can stays CSV.
    @Test func textWithANulABadByteOrACarriageReturnRoundTripsExactly() throws {
        for (body, csv) in [("CAST(X'61006200' AS TEXT)", false), ("CAST(X'41FF42' AS TEXT)", false), ("CAST(X'610D62' AS TEXT)", false),
                            ("'ü \"q\", é'", true)] {
            let project = try Project("""
                CREATE TABLE doc(id INTEGER PRIMARY KEY, body TEXT);
                INSERT INTO doc(body) VALUES ('plain'), (\(body)), ('after');
                """)
            let result = try project.initAndPackage()
            #expect(try Self.snapshot(project.seed) == Self.snapshot(project.source), "\(body)")
            #expect(result.steps.contains { $0.fileName.hasSuffix("doc.csv") } == csv, "\(body): \(result.steps.map(\.fileName))")
        }
    }

    @Test func randomValuesOfEveryTypeRoundTrip() throws {
        var random = SplitMix64(seed: 13)
        let types = ["", "INTEGER", "INT", "TEXT", "VARCHAR(10)", "REAL", "DOUBLE", "FLOAT", "NUMERIC", "DECIMAL(5,2)", "BLOB", "BOOLEAN", "DATE"]
        for round in 0..<6 {
            var schema = ""
            var inserts: [(String, [DatabaseValueConvertible?])] = []
            for table in 0..<3 {
                let width = random.int(1..<5)
                let columns = (0..<width).map { "c\($0) \(types[random.int(0..<types.count)])" }
                schema += "CREATE TABLE t\(table)(\(columns.joined(separator: ", ")));\n"
                for _ in 0..<random.int(0..<40) {
                    let values = (0..<width).map { _ in Self.randomValue(&random) }
                    inserts.append(("INSERT INTO t\(table) VALUES (\(Array(repeating: "?", count: width).joined(separator: ", ")))", values))
                }
            }
            let project = try Project(schema)
            let queue = try DatabaseQueue(path: project.source.path)
            try queue.write { db in
                for (sql, values) in inserts { try db.execute(sql: sql, arguments: StatementArguments(values)) }
                // Gaps in the rowids of some tables.
                if random.chance(0.5) { try db.execute(sql: "DELETE FROM t0 WHERE rowid % 3 = 0") }
            }
            try queue.close()
            try project.initAndPackage()
            let before = try Self.snapshot(project.source)
            let after = try Self.snapshot(project.seed)
            #expect(after == before, "round \(round): \(schema)")
        }
    }

    static func randomValue(_ random: inout SplitMix64) -> DatabaseValueConvertible? {
        switch random.int(0..<6) {
        case 0: return nil
        case 1: return Int64(bitPattern: random.next()) >> random.int(0..<64)
        case 2: return random.chance(0.3) ? nastyReals[random.int(0..<nastyReals.count)] : Double(bitPattern: random.next())
        case 3:
            let scalars = (0..<random.int(0..<12)).map { _ -> Character in
                let pool: [Character] = ["a", "Z", "0", "9", ",", "\"", "'", "\n", "\r", "\0", " ", ".", "e", "-", "é", "✓"]
                return pool[random.int(0..<pool.count)]
            }
            return String(scalars)
        case 4: return random.chance(0.5) ? String(Int64(bitPattern: random.next()) >> 20) : String(Double(bitPattern: random.next() >> 2))
        default: return Data((0..<random.int(0..<10)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        }
    }
}
