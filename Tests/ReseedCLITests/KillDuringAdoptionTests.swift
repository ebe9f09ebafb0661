import Foundation
import GRDB
import Reseed
import ReseedTesting
import ReseedTestSupport
import Testing

/// SIGKILL a real `reseed launch` while it adopts a legacy store from another filesystem:
/// after each kill the user's store must be usable at one location or the other.
@Suite struct KillDuringAdoptionTests {
    static let kills = 12

    @Test(.enabled(if: FileManager.default.isWritableFile(atPath: "/dev/shm"), "needs /dev/shm, another filesystem"))
    func legacyStoreSurvivesSIGKILLDuringAdoption() throws {
        let sandbox = try TemporaryDirectory(prefix: "reseed-adopt-kill")
        let seed = try SeedFixture(name: "big", version: "1.0.0", sql: ["CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT)"],
                                   paddingBytes: 64 << 20).build(in: sandbox.appending("seed"))
        let template = sandbox.appending("legacy-template")
        _ = try Launcher(seed: seed.manifestURL, dataDirectory: template).prepare()
        let queue = try DatabaseQueue(path: template.appendingPathComponent("big.sqlite").path)
        try queue.write { try $0.execute(sql: "INSERT INTO item (label) VALUES ('user data')") }
        try queue.close()

        let legacyFolder = URL(fileURLWithPath: "/dev/shm/reseed-adopt-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: legacyFolder) }
        let legacy = legacyFolder.appendingPathComponent("big.sqlite")
        let data = sandbox.appending("data")
        let arguments = ["launch", "--seed", seed.manifestURL.path, "--data-dir", data.path, "--legacy-store", legacy.path, "--json"]
        func reset() throws {
            for folder in [data, legacyFolder] where FileManager.default.fileExists(atPath: folder.path) {
                try FileManager.default.removeItem(at: folder)
            }
            try FileManager.default.copyItem(at: template, to: legacyFolder)
        }

        var durations: [Double] = []
        for _ in 0..<3 {
            try reset()
            let start = ContinuousClock.now
            let result = try ReseedBinary.run(arguments)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try jsonObject(result.stdout)["adoptedFrom"] as? String == legacy.path)
            let elapsed = ContinuousClock.now - start
            durations.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        }
        let seconds = durations.sorted()[1]
        var states: [String: Int] = [:]
        for kill in 0..<Self.kills {
            try reset()
            let running = try ReseedBinary.start(arguments)
            Thread.sleep(forTimeInterval: 0.95 * seconds * (Double(kill) + Double.random(in: 0..<1)) / Double(Self.kills))
            running.kill()
            _ = running.wait()
            states[try usableLocation(current: data.appendingPathComponent("big.sqlite"), legacy: legacy), default: 0] += 1
            let relaunch = try ReseedBinary.run(arguments)
            #expect(relaunch.status == 0, "\(relaunch.stderr)")
            #expect(try userRows(data.appendingPathComponent("big.sqlite")) == ["user data"])
        }
        print("adoption kills: \(Self.kills) over \(String(format: "%.3f", seconds)) s; usable store after each: \(states.sorted { $0.key < $1.key })")
    }

    /// Where the user's store is usable after a kill; the current location wins when both are there.
    private func usableLocation(current: URL, legacy: URL) throws -> String {
        if FileManager.default.fileExists(atPath: current.path) {
            #expect(try userRows(current) == ["user data"], "the current store must be complete when it exists")
            return FileManager.default.fileExists(atPath: legacy.path) ? "both (current complete)" : "current"
        }
        #expect(FileManager.default.fileExists(atPath: legacy.path), "the store vanished from both locations")
        #expect(try userRows(legacy) == ["user data"])
        return "legacy"
    }

    private func userRows(_ store: URL) throws -> [String] {
        let queue = try DatabaseQueue(path: store.path)
        defer { try? queue.close() }
        return try queue.read { db in
            #expect(try String.fetchOne(db, sql: "PRAGMA quick_check") == "ok")
            return try String.fetchAll(db, sql: "SELECT label FROM item")
        }
    }
}
