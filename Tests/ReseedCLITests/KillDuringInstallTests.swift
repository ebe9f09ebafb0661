import Foundation
import GRDB
import Reseed
import ReseedTesting
import ReseedTestSupport
import Testing

/// SIGKILL a real `reseed launch` at many moments of an install; each time the
/// next launch must find the old store with the old version, or the new store.
@Suite struct KillDuringInstallTests {
    static let kills = 50

    @Test func storeSurvivesSIGKILLAtAnyMomentOfAnUpgrade() throws {
        let sandbox = try TemporaryDirectory(prefix: "reseed-kill")
        let old = try SeedFixture(name: "big", version: "1.0.0", sql: ["CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT)", "INSERT INTO item (label) VALUES ('old')"])
            .build(in: sandbox.appending("old"))
        let new = try SeedFixture(name: "big", version: "2.0.0", sql: ["CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT)", "INSERT INTO item (label) VALUES ('new')"],
                                  paddingBytes: 100 << 20).build(in: sandbox.appending("new"))
        #expect(new.manifest.size >= 100_000_000)

        // The device before the upgrade: the old seed installed and opened once (so the store is in WAL mode).
        let template = sandbox.appending("template")
        let (pool, _) = try Launcher(seed: old.manifestURL, dataDirectory: template).launch()
        try pool.close()

        let data = sandbox.appending("data")
        let arguments = ["launch", "--seed", new.manifestURL.path, "--data-dir", data.path, "--verify", "checksum", "--json"]
        // How long an uninterrupted upgrade takes (median of three), to spread the kills over it.
        var durations: [Double] = []
        for _ in 0..<3 {
            try reset(data, from: template)
            let clock = ContinuousClock()
            let start = clock.now
            let full = try ReseedBinary.run(arguments)
            let duration = clock.now - start
            #expect(full.status == 0, "\(full.stderr)")
            durations.append(Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
        }
        let seconds = durations.sorted()[1]

        var generator = SystemRandomNumberGenerator()
        var outcomes: [String: Int] = [:]
        for kill in 0..<Self.kills {
            try reset(data, from: template)
            // Spread over the whole run, with jitter, so early (lock, copy) and late (rename, preferences) moments are hit.
            let delay = 0.95 * seconds * (Double(kill) + Double.random(in: 0..<1, using: &generator)) / Double(Self.kills)
            let running = try ReseedBinary.start(arguments)
            Thread.sleep(forTimeInterval: delay)
            running.kill()
            let result = running.wait()
            let state = try checkInvariant(data, old: old.manifest, new: new.manifest)
            outcomes["\(result.status == 0 ? "finished" : "killed") → \(state)", default: 0] += 1
        }
        print("kills: \(Self.kills) over \(String(format: "%.3f", seconds)) s; states after each: \(outcomes.sorted { $0.key < $1.key })")

        let final = try ReseedBinary.run(arguments)
        #expect(final.status == 0, "\(final.stderr)")
        #expect(try jsonObject(final.stdout)["version"] as? String == "2.0.0")
        #expect(try checkInvariant(data, old: old.manifest, new: new.manifest) == "new store, new version")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: data.path).filter { $0.contains("reseed-tmp") }
        #expect(leftovers.isEmpty)
    }

    private func reset(_ data: URL, from template: URL) throws {
        if FileManager.default.fileExists(atPath: data.path) { try FileManager.default.removeItem(at: data) }
        try FileManager.default.copyItem(at: template, to: data)
    }

    /// The install invariant; returns which allowed state the directory is in.
    private func checkInvariant(_ data: URL, old: SeedManifest, new: SeedManifest) throws -> String {
        let store = data.appendingPathComponent(old.storeFileName)
        let recorded = try PreferencesFile(url: data.appendingPathComponent("preferences.json")).recordedVersion(of: old.name)
        guard FileManager.default.fileExists(atPath: store.path) else {
            Issue.record("the store is gone after a kill during an upgrade")
            return "missing"
        }
        let queue = try DatabaseQueue(path: store.path)
        defer { try? queue.close() }
        let (check, label, metadata) = try queue.read { db in
            (try String.fetchOne(db, sql: "PRAGMA quick_check"), try String.fetchOne(db, sql: "SELECT label FROM item"), try SeedMetadata.read(db))
        }
        #expect(check == "ok")
        switch metadata?.version {
        case old.version:
            #expect(label == "old")
            #expect(recorded == old.version, "the old store must keep the old recorded version")
            return "old store, old version"
        case new.version:
            #expect(label == "new")
            #expect(recorded == old.version || recorded == new.version)
            return recorded == new.version ? "new store, new version" : "new store, old version"
        default:
            Issue.record("the store holds neither seed: \(String(describing: metadata))")
            return "unknown"
        }
    }
}
