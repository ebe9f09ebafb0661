import Foundation
import GRDB
import Logging
@testable import Reseed
import ReseedSystem
import ReseedTesting
import ReseedTestSupport
import Testing

/// The install pipeline's crash and fault matrix, one table of cases run against every entry point
/// that installs a seed: a launch, a live replace, a switch to another store, and a channel update
/// (the full seed or a delta, to a closed store or to a live one).
///
/// Each entry point takes a data directory holding 1.0.0 (installed from the bundle) to 1.1.0 once
/// while a `FaultPlan` records its file actions; then, for every action k, it runs again from the
/// same state (a) crashed right after action k and (b) with action k failing with EIO. After each,
/// the same checks: the store is one seed whole (1.0.0 with 1.0.0 recorded, or 1.1.0 with either
/// recorded), an app's next launch opens it unchanged, and running the entry point again without
/// faults ends at 1.1.0 with no temp or download file left.
///
/// The seam sees every action Reseed's own code takes on files (a delta's copy of the installed seed
/// included); SQLite's writes (a delta's transaction, the replay of a copied `-wal`, a live store's
/// checkpoint) do not go through it: `KillDuringDeltaTests` and `KillDuringInstallTests` kill the
/// real binary at random moments of those.
@Suite(.timeLimit(.minutes(20)))
struct InstallPipelineFaultTests {
    enum EntryPoint: String, CaseIterable, CustomTestStringConvertible {
        case launch, liveReplace, switchTo, fullUpdate, deltaUpdate, liveFullUpdate, liveDeltaUpdate
        var testDescription: String { rawValue }
        /// The entry point installs the bundled seed: the app's next launch ships 1.1.0.
        var installsBundled: Bool { self == .launch || self == .switchTo }
        var usesDelta: Bool { self == .deltaUpdate || self == .liveDeltaUpdate }
        var opensALiveStore: Bool { self == .liveReplace || self == .switchTo || self == .liveFullUpdate || self == .liveDeltaUpdate }
    }

    /// A channel offering 1.1.0 (with its delta from 1.0.0 when `delta`), and a data directory
    /// holding 1.0.0 as the bundle installed it, kept as a template to reset to.
    final class Device {
        let sandbox: ChannelSandbox
        let bundled: Seed
        let offered: Seed
        let template: URL
        /// The content hashes of the two seeds, and their versions.
        let seeds: [String: String]
        /// The SHA-256 of the installed store file as the entry point found it: until the swap, nothing
        /// may write it. Only for an entry point that installs over a closed store: a live store's own
        /// pool copies its WAL frames into the file when it closes (the app's write, not the install's),
        /// so there the content hash is what stays.
        var installedBytes: String?
        /// Another data directory, for the store a switch leaves.
        var elsewhere: URL { sandbox.directory.appending("elsewhere") }

