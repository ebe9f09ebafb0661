import Foundation
import GRDB
@testable import Reseed
import ReseedTesting
import ReseedTestSupport
import Testing

/// A device of an earlier release (one file: seed `items` 1.0.0 plus the app's `note` rows, the
/// last of them only in the WAL), the seed 2.0.0 of this release, and the check that no note is lost.
struct UserRowsDevice {
    static let userStoreName = "items-user"

    let sandbox: TemporaryDirectory
    let template: URL
    let newSeed: Seed
    /// count|sum(id)|sum(length(text))|max(text) of every note.
    let expected: String
    let rows: Int

    /// - Parameters: rows: the notes in all; walRows: how many of them are only in the WAL.
    init(rows: Int, walRows: Int, paddingBytes: Int, prefix: String) throws {
        sandbox = try TemporaryDirectory(prefix: prefix)
        self.rows = rows
        let items = "CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT)"
        let old = try SeedFixture(name: "items", version: "1.0.0", sql: [items, "INSERT INTO item (label) VALUES ('old')"])
            .build(in: sandbox.appending("seed-1.0.0"))
        newSeed = try SeedFixture(name: "items", version: "2.0.0", sql: [items, "INSERT INTO item (label) VALUES ('new')"], paddingBytes: paddingBytes)
            .build(in: sandbox.appending("seed-2.0.0"))
        let building = sandbox.appending("building")
        let (pool, _) = try Launcher(seed: old.manifestURL, dataDirectory: building).launch()
        // One transaction each: the bulk, checkpointed into the file, then the rest, left in the WAL.
        try pool.write { db in
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
            try db.execute(sql: "CREATE TABLE note (id INTEGER PRIMARY KEY AUTOINCREMENT, item_id INTEGER, text TEXT NOT NULL)")
            try db.execute(sql: "CREATE INDEX note_item ON note(item_id)")
            try db.execute(sql: """
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
                INSERT INTO note (item_id, text) SELECT 1, 'note ' || i || ' ' || hex(randomblob(8)) FROM n
                """, arguments: [rows - walRows])
        }
        try pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        try pool.write { db in
            try db.execute(sql: """
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
                INSERT INTO note (item_id, text) SELECT 1, 'late ' || i FROM n
                """, arguments: [walRows])
        }
        expected = try pool.read { try Self.digest($0) }
        // The app killed with the rows in the WAL: the files as they are (the -shm is rebuilt from the WAL).
        template = sandbox.appending("template")
        try FileManager.default.createDirectory(at: template, withIntermediateDirectories: true)
        for name in ["items.sqlite", "items.sqlite-wal", "preferences.json"] {
            try FileManager.default.copyItem(at: building.appendingPathComponent(name), to: template.appendingPathComponent(name))
        }
        try pool.close()
    }

    func arguments(_ data: URL) -> [String] {
        ["launch", "--seed", newSeed.manifestURL.path, "--data-dir", data.path, "--user-store", Self.userStoreName, "--user-table", "note", "--json"]
    }

    func reset(_ data: URL) throws {
        if FileManager.default.fileExists(atPath: data.path) { try FileManager.default.removeItem(at: data) }
        try FileManager.default.copyItem(at: template, to: data)
    }

    static func digest(_ db: Database) throws -> String {
        try String.fetchOne(db, sql: "SELECT count(*) || '|' || ifnull(sum(id), 0) || '|' || ifnull(sum(length(text)), 0) || '|' || ifnull(max(text), '') FROM note") ?? ""
    }

    /// The digest of the notes in the database at `url`, nil when it has no `note` table.
    /// Read from a copy (the file and its WAL): the next launch finds the files as the kill left them.
    static func digest(at url: URL) throws -> String? {
        let scratch = try TemporaryDirectory(prefix: "reseed-digest")
        let copy = scratch.appending("copy.sqlite")
        // The journal too: a kill inside a transaction of a rollback-journal store leaves it hot, for SQLite to roll back.
        for suffix in ["", "-wal", "-journal"] where FileManager.default.fileExists(atPath: url.path + suffix) {
            try FileManager.default.copyItem(atPath: url.path + suffix, toPath: copy.path + suffix)
        }
        return try withExtendedLifetime(scratch) { try digest(copyAt: copy) }
    }

    private static func digest(copyAt url: URL) throws -> String? {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        let queue = try DatabaseQueue(path: url.path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in
            let check = try String.fetchOne(db, sql: "PRAGMA quick_check")
            #expect(check == "ok", "\(url.lastPathComponent): \(check ?? "nil")")
            guard try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM sqlite_master WHERE name = 'note'") == true else { return nil }
            return try digest(db)
        }
    }

