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
        for (name, kind, removal) in [("items.sqlite", "store", "never"), (".items.sqlite.reseed-lock", "installLock", "never"),
                                      (".items.sqlite.reseed-tmp-0123456789abcdef", "temporary", "nextLaunch")] {
            let file = files.first { $0["name"] == name }
            #expect(file?["kind"] == kind && file?["removedBy"] == removal, "\(name): \(files)")
        }
        #expect(files.allSatisfy { !($0["name"] ?? "").hasPrefix("notes") })
        let human = try ReseedBinary.run(["status", "--seed", old.manifestURL.path, "--data-dir", data.path])
        #expect(human.stdout.contains(".items.sqlite.reseed-tmp-0123456789abcdef (temporary, removed by: nextLaunch)"))
    }

    /// `reseed status` lists every file Reseed keeps in the data directory that is there: the
    /// store's, the user store's and the preferences file's, each with what it is, what removes
    /// it and the file it belongs to; nothing else.
    @Test func statusListsEveryFileReseedKeepsInTheDataDirectory() throws {
        let sandbox = try TemporaryDirectory()
        let data = sandbox.appending("data")
        let seed = try itemsSeed("1.0.0", in: sandbox)
        let launched = try ReseedBinary.run(["launch", "--seed", seed.manifestURL.path, "--data-dir", data.path])
        #expect(launched.status == 0, "\(launched.stderr)")
        // (name, kind, removed by, belongs to): each made here, but the store, the preferences and their locks the launch made.
        let expected = [
            ("items.sqlite", "store", "never", "items.sqlite"),
            ("items.sqlite-wal", "sidecar", "nextInstall", "items.sqlite"),
            ("items.sqlite-shm", "sidecar", "nextInstall", "items.sqlite"),
            (".items.sqlite.reseed-lock", "installLock", "never", "items.sqlite"),
            (".items.sqlite.reseed-update-lock", "updateLock", "never", "items.sqlite"),
            (".items.sqlite.reseed-trust.json", "trustFloors", "never", "items.sqlite"),
            (".items.sqlite.reseed-tmp-0123456789abcdef", "temporary", "nextLaunch", "items.sqlite"),
            ("..items.sqlite.reseed-tmp-0123456789abcdef.reseed-tmp-fedcba9876543210", "temporary", "nextLaunch", "items.sqlite"),
            (".items.sqlite.reseed-download-0123456789abcdef", "download", "nextUpdate", "items.sqlite"),
            (".items.sqlite.reseed-download-0123456789abcdef.etag", "download", "nextUpdate", "items.sqlite"),
            (".items.sqlite.reseed-download-delta-0123456789abcdef.sqlite", "download", "nextUpdate", "items.sqlite"),
            ("items.sqlite.invalid-20260101T000000Z-0000abcd", "keptAside", "never", "items.sqlite"),
            ("items-user.sqlite", "store", "never", "items-user.sqlite"),
            ("items-user.sqlite-wal", "sidecar", "never", "items-user.sqlite"),
            (".items-user.sqlite.reseed-lock", "installLock", "never", "items-user.sqlite"),
            (".items-user.sqlite.reseed-tmp-0123456789abcdef", "temporary", "nextLaunch", "items-user.sqlite"),
            ("items-user.sqlite.invalid-20260101T000000Z-0000abcd", "keptAside", "never", "items-user.sqlite"),
            ("preferences.json", "preferences", "never", "preferences.json"),
            (".preferences.json.reseed-lock", "preferencesLock", "never", "preferences.json"),
            (".preferences.json.reseed-tmp-0123456789abcdef", "temporary", "nextPreferencesWrite", "preferences.json"),
            ("preferences.json.corrupt-20260101T000000Z", "corruptPreferences", "never", "preferences.json"),
            ("preferences.json.corrupt-20260101T000000Z-2", "corruptPreferences", "never", "preferences.json"),
        ]
        for (name, _, _, _) in expected where !FileManager.default.fileExists(atPath: data.appendingPathComponent(name).path) {
            try Data().write(to: data.appendingPathComponent(name))
        }
        for other in ["notes.txt", "items.sqlite.bak", ".other.sqlite.reseed-lock", "preferences.json.bak"] {
            try Data().write(to: data.appendingPathComponent(other))
        }
        let arguments = ["status", "--seed", seed.manifestURL.path, "--data-dir", data.path, "--user-store", "items-user"]
        let listed = try ReseedBinary.run(arguments + ["--json"])
        #expect(listed.status == 0, "\(listed.stderr)")
        let files = try #require(try jsonObject(listed.stdout)["files"] as? [[String: String]], "\(listed.stdout)")
        #expect(files.map { $0["name"] ?? "" }.sorted() == expected.map(\.0).sorted())
        for (name, kind, removal, owner) in expected {
            let file = files.first { $0["name"] == name }
            #expect(file?["kind"] == kind && file?["removedBy"] == removal && file?["belongsTo"] == owner, "\(name): \(file ?? [:])")
            let description = file?["description"] ?? ""
            #expect(!description.isEmpty, "\(name) says what it is")
        }
        let human = try ReseedBinary.run(arguments)
        for (name, kind, removal, _) in expected {
            #expect(human.stdout.contains("\(name) (\(kind), removed by: \(removal)): "), "\(name): \(human.stdout)")
        }
        #expect(!human.stdout.contains("notes.txt") && !human.stdout.contains(".bak") && !human.stdout.contains(".other."))
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