        init(delta: Bool) throws {
            sandbox = try ChannelSandbox()
            bundled = try sandbox.release("1.0.0", generation: 0)
            try sandbox.launch(bundled)
            if delta { try sandbox.publish(bundled, compressed: true) }
            offered = try sandbox.release("1.1.0", generation: 1)
            let published = try sandbox.publish(offered, compressed: true)
            #expect(published.manifest.deltas.count == (delta ? 1 : 0), "\(published.skippedDeltas)")
            seeds = [try #require(bundled.manifest.contentHash): "1.0.0", try #require(offered.manifest.contentHash): "1.1.0"]
            template = sandbox.directory.appending("template")
            try FileManager.default.copyItem(at: sandbox.dataDirectory, to: template)
            _ = try Launcher(seed: bundled.manifestURL, dataDirectory: elsewhere).prepare()
        }

        func reset() throws {
            if FileManager.default.fileExists(atPath: sandbox.dataDirectory.path) {
                try FileManager.default.removeItem(at: sandbox.dataDirectory)
            }
            try FileManager.default.copyItem(at: template, to: sandbox.dataDirectory)
        }

        /// The launcher of the app shipping `seed`, its file actions through `plan`.
        func launcher(_ seed: Seed, _ plan: FaultPlan?) -> Launcher {
            var launcher = sandbox.launcher(seed)
            if let plan { launcher.fileSystem = FileSystem(observer: plan) }
            return launcher
        }

        /// Runs `entry` once, its file actions through `plan` (armed only for the install itself, not
        /// for opening a live store first). Returns whether it finished.
        func run(_ entry: EntryPoint, _ plan: FaultPlan) async throws -> Bool {
            installedBytes = try fileSHA256(sandbox.dataDirectory.appendingPathComponent("items.sqlite"))
            switch entry {
            case .launch:
                _ = try launcher(offered, plan).prepare()
            case .liveReplace:
                let store = try await LiveStore(launcher: launcher(bundled, plan))
                plan.arm()
                try await staysUsable(store) { try await store.replace(with: offered) }
            case .switchTo:
                let store = try await LiveStore(launcher: Launcher(seed: bundled.manifestURL, dataDirectory: elsewhere))
                plan.arm()
                try await staysUsable(store) { try await store.switchTo(launcher(offered, plan)) }
            case .fullUpdate, .deltaUpdate:
                let outcome = try await ChannelUpdater(channel: sandbox.server.url, publicKey: sandbox.key.publicKey, launcher: launcher(bundled, plan)).update()
                #expect(outcome.version == "1.1.0")
            case .liveFullUpdate, .liveDeltaUpdate:
                let store = try await LiveStore(launcher: launcher(bundled, plan))
                plan.arm()
                try await staysUsable(store) {
                    let outcome = try await ChannelUpdater(channel: sandbox.server.url, publicKey: sandbox.key.publicKey, store: store).update()
                    #expect(outcome.version == "1.1.0")
                }
            }
            return true
        }

        /// Runs `body` on an open live store; when it fails (an I/O error, not a simulated crash,
        /// after which the process is gone), the store still answers reads, from one seed whole.
        func staysUsable(_ store: LiveStore, _ body: () async throws -> Void) async throws {
            do {
                try await body()
            } catch let error as ReseedError {
                let rows = try await store.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM item") }
                #expect(rows == 3000 || rows == 2996, "the live store must stay usable after a failure: \(rows ?? -1) rows")
                throw error
            }
        }

        /// What the store holds, by its content hash, and the version recorded.
        func state() throws -> (holds: String?, recorded: String?) {
            (seeds[try sandbox.storeContentHash()], try sandbox.recorded().version)
        }

        /// The invariant after an interrupted run, then the recovery: returns what the store held.
        func checkAndRecover(_ entry: EntryPoint, _ label: String) async throws -> String {
            let bytes = try fileSHA256(sandbox.dataDirectory.appendingPathComponent("items.sqlite"))
            let hash = try sandbox.storeContentHash()
            let recorded = try sandbox.recorded().version
            guard let holds = seeds[hash] else {
                Issue.record("\(label): the store holds neither seed (content hash \(hash))")
                return "neither"
            }
            if holds == "1.0.0" {
                #expect(recorded == "1.0.0", "\(label): 1.1.0 must never be recorded beside the 1.0.0 store")
                if !entry.opensALiveStore || entry == .switchTo {
                    #expect(bytes == installedBytes, "\(label): the installed seed's bytes changed before the swap")
                }
            } else {
                #expect(recorded == "1.0.0" || recorded == "1.1.0", "\(label): recorded \(recorded ?? "nothing")")
            }
            // The app's next launch opens a sound store. An app that still ships 1.0.0 keeps what
            // it finds (what is recorded ships or was downloaded); one that ships 1.1.0 installs it.
            let next = entry.installsBundled ? offered : bundled
            let (database, launched) = try sandbox.launcher(next).launch()
            let check = try await database.read { try String.fetchOne($0, sql: "PRAGMA quick_check") }
            try database.close()
            #expect(check == "ok", "\(label)")
            if !entry.installsBundled {
                // What the store holds, recorded by this launch when a crash cut the swap's record short.
                #expect(launched.version == holds, "\(label): the launch reports \(launched.version), the store holds \(holds) (recorded \(recorded ?? "nothing"))")
                let recordedNow = try sandbox.recorded().version
                #expect(recordedNow == holds, "\(label): the launch left \(recordedNow ?? "nothing") recorded beside \(holds)")
                #expect(try sandbox.storeContentHash() == hash, "\(label): the launch changed the store")
            }

            _ = try await run(entry, FaultPlan(.record))
            #expect(try sandbox.storeContentHash() == offered.manifest.contentHash, "\(label): the entry point run again")
            #expect(try sandbox.recorded().version == "1.1.0", "\(label)")
            let leftovers = try sandbox.downloadFiles()
            #expect(leftovers.isEmpty, "\(label): \(leftovers)")
            return "holds \(holds), records \(recorded ?? "nothing")"
        }

        /// The file actions of one run of `entry` that succeeds, from the installed 1.0.0.
        func record(_ entry: EntryPoint) async throws -> FaultPlan {
            try reset()
            let recording = plan(.record, for: entry)
            _ = try await run(entry, recording)
            let (holds, recorded) = try state()
            #expect(holds == "1.1.0" && recorded == "1.1.0", "\(entry): holds \(holds ?? "neither"), recorded \(recorded ?? "nothing")")
            #expect(try sandbox.downloadFiles().isEmpty)
            return recording
        }

        /// A plan for `entry`: armed from the start, or, for one that opens a live store first, once it is open.
        func plan(_ mode: FaultPlan.Mode, for entry: EntryPoint) -> FaultPlan {
            FaultPlan(mode, armed: !entry.opensALiveStore)
        }
    }

