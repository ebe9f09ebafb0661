import Foundation
import GRDB
import Reseed
import ReseedTesting
import ReseedTestSupport
import Testing

/// Issue 32 through the built `reseed`: an update carries the user's rows as a launch does, the
/// repository's own example upgrades a single-file store, and a busy user store is waited for.
@Suite(.timeLimit(.minutes(10)))
struct UserRowsCommandTests {
    /// 1.0.0 installed by a launch without a user store, the app's `incident` table written into
    /// the store file (`rows` rows), as an earlier release did; 1.0.0 and 1.1.0 published with a delta.
    static func singleFileDevice(_ sandbox: ChannelSandbox, rows: Int) throws -> [String] {
        let old = try DeltaWriteTests.release(sandbox, "1.0.0", generation: 0)
        let new = try DeltaWriteTests.release(sandbox, "1.1.0", generation: 1)
        try sandbox.publish(old, compressed: true)
        #expect(try sandbox.publish(new, compressed: true).manifest.deltas.count == 1)
        let publicKey = sandbox.directory.appending("channel.pub")
        try Data((sandbox.key.publicKey.base64 + "\n").utf8).write(to: publicKey)
        let launched = try ReseedBinary.run(["launch", "--seed", old.manifestURL.path, "--data-dir", sandbox.dataDirectory.path])
        #expect(launched.status == 0, "\(launched.stderr)")
        let queue = try DatabaseQueue(path: sandbox.storeURL.path)
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE incident (id INTEGER PRIMARY KEY, note TEXT)")
            try db.execute(sql: """
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows))
                INSERT INTO incident (note) SELECT 'note ' || i FROM n
                """)
        }
        try queue.close()
        return ["update", "--channel", sandbox.server.url.absoluteString, "--public-key", publicKey.path,
                "--seed", old.manifestURL.path, "--data-dir", sandbox.dataDirectory.path, "--json"]
    }

    /// Case 2 through `reseed update`: a 0-byte user store file beside the single-file store does
    /// not stop the import, and the delta (which starts from a pure seed) is not taken.
    @Test func anUpdateCarriesTheRowsIntoAnEmptyUserStoreFile() throws {
        let sandbox = try ChannelSandbox()
        let update = try Self.singleFileDevice(sandbox, rows: 20000)
        let userStore = sandbox.dataDirectory.appendingPathComponent("items-user.sqlite")
        #expect(FileManager.default.createFile(atPath: userStore.path, contents: Data()))
        let result = try ReseedBinary.run(update + ["--user-store", "items-user", "--user-table", "incident"])
        #expect(result.status == 0, "\(result.stderr)")
        let outcome = try jsonObject(result.stdout)
        #expect(outcome["outcome"] as? String == "updated")
        #expect(outcome["method"] as? String == "full")
        #expect(outcome["importedTables"] as? [String: Int] == ["incident": 20000])
        #expect(outcome["strandedTables"] as? [String] == [])
        let count = try DatabaseQueue(path: userStore.path).read { try Int.fetchOne($0, sql: "SELECT count(*) FROM incident") }
        #expect(count == 20000)
    }

    /// Case 3 through `reseed update`: no table declared: the store file is kept aside whole, its table named.
    @Test func anUpdateKeepsUndeclaredUserTablesAside() throws {
        let sandbox = try ChannelSandbox()
        let update = try Self.singleFileDevice(sandbox, rows: 100)
        let result = try ReseedBinary.run(update + ["--user-store", "items-user"])
        #expect(result.status == 0, "\(result.stderr)")
        let outcome = try jsonObject(result.stdout)
        #expect(outcome["strandedTables"] as? [String] == ["incident"])
        let aside = try #require(outcome["storeKeptAside"] as? String)
        let count = try DatabaseQueue(path: aside).read { try Int.fetchOne($0, sql: "SELECT count(*) FROM incident") }
        #expect(count == 100)
    }

    /// Case 11: a user store another process holds (rollback journal, `BEGIN EXCLUSIVE`) for a
    /// moment is waited for, as every other open is: the update finishes once it is let go.
    @Test func anUpdateWaitsForAUserStoreHeldForAMoment() throws {
        let sandbox = try ChannelSandbox()
        let update = try Self.singleFileDevice(sandbox, rows: 10)
        let userStore = sandbox.dataDirectory.appendingPathComponent("items-user.sqlite")
        let first = try ReseedBinary.run(update + ["--user-store", "items-user", "--user-table", "incident"])
        #expect(first.status == 0, "\(first.stderr)")
        // 1.2.0 published: the next update checks the user store against it while another process holds it.
        try sandbox.publish(try DeltaWriteTests.release(sandbox, "1.2.0", generation: 2), compressed: true)
        try DatabaseQueue(path: userStore.path).writeWithoutTransaction { try $0.execute(sql: "PRAGMA journal_mode = DELETE") }
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        holder.arguments = ["python3", "-c", """
            import sqlite3, sys, time
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute("BEGIN EXCLUSIVE"); print("held", flush=True); time.sleep(1.5); c.execute("COMMIT")
            """, userStore.path]
        let output = Pipe()
        holder.standardOutput = output
        try holder.run()
        #expect(String(decoding: output.fileHandleForReading.readData(ofLength: 5), as: UTF8.self) == "held\n")
        let result = try ReseedBinary.run(update + ["--user-store", "items-user", "--user-table", "incident"])
        holder.waitUntilExit()
        #expect(result.status == 0, "\(result.stderr)")
        #expect((try? jsonObject(result.stdout))?["version"] as? String == "1.2.0", "\(result.stdout)")
    }

    /// Case 4: the repository's own example (reseed.json, `UserMigrations/0001_incident.sql` with a
    /// plain `CREATE TABLE incident`) over an earlier single-file store that holds `incident`.
    @Test func theRepositorysExampleUpgradesASingleFileStore() throws {
        let sandbox = try TemporaryDirectory()
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        for item in ["reseed.json", "SeedData", "UserMigrations"] {
            try FileManager.default.copyItem(at: root.appendingPathComponent(item), to: sandbox.appending(item))
        }
        let data = sandbox.appending(".reseed-data")
        let single = try ReseedBinary.run(["launch", "--seed", sandbox.appending("SeedData").path, "--data-dir", data.path])
        #expect(single.status == 0, "\(single.stderr)")
        let queue = try DatabaseQueue(path: data.appendingPathComponent("triage.sqlite").path)
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE incident (id INTEGER PRIMARY KEY, reported_at TEXT NOT NULL, level_id INTEGER NOT NULL, category_id INTEGER NOT NULL, note TEXT)")
            try db.execute(sql: "INSERT INTO incident (reported_at, level_id, category_id, note) VALUES ('2026-11-01T10:00:00Z', 1, 1, 'cut'), ('2026-11-02T11:00:00Z', 2, 3, NULL)")
        }
        try queue.close()
        for launch in 1...2 {
            let result = try ReseedBinary.run(["launch", "--json"], in: sandbox.url)
            #expect(result.status == 0, "launch \(launch): \(result.stderr)")
            let outcome = try jsonObject(result.stdout)
            if launch == 1 {
                #expect(outcome["importedTables"] as? [String: Int] == ["incident": 2])
                #expect(outcome["appliedMigrations"] as? [String] == ["0001_incident.sql"])
            }
            let notes = try DatabaseQueue(path: data.appendingPathComponent("triage-user.sqlite").path)
                .read { try String?.fetchAll($0, sql: "SELECT note FROM incident ORDER BY id") }
            #expect(notes == ["cut", nil])
        }
    }
}

