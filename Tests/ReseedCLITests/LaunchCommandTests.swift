import Foundation
import GRDB
import Reseed
import ReseedTesting
import ReseedTestSupport
import Testing

@Suite struct LaunchCommandTests {
    func itemsSeed(_ version: String, in sandbox: TemporaryDirectory, paddingBytes: Int = 0) throws -> Seed {
        try SeedFixture(name: "items", version: version, sql: [
            "CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT NOT NULL)",
            "INSERT INTO item (label) VALUES ('\(version)-a'), ('\(version)-b')",
        ], paddingBytes: paddingBytes).build(in: sandbox.appending("seed-\(version)"))
    }

    @Test func launchPrintsOneJSONObjectAndExitsZero() throws {
        let sandbox = try TemporaryDirectory()
        let seed = try itemsSeed("1.0.0", in: sandbox)
        let data = sandbox.appending("data")
        let first = try ReseedBinary.run(["launch", "--seed", seed.manifestURL.path, "--data-dir", data.path, "--json"])
        #expect(first.status == 0)
        #expect(first.stderr == "")
        let installed = try jsonObject(first.stdout)
        #expect(installed["outcome"] as? String == "installed")
        #expect(installed["reason"] as? String == "fresh")
        #expect(installed["name"] as? String == "items")
        #expect(installed["version"] as? String == "1.0.0")
        #expect(installed["previousVersion"] is NSNull)
        #expect(installed["store"] as? String == data.appendingPathComponent("items.sqlite").path)
        #expect(first.stdout.split(separator: "\n").count == 1)

        let second = try ReseedBinary.run(["launch", "--seed", seed.manifestURL.path, "--data-dir", data.path, "--json"])
        #expect(second.status == 0)
        let upToDate = try jsonObject(second.stdout)
        #expect(upToDate["outcome"] as? String == "upToDate")
        #expect(upToDate["previousVersion"] as? String == "1.0.0")

        let newer = try itemsSeed("1.1.0", in: sandbox)
        let third = try ReseedBinary.run(["launch", "--seed", newer.manifestURL.deletingLastPathComponent().path, "--data-dir", data.path])
        #expect(third.status == 0)
        #expect(third.stdout == "Installed items 1.1.0 over 1.0.0 (upgrade) (reason: versionChanged) at \(data.appendingPathComponent("items.sqlite").path).\n")
    }

    @Test func badManifestGivesOneLineAndExitOne() throws {
        let sandbox = try TemporaryDirectory()
        let seed = try itemsSeed("1.0.0", in: sandbox)
        var text = try String(contentsOf: seed.manifestURL, encoding: .utf8)
        text = text.replacingOccurrences(of: "\"file\": \"items.sqlite\"", with: "\"file\": \"../../etc/passwd\"")
        try text.write(to: seed.manifestURL, atomically: true, encoding: .utf8)
        let data = sandbox.appending("data")
        let result = try ReseedBinary.run(["launch", "--seed", seed.manifestURL.path, "--data-dir", data.path, "--json"])
        #expect(result.status == 1)
        #expect(result.stdout == "")
        #expect(result.stderrLines.count == 1)
        #expect(result.stderr.hasPrefix("reseed: \(seed.manifestURL.path): field \"file\""))
        #expect(result.stderr.contains(seed.manifestURL.path))
        #expect(!FileManager.default.fileExists(atPath: data.appendingPathComponent("items.sqlite").path))
    }

    @Test func storeBusyIsReportedAndNothingChanges() throws {
        let sandbox = try TemporaryDirectory()
        let data = sandbox.appending("data")
        let old = try itemsSeed("1.0.0", in: sandbox)
        #expect(try ReseedBinary.run(["launch", "--seed", old.manifestURL.path, "--data-dir", data.path]).status == 0)
        let holder = try DatabasePool(path: data.appendingPathComponent("items.sqlite").path)
        let new = try itemsSeed("2.0.0", in: sandbox)
        let result = try ReseedBinary.run(["launch", "--seed", new.manifestURL.path, "--data-dir", data.path, "--busy-timeout", "0.2"])
        #expect(result.status == 1)
        #expect(result.stderrLines.count == 1)
        #expect(result.stderr.contains("the store is open in another connection or process"))
        #expect(try holder.read { try String.fetchOne($0, sql: "SELECT label FROM item") } == "1.0.0-a")
        try holder.close()
        #expect(try PreferencesFile(url: data.appendingPathComponent("preferences.json")).recordedVersion(of: "items") == "1.0.0")
    }

