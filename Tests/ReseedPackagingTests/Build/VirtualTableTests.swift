import Foundation
import GRDB
@testable import Reseed
@testable import ReseedPackaging
import ReseedTestSupport
import Testing

/// FTS and R-tree tables through the whole product: the content hash reads their rows, not their
/// index layout; `verify` runs their modules' checks; `diff` reports their rows; a delta changes
/// them through their module and keeps every index consistent.
@Suite struct VirtualTableTests {
    static let schema = AdoptionCorpusTests.externalContentSchema + """
        CREATE TRIGGER article_au AFTER UPDATE ON article BEGIN
          INSERT INTO article_fts(article_fts, rowid, headline, text) VALUES ('delete', old.id, old.headline, old.text);
          INSERT INTO article_fts(rowid, headline, text) VALUES (new.id, new.headline, new.text); END;
        CREATE VIRTUAL TABLE doc USING fts5(title, body, tokenize = 'porter unicode61', prefix = '2');
        CREATE VIRTUAL TABLE note USING fts4(body, tokenize=porter);
        CREATE VIRTUAL TABLE place USING rtree(id, min_x, max_x, min_y, max_y, +label TEXT);
        CREATE TABLE plain(id INTEGER PRIMARY KEY, word TEXT)
        """

    /// Rows for the old release: the same in every test.
    static let oldRows = """
        INSERT INTO article VALUES (1, 'Storm warning', 'heavy rain expected'), (2, 'Sunny days', 'no rain at all'), (3, 'Old news', 'to be deleted');
        INSERT INTO doc(rowid, title, body) VALUES (1, 'Sorting', 'a quick sort'), (2, 'Searching', 'binary search trees'), (3, 'Gone', 'removed soon');
        INSERT INTO note(docid, body) VALUES (1, 'running water'), (2, 'still lakes');
        INSERT INTO place VALUES (1, 0, 1, 0, 1, 'one'), (2, 5, 6, 5, 6, 'two');
        INSERT INTO plain VALUES (1, 'kept')
        """

    /// Rows for the new release: inserts, updates that change tokens, deletes, in every kind of table.
    static let newRows = """
        INSERT INTO article VALUES (1, 'Storm warning', 'heavy snow expected'), (2, 'Sunny days', 'no rain at all'), (4, 'Fresh', 'new article text');
        INSERT INTO doc(rowid, title, body) VALUES (1, 'Sorting', 'a quicker merge sort'), (2, 'Searching', 'binary search trees'), (4, 'Hashing', 'hash tables');
        INSERT INTO note(docid, body) VALUES (1, 'running rivers'), (3, 'deep seas');
        INSERT INTO place VALUES (1, 0, 1, 0, 1, 'one'), (2, 5, 7, 5, 6, 'two, wider'), (9, -3, -2, 4, 5, 'nine');
        INSERT INTO plain VALUES (1, 'kept')
        """

    @Test func theContentHashReadsRowsNotTheIndexLayout() throws {
        let directory = try TemporaryDirectory(prefix: "reseed-vtab")
        let one = directory.appending("one.sqlite").path
        let two = directory.appending("two.sqlite").path
        // The same rows: one row per transaction in another order, so the index has other segments.
        try DeltaSandbox.write(one, Self.schema + ";" + Self.oldRows)
        try DeltaSandbox.write(two, Self.schema + ";" + Self.oldRows + "; DELETE FROM doc; DELETE FROM note")
        for (rowid, title, body) in [(3, "Gone", "removed soon"), (2, "Searching", "binary search trees"), (1, "Sorting", "a quick sort")] {
            try DeltaSandbox.write(two, "INSERT INTO doc(rowid, title, body) VALUES (\(rowid), '\(title)', '\(body)')")
        }
        try DeltaSandbox.write(two, "INSERT INTO note(docid, body) VALUES (2, 'still lakes')")
        try DeltaSandbox.write(two, "INSERT INTO note(docid, body) VALUES (1, 'running water')")
        #expect(try layout(one) != layout(two), "the index layouts should differ for this test to mean something")

        #expect(try SeedContentHash.compute(path: one) == SeedContentHash.compute(path: two))
        try DeltaSandbox.write(two, "UPDATE doc SET body = 'a quick sorts' WHERE rowid = 1")
        #expect(try SeedContentHash.compute(path: one) != SeedContentHash.compute(path: two))
    }