/// Issue 32, found in review: SIGKILL a real `reseed launch --user-store` at each rename while it keeps
/// aside a store whose `incident` table is not declared. Wherever the kill falls after the swap, the
/// preferences already name the kept file and its table, so a later release that declares `incident`
/// carries every row.
@Suite(.serialized, .timeLimit(.minutes(10))) struct StrandedRecordKillTests {
    @Test(.enabled(if: SyscallFaultTests.straceProblem == nil, Comment(rawValue: SyscallFaultTests.straceProblem ?? "")))
    func aKillAfterTheSwapStillNamesTheKeptFile() throws {
        let strace = try #require(SyscallFaultTests.strace)
        let sandbox = try ChannelSandbox()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        let queue = try DatabaseQueue(path: sandbox.storeURL.path)
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE incident (id INTEGER PRIMARY KEY, note TEXT)")
            try db.execute(sql: "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300) INSERT INTO incident (note) SELECT 'n' || i FROM n")
        }
        try queue.close()
        let device = sandbox.directory.appending("device")
        try FileManager.default.copyItem(at: sandbox.dataDirectory, to: device)
        let launch = ["launch", "--seed", bundled.manifestURL.path, "--data-dir", sandbox.dataDirectory.path, "--user-store", "items-user", "--json"]

        var afterSwap = 0
        for ordinal in 1...5 {
            try? FileManager.default.removeItem(at: sandbox.dataDirectory)
            try FileManager.default.copyItem(at: device, to: sandbox.dataDirectory)
            let killed = try ReseedBinary.start(launch, prefix: [strace, "-f", "-qq", "-o", "/dev/null", "-e", "trace=rename,renameat,renameat2",
                                                                 "-e", "inject=rename,renameat,renameat2:signal=SIGKILL:when=\(ordinal)"]).wait()
            guard killed.status != 0 else { break }
            let swapped = try DatabaseQueue(path: sandbox.storeURL.path).read { try !$0.tableExists("incident") }
            guard swapped else { continue }
            afterSwap += 1
            // The next release declares the table: every row comes out of the kept file.
            let next = try ReseedBinary.run(launch + ["--user-table", "incident"])
            #expect(next.status == 0, "kill at rename #\(ordinal): \(next.stderr)")
            #expect((try? jsonObject(next.stdout))?["importedTables"] as? [String: Int] == ["incident": 300], "kill at rename #\(ordinal): \(next.stdout)")
        }
        #expect(afterSwap > 0, "no kill fell after the swap")
    }
}