    static func describe(_ action: FileAction) -> String {
        "\(action.kind.rawValue) \(URL(fileURLWithPath: action.path).lastPathComponent)"
    }

    @Test(arguments: EntryPoint.allCases)
    func crashedAfterEveryActionTheStoreIsOneSeedWholeAndTheEntryPointCompletesNextTime(_ entry: EntryPoint) async throws {
        let device = try Device(delta: entry.usesDelta)
        let actions = try await device.record(entry).actions
        #expect(actions.count >= 6, "\(actions.map(Self.describe))")
        if entry.usesDelta {
            #expect(actions.contains { $0.kind == .createFile && $0.path.contains(".reseed-download-delta-") }, "\(actions.map(Self.describe))")
        }
        var states: [String: Int] = [:]
        for k in 1...actions.count {
            try device.reset()
            let plan = device.plan(.crashAfter(k), for: entry)
            let label = "\(entry): crash after action \(k), \(Self.describe(actions[k - 1]))"
            let finished = (try? await device.run(entry, plan)) == true
            #expect(plan.crashed, "\(label): not reached")
            // A crash in the clean-up after the install cannot stop work that is done: those removals are best effort.
            let onlyCleanUpLeft = actions[k...].allSatisfy { $0.kind == .remove }
            #expect(!finished || onlyCleanUpLeft, "\(label): it went on as if nothing happened")
            states[try await device.checkAndRecover(entry, label), default: 0] += 1
        }
        print("\(entry): crashed after each of \(actions.count) actions: \(states.sorted { $0.key < $1.key })")
    }

    @Test(arguments: EntryPoint.allCases)
    func failingAtEveryActionGivesAnErrorThatSaysWhereOrFinishesAndTheStoreIsOneSeedWhole(_ entry: EntryPoint) async throws {
        let device = try Device(delta: entry.usesDelta)
        let attempts = try await device.record(entry).attempts
        var results: [String: Int] = [:]
        for k in 1...attempts.count {
            try device.reset()
            let label = "\(entry): EIO at attempt \(k), \(Self.describe(attempts[k - 1]))"
            do {
                _ = try await device.run(entry, device.plan(.fail(k), for: entry))
                // Finished anyway: a delta's failure fell back to the full seed, or a best-effort removal failed.
                #expect(try device.state().holds == "1.1.0", "\(label)")
                results["finished", default: 0] += 1
            } catch let error as ReseedError {
                #expect(error.path != nil || error.url != nil, "\(label): \(error)")
                #expect(error.errno == .ioError || error.code != .io, "\(label): \(error)")
                results["failed at \(error.step.rawValue)", default: 0] += 1
            } catch {
                Issue.record("\(label): not a ReseedError: \(error)")
            }
            _ = try await device.checkAndRecover(entry, label)
        }
        print("\(entry): failed each of \(attempts.count) attempted actions with EIO: \(results.sorted { $0.key < $1.key })")
    }

