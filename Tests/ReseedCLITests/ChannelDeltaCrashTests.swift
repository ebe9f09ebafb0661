import Foundation
import GRDB
@testable import Reseed
import ReseedPackaging
import ReseedSystem
import ReseedTesting
import ReseedTestSupport
import Synchronization
import Testing

/// The delta path of a channel update crashed after, or failed at, each of its file actions in turn
/// (the launcher's ``FileSystem`` seam, as in `CrashEveryStepTests`): 1.0.0 installed, 1.0.0 and
/// 1.1.0 published compressed with a delta between them. After each, the store is one seed whole,
/// the recorded version fits it, a launch of the app opens it, and a normal update reaches 1.1.0
/// and leaves no temporary or partial file.
///
/// The seam sees Reseed's own actions: the update lock, the partial download and its validator, the
/// files the delta path creates and removes, the install's copy, swap and preferences. SQLite's own
/// writes (the backup of the installed seed into the copy, the delta's transaction, their journals)
/// and the writes of the delta's decompression do not go through it: `KillDuringDeltaTests` kills a
/// real `reseed update` at random moments of those.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct ChannelDeltaCrashTests {
    /// A channel with 1.0.0 and 1.1.0 (and the delta between them), and a data directory holding
    /// 1.0.0 as the bundle installed it, kept as a template to reset to.
    final class Device {
        let sandbox: ChannelSandbox
        let bundled: Seed
        let offered: Seed
        let template: URL
        /// The content hashes of the two seeds, and their versions.
        let seeds: [String: String]

        init() throws {
            sandbox = try ChannelSandbox()
            bundled = try sandbox.release("1.0.0", generation: 0)
            try sandbox.launch(bundled)
            try sandbox.publish(bundled, compressed: true)
            offered = try sandbox.release("1.1.0", generation: 1)
            let published = try sandbox.publish(offered, compressed: true)
            #expect(published.manifest.deltas.count == 1, "\(published.skippedDeltas)")
            seeds = [try #require(bundled.manifest.contentHash): "1.0.0", try #require(offered.manifest.contentHash): "1.1.0"]
            template = sandbox.directory.appending("template")
            try FileManager.default.copyItem(at: sandbox.dataDirectory, to: template)
        }

        func reset() throws {
            if FileManager.default.fileExists(atPath: sandbox.dataDirectory.path) {
                try FileManager.default.removeItem(at: sandbox.dataDirectory)
            }
            try FileManager.default.copyItem(at: template, to: sandbox.dataDirectory)
        }

        /// An updater of the app shipping 1.0.0 whose file actions go through `plan`.
        func updater(_ plan: FaultPlan) -> ChannelUpdater {
            var launcher = sandbox.launcher(bundled)
            launcher.fileSystem = FileSystem(observer: plan)
            return ChannelUpdater(channel: sandbox.server.url, publicKey: sandbox.key.publicKey, launcher: launcher)
        }

        /// The invariant after an interrupted update, then the recovery: returns what the store held.
        func checkAndRecover(_ label: String) async throws -> String {
            let hash = try sandbox.storeContentHash()
            let recorded = try sandbox.recorded().version
            guard let holds = seeds[hash] else {
                Issue.record("\(label): the store holds neither seed (content hash \(hash))")
                return "neither"
            }
            if holds == "1.0.0" {
                #expect(recorded == "1.0.0", "\(label): 1.1.0 must never be recorded beside the 1.0.0 store")
            } else {
                #expect(recorded == "1.0.0" || recorded == "1.1.0", "\(label): recorded \(recorded ?? "nothing")")
            }
            // The app's next launch opens a sound store; it keeps what it finds (the recorded version ships or was downloaded).
            let (database, launched) = try sandbox.launcher(bundled).launch()
            let check = try await database.read { try String.fetchOne($0, sql: "PRAGMA quick_check") }
            try database.close()
            #expect(check == "ok", "\(label)")
            #expect(launched.version == recorded, "\(label): the launch reports \(launched.version), the preferences recorded \(recorded ?? "nothing")")
            #expect(try sandbox.storeContentHash() == hash, "\(label): the launch changed the store")

            let outcome = try await updater(FaultPlan(.record)).update()
            #expect(outcome.version == "1.1.0", "\(label)")
            #expect(try sandbox.storeContentHash() == offered.manifest.contentHash, "\(label): a normal update after it")
            #expect(try sandbox.recorded().version == "1.1.0", "\(label)")
            #expect(try sandbox.recordedContentHash() == offered.manifest.contentHash, "\(label)")
            let leftovers = try sandbox.downloadFiles()
            #expect(leftovers.isEmpty, "\(label): \(leftovers)")
            return "holds \(holds), records \(recorded ?? "nothing")"
        }

        /// The file actions of one delta update that succeeds, from the installed 1.0.0.
        func recordDeltaUpdate() async throws -> FaultPlan {
            try reset()
            let recording = FaultPlan(.record)
            let outcome = try await updater(recording).update()
            #expect(outcome.method == .delta)
            #expect(try sandbox.storeContentHash() == offered.manifest.contentHash)
            #expect(try sandbox.downloadFiles().isEmpty)
            return recording
        }
    }

    static func describe(_ action: FileAction) -> String {
        "\(action.kind.rawValue) \(URL(fileURLWithPath: action.path).lastPathComponent)"
    }

    @Test func aDeltaUpdateCrashedAfterEveryActionLeavesOneSeedWholeAndTheNextUpdateCompletes() async throws {
        let device = try Device()
        let actions = try await device.recordDeltaUpdate().actions
        #expect(actions.count >= 10, "\(actions)")
        // The delta path's own files are among the points a crash can follow.
        #expect(actions.contains { $0.kind == .createFile && $0.path.contains(".reseed-download-delta-") }, "\(actions.map(Self.describe))")
        var states: [String: Int] = [:]
        for k in 1...actions.count {
            try device.reset()
            let plan = FaultPlan(.crashAfter(k))
            let label = "crash after action \(k), \(Self.describe(actions[k - 1]))"
            let finished = (try? await device.updater(plan).update()) != nil
            #expect(plan.crashed, "\(label): not reached")
            // A crash in the clean-up after the install cannot stop an update that is done: those removals are best effort.
            let onlyCleanUpLeft = actions[k...].allSatisfy { $0.kind == .remove }
            #expect(!finished || onlyCleanUpLeft, "\(label): the update went on as if nothing happened")
            states[try await device.checkAndRecover(label), default: 0] += 1
        }
        print("delta update: crashed after each of \(actions.count) actions: \(states.sorted { $0.key < $1.key })")
        print("delta update actions: \(actions.map(Self.describe))")
    }

    @Test func aDeltaUpdateFailingAtEveryActionFallsBackOrFailsClearly() async throws {
        let device = try Device()
        let attempts = try await device.recordDeltaUpdate().attempts
        var results: [String: Int] = [:]
        for k in 1...attempts.count {
            try device.reset()
            let label = "EIO at attempt \(k), \(Self.describe(attempts[k - 1]))"
            do {
                let outcome = try await device.updater(FaultPlan(.fail(k))).update()
                #expect(outcome.action == .updated, "\(label)")
                #expect(outcome.version == "1.1.0", "\(label)")
                switch outcome.method {
                case .delta:
                    #expect(outcome.deltaFailure == nil, "\(label)")
                case .full:
                    #expect(outcome.deltaFailure?.isEmpty == false, "\(label): a full download without the delta's failure")
                case nil:
                    Issue.record("\(label): an update without a method")
                }
                results["updated by \(outcome.method?.rawValue ?? "nil")", default: 0] += 1
            } catch {
                #expect(error.path != nil || error.url != nil, "\(label): \(error)")
                #expect(error.errno == .ioError || error.code != .io, "\(label): \(error)")
                results["failed at \(error.step.rawValue)", default: 0] += 1
            }
            _ = try await device.checkAndRecover(label)
        }
        print("delta update: failed each of \(attempts.count) attempted actions with EIO: \(results.sorted { $0.key < $1.key })")
    }
}

