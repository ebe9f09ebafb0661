import Foundation
import GRDB
@testable import Reseed
import ReseedTesting
import ReseedTestSupport
import Testing

/// Issue 32: SIGKILL a real `reseed launch --user-store` while it carries the notes into a user store
/// that exists already (the app's migrations made its `note` table), and while it keeps aside a
/// store whose notes are not declared. After each kill every note is in the old store, the user store
/// or a file kept aside; no note is ever in two places but as an import the next launch finds done;
/// the next launch finishes.
@Suite(.serialized, .timeLimit(.minutes(20)))
struct UserStoreKillAsideTests {
    static let kills = 20

    /// Kills `arguments` at delays spread over a run's time; after each, `check` says the state (an
    /// issue when a note is lost), and every fourth round the next plain run must finish.
    func killRounds(_ device: UserRowsDevice, _ arguments: [String], prepare: (URL) throws -> Void,
                    check: (URL, String) throws -> String) throws -> [String: Int] {
        let data = device.sandbox.appending("data")
        func reset() throws {
            try device.reset(data)
            try prepare(data)
        }
        try reset()
        let clock = ContinuousClock()
        let start = clock.now
        let full = try ReseedBinary.run(arguments)
        #expect(full.status == 0, "\(full.stderr)")
        let elapsed = clock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        var generator = SplitMix64(seed: 0x5EED_32)
        var outcomes: [String: Int] = [:]
        for round in 0..<Self.kills {
            try reset()
            let delay = seconds * (Double(round) + Double(generator.int(0..<1000)) / 1000) / Double(Self.kills)
            let running = try ReseedBinary.start(arguments)
            Thread.sleep(forTimeInterval: delay)
            running.kill()
            let result = running.wait()
            let label = "round \(round), kill at \(String(format: "%.3f", delay)) s"
            outcomes["\(result.status == 0 ? "finished" : "killed") → \(try check(data, label))", default: 0] += 1
            if round % 4 == 0 {
                let next = try ReseedBinary.run(arguments)
                #expect(next.status == 0, "after \(label): \(next.stderr)")
                _ = try check(data, "after \(label), the next launch")
            }
        }
        return outcomes
    }

    @Test func noNoteIsLostToASIGKILLWhileCarryingIntoAnExistingUserStore() throws {
        let device = try UserRowsDevice(rows: 60_000, walRows: 500, paddingBytes: 8 << 20, prefix: "reseed-kill-carry")
        let userStore = UserRowsDevice.userStoreName + ".sqlite"
        let outcomes = try killRounds(device, device.arguments(device.sandbox.appending("data")), prepare: { data in
            // The app's user store, migrated by an earlier launch: an empty `note` table.
            let queue = try DatabaseQueue(path: data.appendingPathComponent(userStore).path)
            try queue.write { try $0.execute(sql: "CREATE TABLE note (id INTEGER PRIMARY KEY AUTOINCREMENT, item_id INTEGER, text TEXT NOT NULL)") }
            try queue.close()
        }, check: { data, label in
            let inStore = try UserRowsDevice.digest(at: data.appendingPathComponent("items.sqlite"))
            let inUser = try UserRowsDevice.digest(at: data.appendingPathComponent(userStore))
            let empty = "0|0|0|"
            switch (inStore == device.expected, inUser) {
            case (true, empty): return "old store with every note, user store empty"
            case (true, device.expected): return "old store and user store with every note (carried, not yet swapped)"
            case (false, device.expected) where inStore == nil: return "new seed, user store with every note"
            default:
                Issue.record("\(label): notes lost or doubled: store \(inStore ?? "none"), user store \(inUser ?? "none"), expected \(device.expected)")
                return "LOST"
            }
        })
        #expect(outcomes.keys.allSatisfy { !$0.contains("LOST") }, "\(outcomes)")
        print("carry kills: \(outcomes.sorted { $0.key < $1.key })")
    }

    @Test func noNoteIsLostToASIGKILLWhileTheStoreIsKeptAside() throws {
        let device = try UserRowsDevice(rows: 60_000, walRows: 500, paddingBytes: 8 << 20, prefix: "reseed-kill-aside")
        let data = device.sandbox.appending("data")
        // The user store turned on, `note` not declared: the store file is kept aside whole.
        let arguments = ["launch", "--seed", device.newSeed.manifestURL.path, "--data-dir", data.path, "--user-store", UserRowsDevice.userStoreName, "--json"]
        let outcomes = try killRounds(device, arguments, prepare: { _ in }, check: { data, label in
            let names = try FileManager.default.contentsOfDirectory(atPath: data.path)
            let aside = names.filter { $0.hasPrefix("items.sqlite.invalid-") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }
            let inStore = try UserRowsDevice.digest(at: data.appendingPathComponent("items.sqlite"))
            let inAside = try aside.map { try UserRowsDevice.digest(at: data.appendingPathComponent($0)) }
            #expect(aside.count <= 1, "\(label): kept aside \(aside.count) times")
            // The kept file alone holds every row: it was switched out of WAL before its second name.
            #expect(aside.allSatisfy { !names.contains($0 + "-wal") }, "\(label): a -wal beside the kept file")
            if inStore == device.expected { return aside.isEmpty ? "old store with every note" : "old store with every note, and a copy kept aside" }
            if inStore == nil, inAside == [device.expected] { return "new seed, old store kept aside with every note" }
            Issue.record("\(label): notes lost: store \(inStore ?? "none"), kept aside \(inAside), expected \(device.expected)")
            return "LOST"
        })
        #expect(outcomes.keys.allSatisfy { !$0.contains("LOST") }, "\(outcomes)")
        print("keep-aside kills: \(outcomes.sorted { $0.key < $1.key })")
    }
}