    /// A live update decides against the version it found, as one of a closed store does: when
    /// another process recorded another version since (a launch of an updated app), the seed is
    /// refused with a sentence, and the open store stays as it was.
    @Test(arguments: [EntryPoint.liveFullUpdate, .liveDeltaUpdate])
    func aLiveUpdateIsRefusedWhenAnotherProcessRecordedAnotherVersion(_ entry: EntryPoint) async throws {
        let device = try Device(delta: entry.usesDelta)
        let store = try await LiveStore(launcher: device.launcher(device.bundled, nil))
        // What a launch of an app shipping 1.2.0 in another process would leave recorded.
        _ = try PreferencesFile(url: device.sandbox.preferencesURL).record([.version("1.2.0")], for: "items", timeout: .seconds(10), logger: Logger(label: "test"))
        let error = await #expect(throws: ReseedError.self) {
            try await ChannelUpdater(channel: device.sandbox.server.url, publicKey: device.sandbox.key.publicKey, store: store).update()
        }
        #expect(error?.code == .channelRefused)
        #expect(error?.message.contains("items 1.2.0 was installed while this update fetched 1.1.0 over 1.0.0") == true, "\(String(describing: error))")
        #expect(store.version == "1.0.0")
        #expect(try await store.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM item") } == 3000)
        #expect(device.seeds[try device.sandbox.storeContentHash()] == "1.0.0")
    }

    /// The copy of a single-file store and its `-wal` are each fsynced once, before the rename, after
    /// the checks and the switch to WAL: a second fsync of the copy is a journal commit of its own.
    @Test(arguments: EntryPoint.allCases)
    func theCopyAndItsWALAreSyncedOnceEach(_ entry: EntryPoint) async throws {
        let device = try Device(delta: entry.usesDelta)
        let attempts = try await device.record(entry).attempts
        let rename = try #require(attempts.firstIndex { $0.kind == .rename && $0.path.hasSuffix("/items.sqlite") })
        let synced = attempts[..<rename].filter { $0.kind == .sync && $0.path.contains(".items.sqlite.reseed-tmp-") }
            .map { URL(fileURLWithPath: $0.path).lastPathComponent }
        #expect(synced.count == 2 && Set(synced).count == 2, "\(synced)")
        #expect(synced.filter { $0.hasSuffix("-wal") }.count == 1, "\(synced)")
    }

    /// A rename that fails leaves the old file the store: the descriptor the install held to free it
    /// later is closed before the install returns, not on a thread that could close it after this
    /// process opened the store again (a close drops every lock the process holds on the file).
    @Test(arguments: [EntryPoint.launch, .fullUpdate, .deltaUpdate])
    func aFailedRenameLeavesNoDescriptorOfTheStoreOpen(_ entry: EntryPoint) async throws {
        let device = try Device(delta: entry.usesDelta)
        let attempts = try await device.record(entry).attempts
        let rename = try #require(attempts.firstIndex { $0.kind == .rename && $0.path.hasSuffix("/items.sqlite") })
        try device.reset()
        let store = try ReplacedStoreTests.inode(device.sandbox.storeURL.path)
        await #expect(throws: ReseedError.self) { _ = try await device.run(entry, device.plan(.fail(rename + 1), for: entry)) }
        #expect(ReplacedStoreTests.descriptors(of: store).isEmpty, "\(entry)")
        #expect(try ReplacedStoreTests.inode(device.sandbox.storeURL.path) == store)
    }

    /// Readying a live store's copy (its switch to WAL) is not the source's doing: a failure there
    /// is the error, and a delta's update does not go and download the full seed for it.
    @Test func aFailureReadyingALiveCopyDoesNotFallBackToTheFullSeed() async throws {
        let device = try Device(delta: true)
        let attempts = try await device.record(.liveDeltaUpdate).attempts
        // The copy's last sync before it is renamed in: the pipeline readying it (its switch to WAL).
        let rename = try #require(attempts.firstIndex { $0.kind == .rename && $0.path.hasSuffix("/items.sqlite") })
        let ready = try #require(attempts[..<rename].lastIndex { $0.kind == .sync && $0.path.contains(".items.sqlite.reseed-tmp-") })
        try device.reset()
        await #expect(throws: ReseedError.self) { _ = try await device.run(.liveDeltaUpdate, device.plan(.fail(ready + 1), for: .liveDeltaUpdate)) }
        let full = try device.sandbox.server.requests().filter { $0.path.hasSuffix(".sqlite.gz") || $0.path.hasSuffix(".sqlite") }
        #expect(full.isEmpty, "the full seed was downloaded: \(full)")
        #expect(try device.state().holds == "1.0.0")
    }
}
