import Foundation
import GRDB
import Reseed
import ReseedPackaging
import ReseedTesting
import ReseedTestSupport
import Testing

/// SIGKILL a real `reseed update` at many moments while it applies a delta (download, decompress,
/// copy of the installed seed, apply, content hash, install, record): after each kill the store holds
/// the old seed or the new one, whole, and the next `reseed update` completes.
@Suite(.serialized, .timeLimit(.minutes(30)))
struct KillDuringDeltaTests {
    static let kills = 30

    /// A release of 60,000 rows (about 12 MB): large enough that each step of the delta path takes a while.
    /// With `fullText`, an FTS5 index of the labels too, which the delta changes through its module.
    static func release(_ sandbox: ChannelSandbox, _ version: String, generation: Int, fullText: Bool) throws -> Seed {
        let search = fullText ? [
            "CREATE VIRTUAL TABLE item_fts USING fts5(label, content = 'item', content_rowid = 'id')",
            "INSERT INTO item_fts(item_fts) VALUES ('rebuild')",
        ] : []
        return try SeedFixture(name: "items", version: version, sql: [
            "CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT NOT NULL, body TEXT NOT NULL)",
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 60000)
            INSERT INTO item (id, label, body) SELECT i, 'item ' || i, printf('%.*c', 120, 'x') || hex(i * 2654435761 % 4294967291) FROM n
            """,
            "CREATE INDEX item_label ON item(label)",
            "UPDATE item SET label = label || ' v\(generation)' WHERE \(generation) > 0 AND id % 100 = 3",
        ] + search).build(in: sandbox.directory.appending("kill-release-\(version)\(fullText ? "-fts" : "")"))
    }

    @Test(arguments: [false, true])
    func aKilledDeltaUpdateLeavesTheOldSeedOrTheNewOneWhole(fullText: Bool) throws {
        try Self.killDeltaUpdates(fullText: fullText, kills: Self.kills)
    }

    /// Kills `reseed update` by delta `kills` times at moments spread over its run, with the device's
    /// data directory in `deviceFolder` (default: the sandbox, on the system's temporary folder).
    static func killDeltaUpdates(fullText: Bool, kills: Int, deviceFolder: URL? = nil) throws {
        let sandbox = try ChannelSandbox()
        let old = try Self.release(sandbox, "1.0.0", generation: 0, fullText: fullText)
        let new = try Self.release(sandbox, "1.1.0", generation: 1, fullText: fullText)
        try sandbox.publish(old, compressed: true)
        let published = try sandbox.publish(new, compressed: true)
        #expect(published.manifest.deltas.count == 1, "\(published.skippedDeltas)")
        let hashes = [try #require(old.manifest.contentHash): "1.0.0", try #require(new.manifest.contentHash): "1.1.0"]

        let template = sandbox.directory.appending("template")
        try sandbox.launch(old)
        try FileManager.default.copyItem(at: sandbox.dataDirectory, to: template)
        let data = (deviceFolder ?? sandbox.directory.url).appendingPathComponent("device")
        let installedBytes = try fileSHA256(template.appendingPathComponent("items.sqlite"))
        func reset() throws {
            if FileManager.default.fileExists(atPath: data.path) { try FileManager.default.removeItem(at: data) }
            try FileManager.default.copyItem(at: template, to: data)
        }
        let publicKey = sandbox.directory.appending("channel.pub")
        try Data((sandbox.key.publicKey.base64 + "\n").utf8).write(to: publicKey)
        let update = ["update", "--channel", sandbox.server.url.absoluteString, "--public-key", publicKey.path,
                      "--seed", old.manifestURL.path, "--data-dir", data.path, "--json"]
        let launch = ["launch", "--seed", old.manifestURL.path, "--data-dir", data.path, "--json"]

        /// The seed the store holds (by content hash) and the version recorded; a store that is neither seed is an issue.
        func state(_ label: String) throws -> String {
            let store = data.appendingPathComponent("items.sqlite")
            // Read from a copy with its WAL, opened as an app opens it: a kill while the install put
            // the new store into WAL mode leaves a WAL that a read-only connection cannot recover.
            let readable = sandbox.directory.appending("state.sqlite")
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: readable.path + suffix) }
            try FileManager.default.copyItem(at: store, to: readable)
            if FileManager.default.fileExists(atPath: store.path + "-wal") {
                try FileManager.default.copyItem(atPath: store.path + "-wal", toPath: readable.path + "-wal")
            }
            try DatabaseQueue(path: readable.path).close()
            let hash = try SeedContentHash.compute(path: readable.path)
            let recorded = try PreferencesFile(url: data.appendingPathComponent("preferences.json")).recordedVersion(of: "items")
            guard let holds = hashes[hash] else {
                Issue.record("\(label): the store holds neither seed (content hash \(hash))")
                return "BROKEN"
            }
            if holds == "1.0.0" {
                #expect(try fileSHA256(store) == installedBytes, "\(label): the installed seed's bytes changed, though it was not replaced")
            }
            if fullText {
                // The rows hash as either seed; the index must agree with them too (checked on a copy).
                let copy = sandbox.directory.appending("integrity.sqlite")
                try? FileManager.default.removeItem(at: copy)
                try FileManager.default.copyItem(at: store, to: copy)
                let queue = try DatabaseQueue(path: copy.path)
                let problems = try queue.write { try VirtualTableCheck.problems($0) }
                try queue.close()
                #expect(problems.isEmpty, "\(label): \(problems)")
            }
            return "holds \(holds), records \(recorded ?? "nothing")"
        }

        var durations: [Double] = []
        for _ in 0..<3 {
            try reset()
            let clock = ContinuousClock()
            let start = clock.now
            let full = try ReseedBinary.run(update)
            let duration = clock.now - start
            #expect(full.status == 0, "\(full.stderr)")
            #expect((try? jsonObject(full.stdout))?["method"] as? String == "delta", "\(full.stdout)")
            durations.append(Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
        }
        let seconds = durations.sorted()[1]

        var generator = SplitMix64(seed: 0xDE17A)
        var outcomes: [String: Int] = [:]
        var span = seconds
        var killed = 0
        var round = 0
        while killed < kills && round < 4 * kills {
            try reset()
            let delay = span * (Double(killed) + Double(generator.int(0..<1000)) / 1000) / Double(kills)
            let running = try ReseedBinary.start(update)
            Thread.sleep(forTimeInterval: delay)
            running.kill()
            let result = running.wait()
            if result.status != 0 { killed += 1 } else { span *= 0.9 }
            let label = "round \(round), kill at \(String(format: "%.3f", delay)) s"
            let after = try state(label)
            outcomes["\(result.status == 0 ? "finished" : "killed") → \(after)", default: 0] += 1
            // The app's next launch opens a sound store, and the next update completes with the new seed.
            let launched = try ReseedBinary.run(launch)
            #expect(launched.status == 0, "\(label): \(launched.stderr)")
            let again = try ReseedBinary.run(update)
            #expect(again.status == 0, "\(label): \(again.stderr)")
            #expect(try state(label + ", updated again").hasPrefix("holds 1.1.0"), "\(label)")
            let names = try FileManager.default.contentsOfDirectory(atPath: data.path)
            #expect(!names.contains { $0.contains(".reseed-download-") || $0.contains(".reseed-tmp-") }, "\(label): \(names)")
            round += 1
        }
        #expect(killed >= kills, "only \(killed) runs were killed before they finished in \(round) rounds")
        print("""
            delta kills\(fullText ? " (FTS5)" : ""): \(round) SIGKILLs (\(killed) before the run finished) over a \(String(format: "%.3f", seconds)) s delta update
            states after each: \(outcomes.sorted { $0.key < $1.key })
            """)
    }
}
