import Foundation
import GRDB
@testable import Reseed
import ReseedSystem
import ReseedTesting
import ReseedTestSupport
import SystemPackage
import Testing

@Suite struct CrashEveryStepTests {
    /// A data directory where 1.0.0 is installed and was opened (WAL mode), and seeds 1.0.0 and 2.0.0.
    struct Device {
        let sandbox: LaunchSandbox
        let old: Seed
        let new: Seed
        let template: URL

        init() throws {
            sandbox = try LaunchSandbox()
            old = try sandbox.seed("1.0.0", rows: 3)
            new = try sandbox.seed("2.0.0", rows: 5, paddingBytes: 1 << 20)
            template = sandbox.directory.appending("template")
            let (pool, _) = try Launcher(seed: old.manifestURL, dataDirectory: template).launch()
            try pool.write { try $0.execute(sql: "INSERT INTO item (label) VALUES ('user')") }
            try pool.close()
        }

        func reset() throws {
            if FileManager.default.fileExists(atPath: sandbox.dataDirectory.path) {
                try FileManager.default.removeItem(at: sandbox.dataDirectory)
            }
            try FileManager.default.copyItem(at: template, to: sandbox.dataDirectory)
        }

        func launcher(_ seed: Seed, _ plan: FaultPlan?) -> Launcher {
            var launcher = sandbox.launcher(seed)
            launcher.fileSystem = FileSystem(observer: plan)
            return launcher
        }

        /// The invariant, read straight from the files: a sound store that is the old one with the
        /// old version recorded, or the new one (either version recorded). Returns which.
        func invariant() throws -> String {
            let recorded = try sandbox.recordedVersion()
            // A reader as an app's would be: it waits out a lock held for a moment, as by a
            // connection that is closing (a checkpoint), instead of failing at once.
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            let queue = try DatabaseQueue(path: sandbox.storeURL.path, configuration: configuration)
            defer { try? queue.close() }
            let (check, version, labels) = try queue.read { db in
                (try String.fetchOne(db, sql: "PRAGMA quick_check"), try SeedMetadata.read(db)?.version,
                 try String.fetchAll(db, sql: "SELECT label FROM item ORDER BY id"))
            }
            #expect(check == "ok")
            switch version {
            case "1.0.0":
                #expect(recorded == "1.0.0", "the new version must never be recorded next to the old store")
                #expect(labels == ["1.0.0-1", "1.0.0-2", "1.0.0-3", "user"])
                return "old"
            case "2.0.0":
                #expect(labels.count == 5)
                #expect(recorded == "1.0.0" || recorded == "2.0.0")
                return "new, recorded \(recorded ?? "nothing")"
            default:
                Issue.record("the store holds neither seed (\(String(describing: version)))")
                return "neither"
            }
        }

        /// A clean launch of `seed` afterwards succeeds and leaves no temporary file.
        func relaunch(_ seed: Seed) throws {
            let outcome = try sandbox.launcher(seed).prepare()
            #expect(outcome.version == seed.manifest.version)
            #expect(try sandbox.temporaryFiles().isEmpty)
            #expect(try sandbox.embeddedVersion() == seed.manifest.version)
        }
    }

    @Test func installCrashedAfterEveryActionKeepsTheInvariant() throws {
        let device = try Device()
        try device.reset()
        let recording = FaultPlan(.record)
        _ = try device.launcher(device.new, recording).prepare()
        let actions = recording.actions
        #expect(actions.count >= 8, "\(actions)")
        var states: [String: Int] = [:]
        for k in 1...actions.count {
            try device.reset()
            let plan = FaultPlan(.crashAfter(k))
            #expect(throws: (any Error).self, "crash after \(actions[k - 1])") { try device.launcher(device.new, plan).prepare() }
            #expect(plan.crashed)
            states[try device.invariant(), default: 0] += 1
            try device.relaunch(device.new)
        }
        print("install: \(actions.count) actions crashed after, one at a time: \(states.sorted { $0.key < $1.key })")
        print("install actions: \(actions.map { "\($0.kind.rawValue) \(URL(fileURLWithPath: $0.path).lastPathComponent)" })")
    }

    @Test func installFailingAtEveryActionGivesATypedErrorAndKeepsTheInvariant() throws {
        let device = try Device()
        try device.reset()
        let recording = FaultPlan(.record)
        _ = try device.launcher(device.new, recording).prepare()
        let count = recording.attempts.count
        for k in 1...count {
            try device.reset()
            do {
                _ = try device.launcher(device.new, FaultPlan(.fail(k))).prepare()
                Issue.record("an I/O error at action \(k) (\(recording.attempts[k - 1])) went unnoticed")
            } catch {
                #expect(type(of: error) == ReseedError.self, "\(error)")
            }
            _ = try device.invariant()
            try device.relaunch(device.new)
        }
        print("install: \(count) attempted actions failed with EIO, one at a time")
    }

    @Test func liveReplaceCrashedOrFailedAfterEveryActionKeepsTheInvariant() async throws {
        let device = try Device()
        try device.reset()
        let recording = FaultPlan(.record, armed: false)
        let store = try await LiveStore(launcher: device.launcher(device.old, recording))
        recording.arm()
        try await store.replace(with: device.new)
        let crashPoints = recording.actions.count
        let failPoints = recording.attempts.count
        #expect(crashPoints >= 8)
        for (crash, points) in [(true, crashPoints), (false, failPoints)] {
            for k in 1...points {
                try device.reset()
                let plan = FaultPlan(crash ? .crashAfter(k) : .fail(k), armed: false)
                do {
                    let live = try await LiveStore(launcher: device.launcher(device.old, plan))
                    plan.arm()
                    let replaced = (try? await live.replace(with: device.new)) != nil
                    // Work that may finish anyway: a crash after the very last action; a failure to give the old
                    // file a second name (it is then freed inside the swap instead) or to remove that name
                    // afterwards (the next opening removes it).
                    let action = crash ? recording.actions[k - 1] : recording.attempts[k - 1]
                    let optional = !crash && action.path.contains(".reseed-tmp-") && (action.kind == .link || k == points)
                    #expect(!replaced || (crash && k == points) || optional, "\(crash ? "crash after" : "failure of") \(action) went unnoticed")
                    if !crash {
                        let rows = try await live.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM item") }
                        #expect(rows == 4 || rows == 5, "the live store stays usable after a failed replace")
                    }
                }
                // The process is gone (the live store released); what is on disk must hold.
                _ = try device.invariant()
                let relaunched = try await LiveStore(launcher: device.sandbox.launcher(device.new))
                #expect(relaunched.version == "2.0.0")
                #expect(try device.sandbox.temporaryFiles().isEmpty, "a relaunch removes what the interrupted replace left")
            }
        }
        print("live replace: crashed after each of \(crashPoints) actions, failed each of \(failPoints) attempts with EIO")
    }
}