    @Test func statusReportsWithoutChangingAnything() throws {
        let sandbox = try TemporaryDirectory()
        let data = sandbox.appending("data")
        let seed = try itemsSeed("1.0.0", in: sandbox)
        let before = try ReseedBinary.run(["status", "--seed", seed.manifestURL.path, "--data-dir", data.path, "--json"])
        #expect(before.status == 0)
        let empty = try jsonObject(before.stdout)
        #expect(empty["storePresent"] as? Bool == false)
        #expect(empty["recordedVersion"] is NSNull)
        #expect(empty["upToDate"] as? Bool == false)
        #expect(!FileManager.default.fileExists(atPath: data.appendingPathComponent("items.sqlite").path))
        _ = try ReseedBinary.run(["launch", "--seed", seed.manifestURL.path, "--data-dir", data.path])
        let after = try jsonObject(try ReseedBinary.run(["status", "--seed", seed.manifestURL.path, "--data-dir", data.path, "--json"]).stdout)
        #expect(after["recordedVersion"] as? String == "1.0.0")
        #expect(after["shippedVersion"] as? String == "1.0.0")
        #expect(after["upToDate"] as? Bool == true)
        #expect((after["storeSize"] as? Int ?? 0) > 0)
    }

    @Test func statusDecidesAsALaunchWhenTheStoreIsNotSQLite() throws {
        let sandbox = try TemporaryDirectory()
        let data = sandbox.appending("data")
        let seed = try itemsSeed("1.0.0", in: sandbox)
        _ = try ReseedBinary.run(["launch", "--seed", seed.manifestURL.path, "--data-dir", data.path])
        let store = data.appendingPathComponent("items.sqlite")
        let garbage = Data("not a database, though the version is recorded".utf8)
        try garbage.write(to: store)
        let status = try jsonObject(try ReseedBinary.run(["status", "--seed", seed.manifestURL.path, "--data-dir", data.path, "--json"]).stdout)
        #expect(status["recordedVersion"] as? String == "1.0.0")
        #expect(status["storePresent"] as? Bool == true)
        #expect(status["upToDate"] as? Bool == false)
        #expect(try Data(contentsOf: store) == garbage)
    }

    /// `reseed status` shows the decision a launch then makes, reason included: the launcher's own
    /// decision, found as a launch finds it (corrupt preferences, a store that holds the shipped
    /// seed without a record, a newer shipped seed).
    @Test func statusShowsTheDecisionALaunchThenMakes() throws {
        let sandbox = try TemporaryDirectory()
        let data = sandbox.appending("data")
        let old = try itemsSeed("1.0.0", in: sandbox)
        let new = try itemsSeed("2.0.0", in: sandbox)
        _ = try ReseedBinary.run(["launch", "--seed", old.manifestURL.path, "--data-dir", data.path])
        let preferences = data.appendingPathComponent("preferences.json")
        for (label, seed, expected, prepare) in [
            ("a newer shipped seed", new, "install", { () throws -> Void in }),
            ("corrupt preferences", new, "install", { try Data("{not json".utf8).write(to: preferences) }),
            ("no preferences, the store holds an older seed", new, "install", { try FileManager.default.removeItem(at: preferences) }),
            ("no preferences, the store holds the shipped seed", old, "recordVersion", { try FileManager.default.removeItem(at: preferences) }),
        ] as [(String, Seed, String, () throws -> Void)] {
            try prepare()
            let status = try ReseedBinary.run(["status", "--seed", seed.manifestURL.path, "--data-dir", data.path, "--json"])
            #expect(status.status == 0, "\(label): \(status.stderr)")
            let shown = try jsonObject(status.stdout)
            let human = try ReseedBinary.run(["status", "--seed", seed.manifestURL.path, "--data-dir", data.path])
            let launched = try jsonObject(try ReseedBinary.run(["launch", "--seed", seed.manifestURL.path, "--data-dir", data.path, "--json"]).stdout)
            let reason = try #require(launched["reason"] as? String, "\(label): \(launched)")
            #expect(shown["reason"] as? String == reason, "\(label): \(shown) then \(launched)")
            #expect(shown["decision"] as? String == expected, "\(label)")
            let line = expected == "install" ? "a launch will install the shipped seed (\(reason))" : "a launch will record the shipped version, which the store holds (\(reason))"
            #expect(human.stdout.contains(line), "\(label): \(human.stdout)")
            // The old seed back, recorded, for the next case.
            _ = try ReseedBinary.run(["launch", "--seed", old.manifestURL.path, "--data-dir", data.path])
        }
        let upToDate = try jsonObject(try ReseedBinary.run(["status", "--seed", old.manifestURL.path, "--data-dir", data.path, "--json"]).stdout)
        #expect(upToDate["decision"] as? String == "upToDate")
        #expect(upToDate["reason"] is NSNull)

        // The files beside the store, each with its kind and what removes it.
        try Data().write(to: data.appendingPathComponent(".items.sqlite.reseed-tmp-0123456789abcdef"))
        try Data().write(to: data.appendingPathComponent("notes.txt"))
        let listed = try jsonObject(try ReseedBinary.run(["status", "--seed", old.manifestURL.path, "--data-dir", data.path, "--json"]).stdout)
        let files = try #require(listed["files"] as? [[String: String]])
        #expect(files.contains(["name": "items.sqlite", "kind": "store", "removedBy": "never"]))
        #expect(files.contains(["name": ".items.sqlite.reseed-lock", "kind": "installLock", "removedBy": "never"]))
        #expect(files.contains(["name": ".items.sqlite.reseed-tmp-0123456789abcdef", "kind": "temporary", "removedBy": "nextLaunch"]))
        #expect(files.allSatisfy { !($0["name"] ?? "").hasPrefix("notes") && !($0["name"] ?? "").hasPrefix("preferences") })
        let human = try ReseedBinary.run(["status", "--seed", old.manifestURL.path, "--data-dir", data.path])
        #expect(human.stdout.contains(".items.sqlite.reseed-tmp-0123456789abcdef (temporary, removed by: nextLaunch)"))
    }

