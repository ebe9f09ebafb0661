import Foundation
@testable import Reseed
import ReseedSystem
import ReseedTesting
import ReseedTestSupport
import Synchronization
import Testing

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

/// An update racing a launch of another process: the `reseed` binary launches while the update runs.
@Suite(.timeLimit(.minutes(10)))
struct UpdateRaceTests {
    /// Another process launches an app update that ships 2.0.0 while an update applies the channel's
    /// delta to 1.1.0 (just before it takes the store's lock to install): the update must not put
    /// 1.1.0 over the newer seed the launch installed.
    @Test func aNewerSeedALaunchInstalledMidUpdateIsNotReplacedByTheOlderDownload() async throws {
        // 1.0.0 installed from the bundle; the channel offers 1.1.0 and its delta from 1.0.0.
        let sandbox = try ChannelSandbox()
        let bundled = try sandbox.release("1.0.0", generation: 0)
        try sandbox.launch(bundled)
        try sandbox.publish(bundled, compressed: true)
        let offered = try sandbox.release("1.1.0", generation: 1)
        #expect(try sandbox.publish(offered, compressed: true).manifest.deltas.count == 1)
        let appUpdate = try sandbox.release("2.0.0", generation: 5)
        let arguments = ["launch", "--seed", appUpdate.manifestURL.path, "--data-dir", sandbox.dataDirectory.path]
        let launch = BeforeAction({ $0.kind == .lock && $0.path.hasSuffix(".items.sqlite.reseed-lock") }) {
            let launched = try ReseedBinary.run(arguments)
            #expect(launched.status == 0, "\(launched.stderr)")
        }
        var launcher = sandbox.launcher(bundled)
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