/// Runs `body` once, just before the first file action that `matches` accepts.
final class BeforeAction: FileSystemObserver {
    private let matches: @Sendable (FileAction) -> Bool
    private let body: @Sendable () throws -> Void
    private let done = Mutex(false)

    init(_ matches: @escaping @Sendable (FileAction) -> Bool, _ body: @escaping @Sendable () throws -> Void) {
        self.matches = matches
        self.body = body
    }

    var ran: Bool { done.withLock { $0 } }

    func willPerform(_ action: FileAction) throws {
        guard matches(action), !done.withLock({ $0 }) else { return }
        done.withLock { $0 = true }
        try body()
    }

    func didPerform(_ action: FileAction) throws {}
}

extension ChannelDeltaCrashTests {
    /// Another process launches an app update that ships 2.0.0 while an update applies the channel's
    /// delta to 1.1.0 (just before it takes the store's lock to install): the update must not put
    /// 1.1.0 over the newer seed the launch installed.
    @Test func aNewerSeedALaunchInstalledMidUpdateIsNotReplacedByTheOlderDownload() async throws {
        let device = try Device()
        try device.reset()
        let appUpdate = try device.sandbox.release("2.0.0", generation: 5)
        let sandbox = device.sandbox
        let arguments = ["launch", "--seed", appUpdate.manifestURL.path, "--data-dir", sandbox.dataDirectory.path]
        let launch = BeforeAction({ $0.kind == .lock && $0.path.hasSuffix(".items.sqlite.reseed-lock") }) {
            let launched = try ReseedBinary.run(arguments)
            #expect(launched.status == 0, "\(launched.stderr)")
        }
        var launcher = sandbox.launcher(device.bundled)
        launcher.fileSystem = FileSystem(observer: launch)
        let updater = ChannelUpdater(channel: sandbox.server.url, publicKey: sandbox.key.publicKey, launcher: launcher)
        var result: String
        do { result = "\(try await updater.update())" } catch { result = "\(error)" }
        #expect(launch.ran)
        #expect(result.contains("items 2.0.0 was installed while this update fetched 1.1.0 over 1.0.0"), "\(result)")
        #expect(try sandbox.storeContentHash() == appUpdate.manifest.contentHash, "\(result)")
        #expect(try sandbox.recorded().version == "2.0.0", "\(result)")
    }
}
