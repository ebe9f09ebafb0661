import Foundation
import GRDB
@testable import Reseed
import ReseedPackaging
import ReseedSystem
import ReseedTestSupport
import ReseedTesting
import Synchronization
import Testing

/// `ChannelUpdater`'s logic against a channel served in memory (``InMemoryChannel``): what it
/// fetches, verifies, resumes, installs and records. The HTTP engines themselves are tested against
/// a real server in ``ChannelTransferTests``.
@Suite(.timeLimit(.minutes(10))) struct ChannelUpdateTests {
    @Test func updateInstallsANewerSeedFromTheChannel() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        let offered = try sandbox.seed("1.1.0", rows: 4)
        try sandbox.publish(offered)

        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.action == .updated)
        #expect(outcome.version == "1.1.0")
        #expect(outcome.previousVersion == "1.0.0")
        #expect(outcome.downloadedBytes == offered.manifest.size)
        #expect(outcome.resumedFrom == nil)
        #expect(try sandbox.labels() == ["1.1.0-1", "1.1.0-2", "1.1.0-3", "1.1.0-4"])
        #expect(try sandbox.recorded() == ("1.1.0", .download))
        #expect(try sandbox.downloadFiles().isEmpty)
        #expect(try sandbox.server.requests().map(\.path) == ["/channel.json", "/channel.json.sig", "/keys.json", "/items-1.1.0.sqlite"])
    }

    @Test func anUnchangedChannelCostsOneNotModifiedRequest() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0"))
        _ = try await sandbox.updater(bundled).update()
        let before = try sandbox.server.requests().count

        let again = try await sandbox.updater(bundled).update()
        #expect(again.action == .upToDate)
        #expect(again.notModified)
        #expect(again.version == "1.1.0")
        #expect(again.downloadedBytes == 0)
        let requests = try sandbox.server.requests().dropFirst(before)
        #expect(requests.count == 1)
        #expect(requests.first?.path == "/channel.json")
        #expect(requests.first?.status == 304)
        #expect(requests.first?.ifNoneMatch != nil)
        // The validators sit in the store's entry; the app's own keys are untouched.
        let preferences = try String(contentsOf: sandbox.preferencesURL, encoding: .utf8)
        #expect(preferences.contains("\"channel\": {\"url\": \"\(sandbox.server.url.absoluteString)\", \"etag\": "))
    }

    @Test func aChannelOfferingTheInstalledVersionIsUpToDateWithoutDownloading() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(bundled)
        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.action == .upToDate)
        #expect(!outcome.notModified)
        #expect(try sandbox.server.requests().map(\.path) == ["/channel.json", "/channel.json.sig", "/keys.json"])
        #expect(try sandbox.recorded() == ("1.0.0", .bundle))
    }

    @Test func aTamperedSeedIsRefusedAndTheOldStoreStays() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4))
        let published = sandbox.publishedSeed("1.1.0")
        var bytes = try Data(contentsOf: published)
        bytes[bytes.count - 100] ^= 0xFF
        try bytes.write(to: published)

        let error = await #expect(throws: ReseedError.self) { try await sandbox.updater(bundled).update() }
        #expect(error?.code == .verificationFailed)
        #expect(error?.description.contains("SHA-256") == true)
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
        #expect(try sandbox.recorded() == ("1.0.0", .bundle))
        #expect(try sandbox.downloadFiles().isEmpty, "a download that does not match its checksum is not kept")
    }

    @Test func aTamperedManifestIsRefusedAfterReadingThePairTwice() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0"))
        let manifestURL = sandbox.channel.appendingPathComponent(ChannelManifest.fileName)
        let text = try String(contentsOf: manifestURL, encoding: .utf8)
        try text.replacingOccurrences(of: "\"version\": \"1.1.0\"", with: "\"version\": \"9.9.9\"").write(to: manifestURL, atomically: true, encoding: .utf8)

        let error = await #expect(throws: ReseedError.self) { try await sandbox.updater(bundled).update() }
        #expect(error?.code == .signature)
        #expect(error?.step == .checkSignature)
        #expect(try sandbox.server.requests().map(\.path) == ["/channel.json", "/channel.json.sig", "/keys.json", "/channel.json", "/channel.json.sig"])
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
        #expect(try sandbox.recorded().version == "1.0.0")
    }

    /// A publish writes the signature just before the manifest: a check between the two reads the
    /// older manifest with the newer signature, and the second reading of the pair succeeds.
    @Test func aPairReadDuringAPublishVerifiesOnTheSecondReading() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0"))
        let manifestURL = sandbox.channel.appendingPathComponent(ChannelManifest.fileName)
        try FileManager.default.copyItem(at: manifestURL, to: sandbox.channel.appendingPathComponent("older-channel.json"))
        try sandbox.publish(try sandbox.seed("1.2.0", rows: 4))
        try sandbox.server.set(["once": [ChannelManifest.fileName: "older-channel.json"]])

        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.action == .updated)
        #expect(outcome.version == "1.2.0")
        #expect(try sandbox.server.requests().map(\.path) == ["/channel.json", "/channel.json.sig", "/keys.json", "/channel.json", "/channel.json.sig", "/items-1.2.0.sqlite"])
        #expect(try sandbox.labels() == ["1.2.0-1", "1.2.0-2", "1.2.0-3", "1.2.0-4"])
        #expect(try sandbox.recorded() == ("1.2.0", .download))
    }

    @Test func aManifestSignedByAnotherKeyIsRefused() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0"))
        let stranger = ChannelPrivateKey().publicKey
        let error = await #expect(throws: ReseedError.self) { try await sandbox.updater(bundled, publicKey: stranger).update() }
        #expect(error?.code == .signature)
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
        #expect(!(try sandbox.server.requests().contains { $0.path.hasSuffix(".sqlite") }), "nothing is downloaded on an unsigned offer")
    }

    @Test func aDownloadCutInTheMiddleResumesOnTheNextTry() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let cut = 300_000
        let (bundled, offered, error) = try await sandbox.cutDownload(after: cut, paddingBytes: 2 << 20)
        #expect(error?.code == .download)
        #expect(error?.step == .download)
        #expect(error?.description.contains("\(cut) of \(offered.manifest.size) bytes are kept") == true)
        let partial = try #require(try sandbox.downloadFiles().first { !$0.hasSuffix(".etag") })
        #expect(partial == ".items.sqlite.reseed-download-" + offered.manifest.sha256.prefix(16))
        let kept = try FileManager.default.attributesOfItem(atPath: sandbox.dataDirectory.appendingPathComponent(partial).path)[.size] as? Int
        #expect(kept == cut)
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
        // A launch in between removes only its own temporary files.
        try sandbox.launch(bundled)
        #expect(try sandbox.downloadFiles().contains(partial))

        try sandbox.server.set([:])
        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.action == .updated)
        #expect(outcome.resumedFrom == Int64(cut))
        #expect(outcome.downloadedBytes == offered.manifest.size - Int64(cut))
        let seedRequests = try sandbox.server.requests().filter { $0.path == "/items-1.1.0.sqlite" }
        #expect(seedRequests.count == 2)
        #expect(seedRequests.last?.range == "bytes=\(cut)-")
        #expect(seedRequests.last?.ifRange != nil)
        #expect(seedRequests.last?.status == 206)
        #expect(try sandbox.labels() == ["1.1.0-1", "1.1.0-2", "1.1.0-3", "1.1.0-4"])
        #expect(try sandbox.downloadFiles().isEmpty)
    }

    /// A server that cannot send the rest of a partial download (416, a file shorter on the server
    /// than on the device) gets one request for the whole file, and the update completes.
    @Test func aResumeTheServerCannotSatisfyStartsOverOnce() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let cut = 200_000
        let (bundled, offered, error) = try await sandbox.cutDownload(after: cut, paddingBytes: 1 << 20)
        #expect(error?.code == .download)

        try sandbox.server.set(["rangeStatus": ["items-1.1.0.sqlite": 416]])
        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.action == .updated)
        #expect(outcome.resumedFrom == nil)
        #expect(outcome.downloadedBytes == offered.manifest.size)
        let seedRequests = try sandbox.server.requests().filter { $0.path == "/items-1.1.0.sqlite" }
        #expect(seedRequests.map(\.range) == [nil, "bytes=\(cut)-", nil])
        #expect(seedRequests.map(\.status) == [200, 416, 200])
        #expect(try sandbox.labels() == ["1.1.0-1", "1.1.0-2", "1.1.0-3", "1.1.0-4"])
        #expect(try sandbox.downloadFiles().isEmpty)
    }

    @Test func aNewerPublishDiscardsThePartialDownloadOfAnOlderOne() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0", paddingBytes: 1 << 20))
        try sandbox.server.set(["cut": ["items-1.1.0.sqlite": 100_000]])
        await #expect(throws: ReseedError.self) { try await sandbox.updater(bundled).update() }
        #expect(!(try sandbox.downloadFiles().isEmpty))

        try sandbox.publish(try sandbox.seed("1.2.0", rows: 5))
        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.version == "1.2.0")
        #expect(outcome.resumedFrom == nil)
        #expect(try sandbox.downloadFiles().isEmpty)
        #expect(try sandbox.labels().count == 5)
    }

    @Test func aServerThatIgnoresTheRangeSendsTheWholeSeedAndItInstalls() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let cut = 300_000
        let (bundled, offered, error) = try await sandbox.cutDownload(after: cut, paddingBytes: 1 << 20)
        #expect(error?.code == .download)

        try sandbox.server.set(["ignoreRange": ["items-1.1.0.sqlite"]])
        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.action == .updated)
        #expect(outcome.resumedFrom == nil)
        #expect(outcome.downloadedBytes == offered.manifest.size)
        let requests = try sandbox.server.requests().filter { $0.path == "/items-1.1.0.sqlite" }
        #expect(requests.map(\.range) == [nil, "bytes=\(cut)-"])
        #expect(requests.map(\.status) == [200, 200])
        #expect(try sandbox.labels() == ["1.1.0-1", "1.1.0-2", "1.1.0-3", "1.1.0-4"])
        #expect(try sandbox.downloadFiles().isEmpty)
    }

    /// A server that answers the range with other bytes (the file changed on the host, its validator
    /// not): the whole file's SHA-256 refuses the splice, nothing is installed, nothing is kept, and
    /// the next try asks for the whole file.
    @Test func aRangeAnsweredWithOtherBytesIsRefusedByTheWholeChecksumAndTheNextTryStartsOver() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let cut = 300_000
        let (bundled, _, error) = try await sandbox.cutDownload(after: cut, paddingBytes: 1 << 20)
        #expect(error?.code == .download)

        try sandbox.server.set(["rangeFlipped": ["items-1.1.0.sqlite"]])
        let spliced = await #expect(throws: ReseedError.self) { try await sandbox.updater(bundled).update() }
        #expect(spliced?.code == .verificationFailed)
        #expect(spliced?.message.contains("the signed channel manifest says") == true)
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
        #expect(try sandbox.recorded() == ("1.0.0", .bundle))
        #expect(try sandbox.downloadFiles().isEmpty)

        try sandbox.server.set([:])
        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.action == .updated)
        #expect(outcome.resumedFrom == nil)
        let requests = try sandbox.server.requests().filter { $0.path == "/items-1.1.0.sqlite" }
        #expect(requests.map(\.range) == [nil, "bytes=\(cut)-", nil])
        #expect(requests.map(\.status) == [200, 206, 200])
        #expect(try sandbox.labels() == ["1.1.0-1", "1.1.0-2", "1.1.0-3", "1.1.0-4"])
    }

    /// A `206` for another range than the one asked for is never written; the same update asks
    /// once more for the whole file, as after a `416`.
    @Test func aContentRangeForAnotherRangeStartsOverOnce() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let cut = 300_000
        let (bundled, offered, error) = try await sandbox.cutDownload(after: cut, paddingBytes: 1 << 20)
        #expect(error?.code == .download)

        let size = offered.manifest.size
        try sandbox.server.set(["contentRange": ["items-1.1.0.sqlite": "bytes 0-\(size - 1)/\(size)"]])
        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.action == .updated)
        #expect(outcome.resumedFrom == nil)
        #expect(outcome.downloadedBytes == size)
        let requests = try sandbox.server.requests().filter { $0.path == "/items-1.1.0.sqlite" }
        #expect(requests.map(\.range) == [nil, "bytes=\(cut)-", nil])
        #expect(requests.map(\.status) == [200, 206, 200])
        #expect(try sandbox.labels() == ["1.1.0-1", "1.1.0-2", "1.1.0-3", "1.1.0-4"])
    }

    @Test(arguments: [404, 500])
    func anHTTPErrorIsClear(status: Int) async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0"))
        try sandbox.server.set(["status": ["channel.json": status]])
        let error = await #expect(throws: ReseedError.self) { try await sandbox.updater(bundled).update() }
        #expect(error?.code == .download)
        #expect(error?.httpStatus == status)
        let reason = status == 404 ? "HTTP 404 not found" : "HTTP 500 internal server error"
        #expect(error?.description.lowercased() == "\(sandbox.server.url.absoluteString)channel.json: \(reason); check the channel's URL and the network, then try again".lowercased())

        // The same for the seed file itself.
        try sandbox.server.set(["status": ["items-1.1.0.sqlite": status]])
        let seedError = await #expect(throws: ReseedError.self) { try await sandbox.updater(bundled).update() }
        #expect(seedError?.step == .download)
        #expect(seedError?.httpStatus == status)
        #expect(seedError?.url?.lastPathComponent == "items-1.1.0.sqlite")
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
    }

    @Test func aDowngradeOfferIsRefusedUnlessAllowed() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.seed("2.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.5.0", rows: 2))
        let error = await #expect(throws: ReseedError.self) { try await sandbox.updater(bundled).update() }
        #expect(error?.code == .channelRefused)
        #expect(error?.message == "the channel offers items 1.5.0, not newer than 2.0.0 (installed); refusing a downgrade")
        #expect(try sandbox.labels() == ["2.0.0-1", "2.0.0-2", "2.0.0-3"])
        #expect(!(try sandbox.server.requests().contains { $0.path.hasSuffix(".sqlite") }))

        let allowed = try await sandbox.updater(bundled, allowsDowngrade: true).update()
        #expect(allowed.action == .updated)
        #expect(try sandbox.labels() == ["1.5.0-1", "1.5.0-2"])
    }

    @Test func aManifestForAnotherStoreIsRefused() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        let other = try SeedFixture(name: "other", version: "3.0.0", sql: ["CREATE TABLE t (x)"]).build(in: sandbox.directory.appending("other"))
        try sandbox.publish(other)
        let error = await #expect(throws: ReseedError.self) { try await sandbox.updater(bundled).update() }
        #expect(error?.code == .channelRefused)
        #expect(error?.message == "the channel offers the store 'other'; this store is 'items'")
    }

    @Test func theDownloadWritesThroughTheFileSystemSeamAndAFailedWriteIsAClearError() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        let offered = try sandbox.seed("1.1.0", rows: 4, paddingBytes: 256 << 10)
        try sandbox.publish(offered)
        let partial = ".items.sqlite.reseed-download-" + offered.manifest.sha256.prefix(16)

        func updater(observing observer: any FileSystemObserver) -> ChannelUpdater {
            var launcher = sandbox.launcher(bundled)
            launcher.fileSystem = FileSystem(observer: observer)
            return ChannelUpdater(channel: sandbox.server.url, publicKey: sandbox.key.publicKey, launcher: launcher, configuration: sandbox.configuration())
        }
        // Write 1 empties the partial file for the whole-file answer (200); write 2 is the first piece of the body.
        let fault = FailWrite(number: 2, to: partial)
        let error = await #expect(throws: ReseedError.self) { try await updater(observing: fault).update() }
        #expect(error?.step == .download)
        #expect(error?.errno == .ioError)
        #expect(error?.message.hasPrefix("cannot write the download") == true, "\(String(describing: error))")
        #expect(fault.failed)
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])

        let log = FaultPlan(.record)
        #expect(try await updater(observing: log).update().action == .updated)
        #expect(log.actions.contains { $0.kind == .write && URL(fileURLWithPath: $0.path).lastPathComponent == partial })
        #expect(log.actions.contains { $0.kind == .sync && URL(fileURLWithPath: $0.path).lastPathComponent == partial })
        #expect(try sandbox.labels().count == 4)
    }

    /// An update records the new version and the channel's state (its validators, signer, expiry)
    /// in one write of the preferences, full seed or delta: a kill cannot leave one without the other,
    /// and a slow disk pays one fsync.
    @Test(arguments: [false, true])
    func anUpdateWritesThePreferencesOnce(delta: Bool) async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.release("1.0.0", generation: 0)
        try sandbox.launch(bundled)
        if delta { try sandbox.publish(bundled, compressed: true) }
        try sandbox.publish(try sandbox.release("1.1.0", generation: 1), compressed: true)
        let log = FaultPlan(.record)
        var launcher = sandbox.launcher(bundled)
        launcher.fileSystem = FileSystem(observer: log)
        let outcome = try await ChannelUpdater(channel: sandbox.server.url, publicKey: sandbox.key.publicKey, launcher: launcher,
                                               configuration: sandbox.configuration()).update()
        #expect(outcome.method == (delta ? .delta : .full), "\(outcome.deltaFailure ?? "")")
        let writes = log.actions.filter { $0.kind == .rename && $0.path.hasSuffix("/preferences.json") }
        #expect(writes.count == 1, "\(log.actions.map(\.description))")
        let entry = try #require(try PreferencesFile(url: sandbox.preferencesURL).readEntries().entries["items"])
        #expect(entry.version == "1.1.0")
        #expect(entry.channel?.version == "1.1.0")
    }

    @Test func aLaunchAfterAnUpdateKeepsTheDownloadedNewerSeed() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4))
        _ = try await sandbox.updater(bundled).update()

        let relaunch = try sandbox.launch(bundled)
        #expect(relaunch.action == .upToDate)
        #expect(relaunch.version == "1.1.0")
        #expect(relaunch.source == .download)
        #expect(relaunch.previousVersion == "1.1.0")
        #expect(try sandbox.labels() == ["1.1.0-1", "1.1.0-2", "1.1.0-3", "1.1.0-4"])
        #expect(try sandbox.recorded() == ("1.1.0", .download))
        // A LiveStore opens on it too.
        let store = try await LiveStore(launcher: sandbox.launcher(bundled))
        #expect(store.version == "1.1.0")
    }

    @Test func anAppUpdateWithAFresherBundledSeedInstallsIt() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4))
        _ = try await sandbox.updater(bundled).update()

        let appUpdate = try sandbox.seed("1.2.0", rows: 6)
        let launch = try sandbox.launch(appUpdate)
        #expect(launch.action == .installed)
        #expect(launch.reason == .versionChanged)
        #expect(launch.version == "1.2.0")
        #expect(launch.previousVersion == "1.1.0")
        #expect(launch.source == .bundle)
        #expect(try sandbox.labels().count == 6)
        #expect(try sandbox.recorded() == ("1.2.0", .bundle))
        // The channel still offers 1.1.0: older than what the store holds now.
        let check = await #expect(throws: ReseedError.self) { try await sandbox.updater(appUpdate).update() }
        #expect(check?.code == .channelRefused)
    }

    @Test func anUnusableDownloadedStoreGivesWayToTheBundledSeed() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4))
        _ = try await sandbox.updater(bundled).update()
        var bytes = try Data(contentsOf: sandbox.storeURL)
        bytes.replaceSubrange(0..<4096, with: Data(repeating: 0x5A, count: 4096))
        try bytes.write(to: sandbox.storeURL)

        let launch = try sandbox.launch(bundled)
        #expect(launch.action == .installed)
        #expect(launch.reason == .storeInvalid)
        #expect(launch.version == "1.0.0")
        #expect(launch.storeKeptAside != nil)
        #expect(try sandbox.labels() == ["1.0.0-1", "1.0.0-2", "1.0.0-3"])
        #expect(try sandbox.recorded() == ("1.0.0", .bundle))
    }

    @Test func anOpenLiveStoreIsUpdatedInPlace() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.seed("1.0.0")
        let store = try await LiveStore(launcher: sandbox.launcher(bundled))
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4))
        let progress = ProgressLog()
        var configuration = ChannelUpdater.Configuration()
        configuration.progress = { progress.add($0) }
        let outcome = try await ChannelUpdater(channel: sandbox.server.url, publicKey: sandbox.key.publicKey, store: store,
                                               configuration: sandbox.configuration(configuration)).update()
        #expect(outcome.action == .updated)
        #expect(store.version == "1.1.0")
        #expect(try await store.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM item") } == 4)
        #expect(try sandbox.recorded() == ("1.1.0", .download))
        // One callback hears the download, then the install, each step from 0 to its total.
        let reports = progress.reports
        #expect(reports.map(\.step).first == .download && reports.map(\.step).last == .install, "\(reports)")
        for step in [InstallProgress.Step.download, .install] {
            let ofStep = reports.filter { $0.step == step }
            #expect(ofStep.last.map { $0.completed == $0.total } == true, "\(step): \(ofStep)")
            #expect(ofStep.map(\.completed) == ofStep.map(\.completed).sorted(), "\(step)")
        }
        #expect(reports.firstIndex { $0.step == .install }.map { reports[$0...].allSatisfy { $0.step == .install } } == true)
    }

    @Test func anUpdateWithNothingInstalledYetInstallsTheDownload() async throws {
        let sandbox = try ChannelSandbox.inMemory()
        let bundled = try sandbox.seed("1.0.0")
        try sandbox.publish(try sandbox.seed("1.1.0", rows: 4))
        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.action == .updated)
        #expect(outcome.previousVersion == nil)
        #expect(try sandbox.labels().count == 4)
        #expect(try sandbox.launch(bundled).version == "1.1.0")
    }
}

/// Fails the `number`-th write to one file (a truncation counts) with `EIO`, as a failing disk would.
final class FailWrite: FileSystemObserver {
    private let name: String
    private let number: Int
    private let writes = Mutex(0)

    init(number: Int, to name: String) {
        self.name = name
        self.number = number
    }

    var failed: Bool { writes.withLock { $0 >= number } }

    func willPerform(_ action: FileAction) throws {
        guard action.kind == .write, URL(fileURLWithPath: action.path).lastPathComponent == name else { return }
        let count = writes.withLock { writes in
            writes += 1
            return writes
        }
        if count == number { throw FileSystemFailure(operation: "write", path: action.path, errno: .ioError) }
    }

    func didPerform(_ action: FileAction) throws {}
}

/// Progress reports collected from another thread.
final class ProgressLog: Sendable {
    private let entries = Mutex<[InstallProgress]>([])
    func add(_ progress: InstallProgress) { entries.withLock { $0.append(progress) } }
    var reports: [InstallProgress] { entries.withLock { $0 } }
}