    @Test func aContentlessTableIsHashedByItsIndex() throws {
        let directory = try TemporaryDirectory(prefix: "reseed-vtab")
        let one = directory.appending("one.sqlite").path
        let two = directory.appending("two.sqlite").path
        try DeltaSandbox.write(one, "CREATE VIRTUAL TABLE seen USING fts5(words, content = ''); INSERT INTO seen(rowid, words) VALUES (1, 'alpha beta')")
        try DeltaSandbox.write(two, "CREATE VIRTUAL TABLE seen USING fts5(words, content = ''); INSERT INTO seen(rowid, words) VALUES (1, 'alpha gamma')")
        #expect(try SeedContentHash.compute(path: one) != SeedContentHash.compute(path: two))
    }

    @Test func aDatabaseWithoutVirtualTablesHashesAsVersionOne() throws {
        // The committed example's manifest was written before version 2 existed.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let manifest = try SeedManifest.read(from: root.appendingPathComponent("SeedData/triage.manifest.json"))
        #expect(try SeedContentHash.compute(path: root.appendingPathComponent("SeedData/triage.sqlite").path) == manifest.contentHash)
    }

    @Test func definitionsAreParsedWithQuotesAndOptions() {
        let external = VirtualTableDefinition(#"CREATE VIRTUAL TABLE "a (b" USING fts5(x, content = 'art''s', content_rowid = "id")"#)
        #expect(external?.module == "fts5")
        #expect(external?.externalContent == "art's")
        let contentless = VirtualTableDefinition("CREATE VIRTUAL TABLE t USING fts4(x, content=\"\")")
        #expect(contentless?.isContentless == true)
        let rtree = VirtualTableDefinition("CREATE VIRTUAL TABLE p USING RTREE (id, a, b)")
        #expect(rtree?.module == "rtree" && rtree?.content == nil)
        #expect(VirtualTableDefinition("CREATE VIRTUAL TABLE e USING fts5('x,y', tokenize = 'unicode61 tokenchars ''-,''')")?.arguments.count == 2)
        #expect(VirtualTableDefinition("CREATE VIRTUAL TABLE IF NOT EXISTS main.q USING \"FTS5\"(x)")?.module == "fts5")
    }

    @Test func aDeltaChangesFullTextAndRTreeTablesThroughTheirModule() throws {
        let sandbox = try DeltaSandbox(schema: Self.schema, old: Self.oldRows, new: Self.newRows)
        let built = try #require(try sandbox.roundTrip())
        let counts = Dictionary(uniqueKeysWithValues: built.tables.map { ($0.name, [$0.deleted, $0.updated, $0.inserted]) })
        #expect(counts["doc"] == [1, 1, 1])
        #expect(counts["note"] == [1, 1, 1])
        #expect(counts["place"] == [0, 1, 1])
        #expect(counts["article"] == [1, 1, 1])
        #expect(counts["article_fts"] == [1, 1, 1])
        #expect(!counts.keys.contains { $0.hasSuffix("_data") || $0.hasSuffix("_node") || $0.hasSuffix("_segments") })

        #expect(try AdoptionCorpusTests.integrityProblems(URL(fileURLWithPath: sandbox.target)).isEmpty)
        for query in [
            "SELECT rowid, highlight(article_fts, 1, '[', ']') FROM article_fts WHERE article_fts MATCH 'snow OR rain' ORDER BY rowid",
            "SELECT rowid, bm25(doc) FROM doc WHERE doc MATCH 'sort OR hash' ORDER BY rank",
            "SELECT docid FROM note WHERE note MATCH 'river*' ORDER BY docid",
            "SELECT id, label FROM place WHERE max_x >= 6.5 ORDER BY id",
        ] {
            #expect(try AdoptionCorpusTests.answers(query, in: URL(fileURLWithPath: sandbox.target))
                    == AdoptionCorpusTests.answers(query, in: URL(fileURLWithPath: sandbox.new)), "\(query)")
        }
        // The stale terms are gone from the index, not only from the rows.
        #expect(try AdoptionCorpusTests.answers("SELECT rowid FROM article_fts WHERE article_fts MATCH 'deleted OR heavy AND rain'", in: URL(fileURLWithPath: sandbox.target)).isEmpty)
    }