    @Test func launchWithNoFlagsUsesTheRepositoryExample() throws {
        let sandbox = try TemporaryDirectory()
        let root = ReseedBinary.packageRoot
        for item in ["reseed.json", "SeedData", "UserMigrations"] {
            try FileManager.default.copyItem(at: root.appendingPathComponent(item), to: sandbox.appending(item))
        }
        let result = try ReseedBinary.run(["launch", "--json"], in: sandbox.url)
        #expect(result.status == 0, "\(result.stderr)")
        let outcome = try jsonObject(result.stdout)
        #expect(outcome["name"] as? String == "triage")
        #expect(outcome["store"] as? String == sandbox.appending(".reseed-data/triage.sqlite").path)
        let userStore = sandbox.appending(".reseed-data/triage-user.sqlite")
        #expect(outcome["userStore"] as? String == userStore.path)
        #expect(outcome["appliedMigrations"] as? [String] == ["0001_incident.sql"])
        let queue = try DatabaseQueue(path: sandbox.appending(".reseed-data/triage.sqlite").path)
        let categories = try queue.read { try String.fetchAll($0, sql: "SELECT name FROM injury_category ORDER BY name") }
        try queue.close()
        #expect(categories == ["Blunt Trauma", "Burn", "C-Spine", "Cardiac", "Crushing", "Fracture", "Laceration", "Penetration"])

        // The app's incidents live in the user store; a query joins them to the seed's tables as one database.
        let user = try DatabaseQueue(path: userStore.path)
        try user.write { db in
            try db.execute(sql: "ATTACH DATABASE ? AS seed", arguments: [sandbox.appending(".reseed-data/triage.sqlite").path])
            try db.execute(sql: """
                INSERT INTO incident (reported_at, level_id, category_id, note)
                SELECT '2025-01-01T10:00:00Z', l.id, c.id, 'fall from ladder' FROM triage_level l, injury_category c
                WHERE l.code = (SELECT code FROM triage_level ORDER BY id LIMIT 1) AND c.name = 'Fracture'
                """)
        }
        try user.close()
        let again = try ReseedBinary.run(["launch"], in: sandbox.url)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.hasSuffix("User store at \(userStore.path), no tables imported.\n"))
        let status = try ReseedBinary.run(["status"], in: sandbox.url)
        #expect(status.stdout.contains("  tables:     incident (1 row)\n  migrations: 0001_incident.sql\n"), "\(status.stdout)")
    }

    @Test func eightProcessesAtOnceInstallOnce() throws {
        let sandbox = try TemporaryDirectory()
        let data = sandbox.appending("data")
        let old = try itemsSeed("1.0.0", in: sandbox, paddingBytes: 4 << 20)
        let new = try itemsSeed("2.0.0", in: sandbox, paddingBytes: 4 << 20)
        for (seed, expectedPrevious) in [(old, nil), (new, "1.0.0")] as [(Seed, String?)] {
            let running = try (0..<8).map { _ in
                try ReseedBinary.start(["launch", "--seed", seed.manifestURL.path, "--data-dir", data.path, "--json"])
            }
            let results = running.map { $0.wait() }
            #expect(results.allSatisfy { $0.status == 0 }, "\(results.map(\.stderr))")
            let outcomes = try results.map { try jsonObject($0.stdout) }
            #expect(outcomes.filter { $0["outcome"] as? String == "installed" }.count == 1)
            #expect(outcomes.filter { $0["outcome"] as? String == "upToDate" }.count == 7)
            let installed = outcomes.first { $0["outcome"] as? String == "installed" }
            #expect(installed?["previousVersion"] as? String == expectedPrevious)
            let queue = try DatabaseQueue(path: data.appendingPathComponent("items.sqlite").path)
            let (check, labels) = try queue.read { db in
                (try String.fetchOne(db, sql: "PRAGMA quick_check"), try String.fetchAll(db, sql: "SELECT label FROM item"))
            }
            try queue.close()
            #expect(check == "ok")
            #expect(labels == ["\(seed.manifest.version)-a", "\(seed.manifest.version)-b"])
        }
    }
}