    /// Which state `data` is in; one that loses a note is recorded as an issue and says "LOST".
    ///
    /// Allowed: the old store with every note (and no user store, or a complete one), or the new
    /// seed (no note table) beside a complete user store; the old store keeps the old version recorded.
    func state(_ data: URL, _ label: String) throws -> String {
        let store = data.appendingPathComponent("items.sqlite")
        let userStore = data.appendingPathComponent(Self.userStoreName + ".sqlite")
        guard FileManager.default.fileExists(atPath: store.path) else {
            Issue.record("\(label): the store is gone")
            return "no store"
        }
        let version = try SeedMetadata.read(path: store.path)?.version
        let recorded = try PreferencesFile(url: data.appendingPathComponent("preferences.json")).recordedVersion(of: "items")
        let inStore = try Self.digest(at: store)
        let inUserStore = FileManager.default.fileExists(atPath: userStore.path) ? try Self.digest(at: userStore) : nil
        var parts: [String] = []
        switch version {
        case "1.0.0":
            #expect(recorded == "1.0.0", "\(label): \(recorded ?? "nothing") recorded beside the old store")
            parts.append(inStore == expected ? "old store with every note" : "old store with \(inStore ?? "no notes")")
        case "2.0.0":
            #expect(inStore == nil, "\(label): the new seed has a note table")
            parts.append("new seed")
        default:
            Issue.record("\(label): the store holds \(String(describing: version))")
            parts.append("store \(String(describing: version))")
        }
        if FileManager.default.fileExists(atPath: userStore.path) {
            #expect(inUserStore == expected, "\(label): the user store has \(inUserStore ?? "no notes"), expected \(expected)")
            parts.append(inUserStore == expected ? "complete user store" : "INCOMPLETE user store")
        } else {
            parts.append("no user store")
        }
        if inStore != expected && inUserStore != expected {
            Issue.record("\(label): notes lost: store \(inStore ?? "none"), user store \(inUserStore ?? "none"), expected \(expected)")
            parts.append("LOST")
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: data.path)
        if names.contains(where: { $0.contains(".reseed-tmp-") }) { parts.append("temp") }
        return parts.joined(separator: " + ")
    }

    /// A normal launch completes with every note in the user store, the seed alone in the store file, no temporary file.
    func expectFinalLaunch(_ data: URL, _ label: String) throws {
        let final = try ReseedBinary.run(arguments(data))
        #expect(final.status == 0, "\(label): \(final.stderr)")
        let json = try? jsonObject(final.stdout)
        #expect(json?["version"] as? String == "2.0.0", "\(label): \(final.stdout)")
        #expect(json?["userStore"] as? String == data.appendingPathComponent(Self.userStoreName + ".sqlite").path, "\(label): \(final.stdout)")
        #expect(try state(data, label) == "new seed + complete user store", "\(label)")
        let names = try FileManager.default.contentsOfDirectory(atPath: data.path)
        #expect(!names.contains { $0.contains(".reseed-tmp-") || $0.contains(".invalid-") }, "\(label): \(names)")
    }
}

/// SIGKILL a real `reseed launch --user-store` at many moments while it imports 200,000 notes out
/// of a single-file store and installs a seed: after each kill every note is in the old store or in
/// the user store; a final launch completes with all of them in the user store.
@Suite(.serialized, .timeLimit(.minutes(30)))
struct UserStoreKillTests {
    static let kills = 55

    @Test func noNoteIsLostToASIGKILLDuringTheImport() throws {
        let device = try UserRowsDevice(rows: 200_000, walRows: 2_000, paddingBytes: 32 << 20, prefix: "reseed-kill-import")
        let data = device.sandbox.appending("data")
        let arguments = device.arguments(data)
        var durations: [Double] = []
        for _ in 0..<3 {
            try device.reset(data)
            let clock = ContinuousClock()
            let start = clock.now
            let full = try ReseedBinary.run(arguments)
            let duration = clock.now - start
            #expect(full.status == 0, "\(full.stderr)")
            let imported = (try? jsonObject(full.stdout))?["importedTables"] as? [String: Any]
            #expect((imported?["note"] as? NSNumber)?.intValue == device.rows, "\(full.stdout)")
            durations.append(Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
        }
        let seconds = durations.sorted()[1]

        // Seeded, so a failing round can be replayed. Delays are spread over a span that starts at 0.8× the
        // median run and shrinks a little each time a run finishes before its kill (runs under load vary),
        // until `kills` runs were killed before they finished; then a few kills past the end ("after").
        var generator = SplitMix64(seed: 0x5EED_13)
        var outcomes: [String: Int] = [:]
        var delays: [Double] = []
        var span = 0.8 * seconds
        var killed = 0
        var round = 0
        var after = 0
        while (killed < Self.kills || after < 5) && round < 4 * Self.kills {
            try device.reset(data)
            let jitter = Double(generator.int(0..<1000)) / 1000
            let late = killed >= Self.kills
            let delay = late ? seconds * (1 + 0.2 * (Double(after) + jitter) / 5) : span * (Double(killed) + jitter) / Double(Self.kills)
            if late { after += 1 }
            delays.append(delay)
            let running = try ReseedBinary.start(arguments)
            Thread.sleep(forTimeInterval: delay)
            running.kill()
            let result = running.wait()
            if result.status != 0 { killed += late ? 0 : 1 } else if !late { span *= 0.9 }
            let state = try device.state(data, "round \(round), kill at \(String(format: "%.3f", delay)) s")
            outcomes["\(result.status == 0 ? "finished" : "killed") → \(state)", default: 0] += 1
            // Every fifth round: the next launch from that state completes with every note.
            if round % 5 == 0 { try device.expectFinalLaunch(data, "after round \(round)") }
            round += 1
        }
        #expect(killed >= Self.kills, "only \(killed) runs were killed before they finished in \(round) rounds")
        let lost = outcomes.filter { $0.key.contains("LOST") || $0.key.contains("INCOMPLETE") }.values.reduce(0, +)
        #expect(lost == 0)
        print("""
            user store kills: \(round) SIGKILLs (\(killed) before the run finished) over a \(String(format: "%.3f", seconds)) s import of \(device.rows) notes + 32 MiB seed install \
            (delays \(String(format: "%.3f", delays.min() ?? 0))–\(String(format: "%.3f", delays.max() ?? 0)) s); \(lost) with a note lost
            states after each: \(outcomes.sorted { $0.key < $1.key })
            """)
        try device.expectFinalLaunch(data, "final")
    }
}