    @Test func aDeltaThatWouldLeaveAnIndexInconsistentIsRolledBack() throws {
        // The installed seed's index disagrees with its rows (a document's token counts changed
        // behind the module's back, in a row the delta does not touch): its rows hash as before,
        // so only the module's check after the apply can tell, and the update falls back.
        let sandbox = try DeltaSandbox(schema: Self.schema, old: Self.oldRows, new: Self.newRows)
        guard case .built(let built) = try sandbox.build() else {
            Issue.record("no delta was built")
            return
        }
        try sandbox.copyOld()
        try sandbox.execute(sandbox.target, "UPDATE doc_docsize SET sz = X'0909' WHERE id = 2")
        #expect(try sandbox.hash(sandbox.target) == built.fromContentHash)
        let before = try Data(contentsOf: URL(fileURLWithPath: sandbox.target))
        let error = try #require(throws: ReseedError.self) {
            try SeedDelta.apply(deltaPath: sandbox.delta, to: sandbox.target, expectedContentHash: built.toContentHash)
        }
        #expect(error.code == .verificationFailed)
        #expect(error.message.contains("index of table doc "), "\(error.message)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: sandbox.target)) == before)
    }

    @Test func noDeltaIsBuiltFromASeedWhoseIndexIsInconsistent() throws {
        let sandbox = try DeltaSandbox(schema: Self.schema, old: Self.oldRows, new: Self.newRows)
        try sandbox.execute(sandbox.old, "UPDATE doc_docsize SET sz = X'0909' WHERE id = 2")
        guard case .notExpressible(let reason) = try sandbox.build() else {
            Issue.record("a delta was built")
            return
        }
        #expect(reason.contains("index of table doc "), "\(reason)")
    }

    @Test func diffReportsFullTextRowsNotShadowTables() throws {
        let sandbox = try DeltaSandbox(schema: Self.schema, old: Self.oldRows, new: Self.newRows)
        let diff = try SeedDiff.compare(old: URL(fileURLWithPath: sandbox.old), new: URL(fileURLWithPath: sandbox.new))
        let tables = Dictionary(uniqueKeysWithValues: diff.tables.map { ($0.name, [$0.removed, $0.changed, $0.added]) })
        #expect(tables["doc"] == [1, 1, 1])
        #expect(tables["place"] == [0, 1, 1])
        #expect(tables["note"] == [1, 1, 1])
        #expect(!tables.keys.contains { $0.hasPrefix("doc_") || $0.hasPrefix("place_") || $0.hasPrefix("note_") })
        #expect(diff.schema.isEmpty)
    }

    @Test func verifyRunsTheModulesChecksAndLeavesTheFileAsItWas() throws {
        let sandbox = try MigrationsSandbox([
            "0001_schema.sql": Self.schema + ";",
            "0002_rows.sql": Self.oldRows + ";",
        ])
        let result = try sandbox.build()
        #expect(try SeedVerifier(seed: result.manifestURL).verify().findings.isEmpty)

        // Damage the index behind the module's back: its text no longer matches the tokens indexed.
        let queue = try DatabaseQueue(path: result.seedURL.path)
        try queue.writeWithoutTransaction { try $0.execute(sql: "UPDATE doc_content SET c1 = 'other words' WHERE id = 2") }
        try queue.close()
        let damaged = try Data(contentsOf: result.seedURL)
        let findings = try SeedVerifier(seed: result.manifestURL).verify().findings
        #expect(findings.contains { $0.kind == .integrity && $0.message.hasPrefix("the index of doc:") }, "\(findings)")
        #expect(try Data(contentsOf: result.seedURL) == damaged)
    }

    /// A seed file that cannot be opened for writing (read-only for the user, or immutable for
    /// root) cannot have its FTS indexes checked: a finding says so, and names no other cause.
    @Test func verifyOfAFileThatCannotBeWrittenSaysTheIndexesWereNotChecked() throws {
        let sandbox = try MigrationsSandbox(["0001_schema.sql": Self.schema + ";", "0002_rows.sql": Self.oldRows + ";"])
        let result = try sandbox.build()
        let path = result.seedURL.path
        let locked: Bool
        if geteuid() == 0 {
            locked = try Self.chattr("+i", path)
        } else {
            locked = chmod(path, 0o444) == 0
        }
        // Skipped where the file system keeps no immutable flag (a tmpfs) and the tests run as root.
        guard locked else { return }
        defer { if geteuid() == 0 { _ = try? Self.chattr("-i", path) } }
        let findings = try SeedVerifier(seed: result.manifestURL).verify().findings
        #expect(findings.count == 1, "\(findings)")
        #expect(findings.first?.kind == .integrity)
        #expect(findings.first?.message.hasPrefix("the FTS and R-tree indexes could not be checked") == true, "\(findings)")
    }

    /// Runs `chattr FLAG path`; whether it succeeded.
    private static func chattr(_ flag: String, _ path: String) throws -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/chattr")
        process.arguments = [flag, path]
        process.standardError = FileHandle.nullDevice
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/chattr") else { return false }
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    /// The shadow tables' rows, which hold the index.
    private func layout(_ path: String) throws -> [String] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            try ["doc_data", "note_segdir"].flatMap { table in
                try Row.fetchAll(db, sql: "SELECT * FROM \(table)").map { "\(table): \($0)" }
            }
        }
    }
}
