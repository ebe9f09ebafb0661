import Foundation
import GRDB
import Reseed
import ReseedPackaging
import ReseedTesting
import ReseedTestSupport
import Synchronization
import Testing

extension ChannelSandbox {
    /// A release of the `items` seed: 3,000 rows of text that compresses about as well as real
    /// reference data; release `generation` > 0 updates, deletes and inserts a few of them.
    func release(_ version: String, generation: Int, extraColumn: Bool = false) throws -> Seed {
        let columns = extraColumn ? "id INTEGER PRIMARY KEY, label TEXT NOT NULL, note TEXT" : "id INTEGER PRIMARY KEY, label TEXT NOT NULL"
        return try SeedFixture(name: "items", version: version, sql: [
            "CREATE TABLE item (\(columns))",
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
            INSERT INTO item (id, label) SELECT i, 'item ' || i || ' ' || hex(i * 2654435761 % 4294967291) || ' ' || hex(i * 40503 % 65521) FROM n
            """,
            "UPDATE item SET label = label || ' updated in \(generation)' WHERE \(generation) > 0 AND id % 300 = \(generation % 300)",
            "DELETE FROM item WHERE \(generation) > 0 AND id % 500 = \(generation % 500 + 7)",
            "INSERT INTO item (id, label) SELECT 3000 + \(generation) * 10 + value, 'new in \(generation)' FROM (SELECT 1 AS value UNION ALL SELECT 2) WHERE \(generation) > 0",
        ]).build(in: directory.appending("release-\(version)-\(generation)\(extraColumn ? "-wide" : "")"))
    }

    /// The store's content hash, computed from the file.
    func storeContentHash() throws -> String {
        try SeedContentHash.compute(path: storeURL.path)
    }

    /// The content hash the preferences recorded for the installed seed.
    func recordedContentHash() throws -> String? {
        let text = try String(contentsOf: preferencesURL, encoding: .utf8)
        guard let range = text.range(of: #""contentHash": "([0-9a-f]{64})""#, options: .regularExpression) else { return nil }
        return String(text[range].dropFirst("\"contentHash\": \"".count).dropLast())
    }

    /// Re-signs the channel's manifest after a test edited it.
    func resign(_ edit: (inout String) -> Void) throws {
        let url = channel.appendingPathComponent(ChannelManifest.fileName)
        var text = try String(contentsOf: url, encoding: .utf8)
        edit(&text)
        try Data(text.utf8).write(to: url)
        let signature = try key.signature(for: Data(text.utf8))
        try Data((signature.base64EncodedString() + "\n").utf8).write(to: channel.appendingPathComponent(ChannelManifest.signatureFileName))
    }
}

/// Row-level deltas on a real channel served over HTTP: published beside the full seed, picked by
/// the installed seed's content hash, and every way they can fail falls back to the full seed.
@Suite(.timeLimit(.minutes(10))) struct ChannelDeltaTests {
    /// 1.0.0 installed from the bundle and published, then 1.1.0 published with its delta from 1.0.0.
    func installedAndPublished(_ sandbox: ChannelSandbox) throws -> (bundled: Seed, offered: Seed, published: ChannelPublisher.Result) {
        let bundled = try sandbox.release("1.0.0", generation: 0)
        try sandbox.launch(bundled)
        try sandbox.publish(bundled, compressed: true)
        let offered = try sandbox.release("1.1.0", generation: 1)
        return (bundled, offered, try sandbox.publish(offered, compressed: true))
    }

    /// The update installed `offered` as the full seed: the delta failed for `reason` (a phrase of
    /// ``ChannelUpdater/Outcome/deltaFailure``), or none was tried when `reason` is nil; the store
    /// holds `offered`'s content and the preferences record its hash; no download file is left.
    func expectFullSeed(_ outcome: ChannelUpdater.Outcome, because reason: String?, offered: Seed, in sandbox: ChannelSandbox,
                        sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(outcome.method == .full, sourceLocation: sourceLocation)
        if let reason {
            #expect(outcome.deltaFailure?.contains(reason) == true, "\(outcome.deltaFailure ?? "nil")", sourceLocation: sourceLocation)
        } else {
            #expect(outcome.deltaFailure == nil, sourceLocation: sourceLocation)
        }
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash, sourceLocation: sourceLocation)
        #expect(try sandbox.recordedContentHash() == offered.manifest.contentHash, sourceLocation: sourceLocation)
        #expect(try sandbox.downloadFiles().isEmpty, sourceLocation: sourceLocation)
    }

    @Test func aDeltaFromTheInstalledSeedIsAppliedInsteadOfTheFullSeed() async throws {
        let sandbox = try ChannelSandbox()
        let (bundled, offered, published) = try installedAndPublished(sandbox)
        let delta = try #require(published.manifest.deltas.first)
        #expect(published.manifest.deltas.count == 1)
        #expect(delta.fromVersion == "1.0.0")
        #expect(delta.fromContentHash == bundled.manifest.contentHash)
        #expect(try sandbox.recordedContentHash() == bundled.manifest.contentHash)
        let compressed = try #require(published.manifest.compressed)
        #expect(delta.file.size * 10 < compressed.size, "delta \(delta.file.size) bytes, compressed seed \(compressed.size)")
        let before = try sandbox.server.requests().count

        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.action == .updated)
        #expect(outcome.method == .delta)
        #expect(outcome.version == "1.1.0")
        #expect(outcome.fromContentHash == bundled.manifest.contentHash)
        #expect(outcome.deltaFailure == nil)
        #expect(outcome.downloadedBytes == delta.file.size)
        #expect(try sandbox.server.requests().dropFirst(before).map(\.path) == ["/channel.json", "/channel.json.sig", "/keys.json", "/" + delta.file.file])
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash)
        #expect(try sandbox.recordedContentHash() == offered.manifest.contentHash)
        #expect(try sandbox.recorded() == ("1.1.0", .download))
        #expect(try sandbox.downloadFiles().isEmpty)
        // The store opens as the new seed, and a launch keeps it.
        let launched = try sandbox.launch(bundled)
        #expect(launched.version == "1.1.0")
    }

    /// The installed store in WAL mode whose file alone is not the seed: a row deleted and checkpointed
    /// into the file, then put back in frames of the `-wal` only (as an app's pool leaves it). The
    /// delta's copy takes the `-wal` along and SQLite replays it, so the delta applies to the seed's
    /// content; a copy of the file alone would miss the row, and the update would fall back.
    @Test func aDeltaAppliesToTheInstalledSeedWithItsWALFrames() async throws {
        let sandbox = try ChannelSandbox()
        let (bundled, offered, _) = try installedAndPublished(sandbox)
        let saved = sandbox.directory.appending("saved")
        try FileManager.default.createDirectory(at: saved, withIntermediateDirectories: true)
        let queue = try DatabaseQueue(path: sandbox.storeURL.path)
        try await queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
            try db.execute(sql: "CREATE TEMP TABLE kept AS SELECT * FROM item WHERE id = (SELECT min(id) FROM item)")
            try db.execute(sql: "DELETE FROM item WHERE id IN (SELECT id FROM kept)")
            _ = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            try db.execute(sql: "INSERT INTO item SELECT * FROM kept")
        }
        // Taken while the connection is open, before its close copies the frames back.
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(at: URL(fileURLWithPath: sandbox.storeURL.path + suffix), to: saved.appendingPathComponent("items.sqlite" + suffix))
        }
        try queue.close()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: sandbox.storeURL.path + suffix) }
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(at: saved.appendingPathComponent("items.sqlite" + suffix), to: URL(fileURLWithPath: sandbox.storeURL.path + suffix))
        }
        #expect(try FileManager.default.attributesOfItem(atPath: sandbox.storeURL.path + "-wal")[.size] as? Int ?? 0 > 0)

        let outcome = try await sandbox.updater(bundled).update()
        #expect(outcome.method == .delta, "\(outcome.deltaFailure ?? "")")
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash)
        #expect(try sandbox.downloadFiles().isEmpty)
    }

    @Test func aDeltaReportsItsCopyApplyAndContentHashOnOneScale() async throws {
        let sandbox = try ChannelSandbox()
        let (bundled, offered, _) = try installedAndPublished(sandbox)
        let events = Mutex<[(completed: Int64, total: Int64)]>([])
        var configuration = Launcher.Configuration()
        configuration.progress = { progress in events.withLock { $0.append((progress.completed, progress.total)) } }
        let launcher = Launcher(seed: bundled.manifestURL, dataDirectory: sandbox.dataDirectory, configuration: configuration)
        let storeSize = try #require(try FileManager.default.attributesOfItem(atPath: sandbox.storeURL.path)[.size] as? Int)

        let outcome = try await ChannelUpdater(channel: sandbox.server.url, publicKey: sandbox.key.publicKey, launcher: launcher).update()
        #expect(outcome.method == .delta)
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash)
        let reported = events.withLock { $0 }
        // One scale, three times the installed store's size: the copy, the apply and the hash each fill a third.
        let third = Int64(storeSize)
        #expect(reported.allSatisfy { $0.total == 3 * third }, "\(reported)")
        #expect(zip(reported, reported.dropFirst()).allSatisfy { $0.completed < $1.completed }, "\(reported)")
        #expect(reported.first?.completed == 0)
        #expect(reported.last?.completed == 3 * third)
        // Each phase reports, and ends at its third's end: the copy's last page, the delta's rows
        // (of `item`, 6 deleted, 10 updated, 2 inserted, and `reseed_metadata`'s: a report after each list), every row hashed.
        let completed = reported.map(\.completed)
        for end in [third, 2 * third, 3 * third] { #expect(completed.contains(end), "\(end) in \(completed)") }
        #expect(completed.filter { $0 > third && $0 < 2 * third }.count >= 2, "\(completed)")
        // The hash of 3,000 rows reports every 1,024 rows, before the end.
        #expect(completed.contains { $0 > 2 * third && $0 < 3 * third }, "\(completed)")
    }

    @Test func updateWithProgressShowsTheDeltaInstallOnStderr() throws {
        let sandbox = try ChannelSandbox()
        let keyFile = sandbox.directory.appending("channel.pub")
        try Data((sandbox.key.publicKey.base64 + "\n").utf8).write(to: keyFile)
        let (bundled, _, _) = try installedAndPublished(sandbox)
        let update = try ReseedBinary.run([
            "update", "--channel", sandbox.server.url.absoluteString, "--public-key", keyFile.path,
            "--seed", bundled.manifestURL.path, "--data-dir", sandbox.dataDirectory.path, "--timeout", "120", "--progress",
        ])
        #expect(update.status == 0, "\(update.stderr)")
        #expect(update.stdout.contains(" with a delta: "), "\(update.stdout)")
        let lines = update.stderr.split(separator: "\n").map { $0.split(separator: "\r").last.map(String.init) ?? "" }
        #expect(lines.count == 2, "\(update.stderr)")
        #expect(lines.first?.hasPrefix("downloading: 100% of ") == true, "\(update.stderr)")
        #expect(lines.last?.hasPrefix("installing: 100%") == true, "\(update.stderr)")
        // The install line moved through the copy, the apply and the hash before it ended.
        #expect(update.stderr.components(separatedBy: "\rinstalling: ").count > 3, "\(update.stderr)")
    }

    @Test func aTamperedDeltaFallsBackToTheFullSeed() async throws {
        let sandbox = try ChannelSandbox()
        let (bundled, offered, published) = try installedAndPublished(sandbox)
        let delta = try #require(published.manifest.deltas.first)
        let url = sandbox.channel.appendingPathComponent(delta.file.file)
        var bytes = try Data(contentsOf: url)
        bytes[bytes.count / 2] ^= 0x40
        try bytes.write(to: url)

        let outcome = try await sandbox.updater(bundled).update()
        try expectFullSeed(outcome, because: "the downloaded delta is", offered: offered, in: sandbox)
    }

    @Test func aDeltaTheServerDoesNotServeFallsBackToTheFullSeed() async throws {
        let sandbox = try ChannelSandbox()
        let (bundled, offered, published) = try installedAndPublished(sandbox)
        let delta = try #require(published.manifest.deltas.first)
        try FileManager.default.removeItem(at: sandbox.channel.appendingPathComponent(delta.file.file))

        let outcome = try await sandbox.updater(bundled).update()
        try expectFullSeed(outcome, because: "404", offered: offered, in: sandbox)
    }

    @Test func aDeltaForAnotherStartingHashIsNotDownloaded() async throws {
        let sandbox = try ChannelSandbox()
        // The device holds another 1.0.0 than the channel's (same version, other rows): no delta starts from it.
        let bundled = try sandbox.release("1.0.0", generation: 0, extraColumn: true)
        try sandbox.launch(bundled)
        try sandbox.publish(try sandbox.release("1.0.0", generation: 0), compressed: true)
        let offered = try sandbox.release("1.1.0", generation: 1)
        let published = try sandbox.publish(offered, compressed: true)
        #expect(published.manifest.deltas.count == 1)
        let before = try sandbox.server.requests().count

        let outcome = try await sandbox.updater(bundled).update()
        try expectFullSeed(outcome, because: nil, offered: offered, in: sandbox)
        #expect(outcome.fromContentHash == bundled.manifest.contentHash)
        let paths = try sandbox.server.requests().dropFirst(before).map(\.path)
        #expect(!paths.contains { $0.hasSuffix(".delta.gz") }, "\(paths)")
    }

    /// A manifest whose `user_version` is not its seed's (a publisher's mistake, signed): the
    /// delta's result is refused as the full seed is, and the store stays as it was.
    @Test func aDeltaResultWhoseUserVersionIsNotTheManifestsIsRefused() async throws {
        let sandbox = try ChannelSandbox()
        let (bundled, offered, published) = try installedAndPublished(sandbox)
        #expect(published.manifest.deltas.count == 1)
        try sandbox.resign { text in
            text = text.replacingOccurrences(of: "\"userVersion\": \(offered.manifest.userVersion)", with: "\"userVersion\": 77")
        }
        let error = await #expect(throws: ReseedError.self) { try await sandbox.updater(bundled).update() }
        #expect(error?.code == .verificationFailed, "\(String(describing: error))")
        #expect(error?.message.contains("user_version/application_id are \(offered.manifest.userVersion)/") == true, "\(String(describing: error))")
        #expect(try sandbox.storeContentHash() == bundled.manifest.contentHash)
        #expect(try sandbox.downloadFiles().isEmpty)
    }

    @Test func aDeltaThatYieldsAnotherContentHashFallsBackToTheFullSeed() async throws {
        let sandbox = try ChannelSandbox()
        let (bundled, offered, published) = try installedAndPublished(sandbox)
        let delta = try #require(published.manifest.deltas.first)
        // A second channel publishes 1.0.0 → another 1.1.0; its delta, signed into the first channel's
        // manifest, starts from the right hash and applies, but does not give the signed content hash.
        let other = try ChannelSandbox()
        try other.publish(try other.release("1.0.0", generation: 0), compressed: true)
        let otherPublished = try other.publish(try other.release("1.1.0", generation: 2), compressed: true)
        let otherDelta = try #require(otherPublished.manifest.deltas.first)
        #expect(otherDelta.fromContentHash == delta.fromContentHash)
        let target = sandbox.channel.appendingPathComponent(delta.file.file)
        try FileManager.default.removeItem(at: target)
        try FileManager.default.copyItem(at: other.channel.appendingPathComponent(otherDelta.file.file), to: target)
        try sandbox.resign { text in
            text = text.replacingOccurrences(of: "\"size\": \(delta.file.size), \"sha256\": \"\(delta.file.sha256)\"",
                                             with: "\"size\": \(otherDelta.file.size), \"sha256\": \"\(otherDelta.file.sha256)\"")
        }

        let outcome = try await sandbox.updater(bundled).update()
        try expectFullSeed(outcome, because: "content hash", offered: offered, in: sandbox)
        // Both downloads count: the delta that failed, then the compressed seed.
        #expect(outcome.downloadedBytes == otherDelta.file.size + (published.manifest.compressed?.size ?? 0))
    }

    @Test func aSingleFileStoreTheAppWroteToFallsBackToTheFullSeed() async throws {
        let sandbox = try ChannelSandbox()
        let (bundled, offered, _) = try installedAndPublished(sandbox)
        let queue = try DatabaseQueue(path: sandbox.storeURL.path)
        try await queue.write { try $0.execute(sql: "UPDATE item SET label = 'edited by the app' WHERE id = 2") }
        try queue.close()

        let outcome = try await sandbox.updater(bundled).update()
        try expectFullSeed(outcome, because: "content hash", offered: offered, in: sandbox)
    }

    /// The only table changes its definition: the delta would ship it whole, as heavy as the seed, so none is published.
    @Test func aSchemaChangeThatRewritesTheWholeSeedGetsNoDeltaAndTheFullSeedInstalls() async throws {
        let sandbox = try ChannelSandbox()
        let bundled = try sandbox.release("1.0.0", generation: 0)
        try sandbox.launch(bundled)
        try sandbox.publish(bundled, compressed: true)
        let offered = try sandbox.release("1.1.0", generation: 1, extraColumn: true)
        let published = try sandbox.publish(offered, compressed: true)
        #expect(published.manifest.deltas.isEmpty)
        #expect(published.skippedDeltas.map(\.fromVersion) == ["1.0.0"])
        #expect(published.skippedDeltas.first?.reason.contains("weighs more than half") == true, "\(published.skippedDeltas)")
        let compressed = try #require(published.manifest.compressed)
        let before = try sandbox.server.requests().count

        let outcome = try await sandbox.updater(bundled).update()
        try expectFullSeed(outcome, because: nil, offered: offered, in: sandbox)
        // The full seed travels compressed; the install decompresses it and checks the database's SHA-256.
        #expect(outcome.downloadedBytes == compressed.size)
        #expect(compressed.size * 2 < offered.manifest.size)
        #expect(try sandbox.server.requests().dropFirst(before).map(\.path) == ["/channel.json", "/channel.json.sig", "/keys.json", "/" + compressed.file])
        #expect(try sandbox.downloadFiles().isEmpty)
    }

    @Test func aTamperedCompressedSeedIsRefusedAndTheOldStoreStays() async throws {
        let sandbox = try ChannelSandbox()
        let bundled = try sandbox.release("1.0.0", generation: 0)
        try sandbox.launch(bundled)
        let published = try sandbox.publish(try sandbox.release("1.1.0", generation: 1), compressed: true)
        let url = sandbox.channel.appendingPathComponent(try #require(published.manifest.compressed).file)
        var bytes = try Data(contentsOf: url)
        bytes[bytes.count / 3] ^= 0x01
        try bytes.write(to: url)

        let error = await #expect(throws: ReseedError.self) { try await sandbox.updater(bundled).update() }
        #expect(error?.code == .verificationFailed)
        #expect(error?.description.contains("SHA-256") == true)
        #expect(try sandbox.storeContentHash() == bundled.manifest.contentHash)
        #expect(try sandbox.recorded() == ("1.0.0", .bundle))
        #expect(try sandbox.downloadFiles().isEmpty)
    }

    @Test func anOpenLiveStoreIsUpdatedByADeltaWhileTheAppReadsIt() async throws {
        let sandbox = try ChannelSandbox()
        let bundled = try sandbox.release("1.0.0", generation: 0)
        let store = try await LiveStore(launcher: sandbox.launcher(bundled))
        try sandbox.publish(bundled, compressed: true)
        let offered = try sandbox.release("1.1.0", generation: 1)
        let published = try sandbox.publish(offered, compressed: true)
        // The app has the store open (WAL) and reads it: the delta's copy is a consistent SQLite backup.
        #expect(try await store.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM item") } == 3000)

        let outcome = try await ChannelUpdater(channel: sandbox.server.url, publicKey: sandbox.key.publicKey, store: store).update()
        #expect(outcome.method == .delta)
        #expect(outcome.downloadedBytes == published.manifest.deltas.first?.file.size)
        #expect(store.version == "1.1.0")
        #expect(try await store.read { try String.fetchOne($0, sql: "SELECT label FROM item WHERE id = 301") }?.hasSuffix("updated in 1") == true)
        #expect(try await store.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM item") } == 3000 - 6 + 2)
        #expect(try sandbox.recordedContentHash() == offered.manifest.contentHash)
        #expect(try sandbox.downloadFiles().isEmpty)
    }

    @Test func withAUserStoreTheSeedIsNeverWrittenSoTheDeltaAppliesAndTheUserRowsStay() async throws {
        let sandbox = try ChannelSandbox()
        var migrator = DatabaseMigrator()
        migrator.registerMigration("note") { db in
            try db.execute(sql: "CREATE TABLE note (id INTEGER PRIMARY KEY, item_id INTEGER, body TEXT NOT NULL)")
        }
        var configuration = Launcher.Configuration()
        configuration.userStore = Launcher.UserStore(name: "items-user", migrator: migrator, references: [try SeedReference("note.item_id", to: "item.id")])
        let bundled = try sandbox.release("1.0.0", generation: 0)
        let launcher = Launcher(seed: bundled.manifestURL, dataDirectory: sandbox.dataDirectory, configuration: configuration)
        let (pool, _) = try launcher.launch()
        // The app's rows, one pointing at an item the next release deletes (id 8: 8 % 500 == 1 + 7).
        try await pool.write { db in
            try db.execute(sql: "INSERT INTO note (item_id, body) VALUES (1, 'checked'), (8, 'about to lose its item')")
        }
        try pool.close()
        try sandbox.publish(bundled, compressed: true)
        let offered = try sandbox.release("1.1.0", generation: 1)
        try sandbox.publish(offered, compressed: true)

        let outcome = try await ChannelUpdater(channel: sandbox.server.url, publicKey: sandbox.key.publicKey, launcher: launcher).update()
        #expect(outcome.method == .delta)
        #expect(outcome.orphans == ["note.item_id->item.id": 1], "\(outcome.orphans)")
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash)
        let (reopened, launched) = try launcher.launch()
        #expect(launched.version == "1.1.0")
        #expect(try await reopened.read { try String.fetchAll($0, sql: "SELECT body FROM note ORDER BY id") } == ["checked", "about to lose its item"])
        try reopened.close()
    }

    @Test func diffDeltaSizePrintsWhatTheDeltaWeighsOnTheChannel() throws {
        let sandbox = try ChannelSandbox()
        let old = try sandbox.release("1.0.0", generation: 0)
        let new = try sandbox.release("1.1.0", generation: 1)
        let text = try ReseedBinary.run(["diff", old.fileURL.path, new.fileURL.path, "--delta-size"])
        #expect(text.status == 0, "\(text.stderr)")
        let line = try #require(text.stdout.split(separator: "\n").first { $0.hasPrefix("Row-level delta: ") }, "\(text.stdout)")
        #expect(line.hasSuffix(" gzip-compressed (on a channel)"), "\(line)")
        #expect(text.stdout.contains("  item: 6 deleted, 10 updated, 2 inserted"), "\(text.stdout)")

        let json = try ReseedBinary.run(["diff", old.fileURL.path, new.fileURL.path, "--delta-size", "--json"])
        let delta = try #require(try jsonObject(json.stdout)["delta"] as? [String: Any], "\(json.stdout)")
        let bytes = try #require((delta["bytes"] as? NSNumber)?.intValue)
        let compressed = try #require((delta["compressedBytes"] as? NSNumber)?.intValue)
        #expect(compressed > 0 && compressed < bytes)
        // The same bytes `reseed publish` puts on the channel.
        try sandbox.publish(old, compressed: true)
        let published = try sandbox.publish(new, compressed: true)
        #expect(published.manifest.deltas.first?.file.size == Int64(compressed))

        let wide = try sandbox.release("1.2.0", generation: 2, extraColumn: true)
        let whole = try ReseedBinary.run(["diff", new.fileURL.path, wide.fileURL.path, "--delta-size"])
        #expect(whole.stdout.contains(", with schema changes (format 2)\n  item: whole table, "), "\(whole.stdout)")
        #expect(whole.stdout.contains(" rows (definition changed)\n"), "\(whole.stdout)")
    }

    @Test func publishingTheSameSeedsTwiceGivesIdenticalChannelFiles() throws {
        func channelFiles(_ sandbox: ChannelSandbox) throws -> [String: Data] {
            let names = try FileManager.default.contentsOfDirectory(atPath: sandbox.channel.path).filter { !$0.hasPrefix(".") }
            return try Dictionary(uniqueKeysWithValues: names.map { ($0, try Data(contentsOf: sandbox.channel.appendingPathComponent($0))) })
        }
        let first = try ChannelSandbox()
        let second = try ChannelSandbox()
        for sandbox in [first, second] {
            // Same key and expiry: the signatures (Ed25519, deterministic) must match too.
            var publisher = ChannelPublisher(channel: sandbox.channel, privateKey: first.key)
            publisher.expires = RFC3339.date("2030-01-01T00:00:00Z")
            try publisher.publish(try first.release("1.0.0", generation: 0))
            try publisher.publish(try first.release("1.1.0", generation: 1))
        }
        let a = try channelFiles(first), b = try channelFiles(second)
        #expect(a.keys.sorted() == b.keys.sorted())
        #expect(a.keys.contains { $0.hasSuffix(".delta.gz") })
        for name in a.keys.sorted() { #expect(a[name] == b[name], "\(name) differs") }
    }

    @Test func theLastNReleasesGetDeltasAndOlderDevicesGetTheFullSeed() async throws {
        let sandbox = try ChannelSandbox()
        var publisher = ChannelPublisher(channel: sandbox.channel, privateKey: sandbox.key)
        publisher.deltas = 2
        var releases: [Seed] = []
        for generation in 0...3 {
            let seed = try sandbox.release("1.\(generation).0", generation: generation)
            releases.append(seed)
            let published = try publisher.publish(seed)
            #expect(published.manifest.deltas.map(\.fromVersion) == Array(["1.\(generation - 1).0", "1.\(generation - 2).0"].prefix(min(generation, 2))))
        }
        // A device on 1.1.0 gets the delta; one on 1.0.0 (three releases behind) the full seed.
        for (generation, method) in [(1, ChannelUpdater.Method.delta), (0, .full)] {
            let device = try ChannelSandbox()
            try device.launch(releases[generation])
            let updater = ChannelUpdater(channel: sandbox.server.url, publicKey: sandbox.key.publicKey, launcher: device.launcher(releases[generation]))
            let outcome = try await updater.update()
            #expect(outcome.method == method, "from 1.\(generation).0")
            #expect(try device.storeContentHash() == releases[3].manifest.contentHash)
        }
    }
}

extension ChannelDeltaTests {
    /// A FIFO where the installed seed should be: the delta path must not give it to SQLite, whose
    /// open would wait for a writer forever, holding the update lock. A watcher plays the writer
    /// for any reader (so that the test ends even when that happens); the install's own checks
    /// open it without blocking and refuse it.
    @Test func aFIFOInPlaceOfTheInstalledSeedIsNeverOpenedForTheDelta() async throws {
        let sandbox = try ChannelSandbox()
        let (bundled, offered, _) = try installedAndPublished(sandbox)
        try FileManager.default.removeItem(at: sandbox.storeURL)
        try #require(mkfifo(sandbox.storeURL.path, 0o644) == 0)
        let path = sandbox.storeURL.path
        // (stop asked, the watcher gone)
        let watch = Mutex((stop: false, gone: false))
        let watcher = Thread {
            while !watch.withLock({ $0.stop }) {
                // O_NONBLOCK: fails with ENXIO while no one has the FIFO open for reading.
                let fd = open(path, O_WRONLY | O_NONBLOCK)
                if fd >= 0 { close(fd) }
                usleep(5_000)
            }
            watch.withLock { $0.gone = true }
        }
        watcher.start()

        let outcome = try await sandbox.updater(bundled).update()
        watch.withLock { $0.stop = true }
        while !watch.withLock({ $0.gone }) { try await Task.sleep(for: .milliseconds(10)) }
        try expectFullSeed(outcome, because: "not a regular file", offered: offered, in: sandbox)
    }
}

/// `reseed update` checks a delta's result from the rows it changed while the seed's file is the
/// one its install recorded (a seed beside a user store: the app's data and GRDB's writes go to the
/// user store), and hashes the whole result once anything wrote to it.
@Suite(.timeLimit(.minutes(10))) struct IncrementalDeltaCheckTests {
    /// 1.0.0 installed by `reseed launch`, 1.0.0 then 1.1.0 published: the update's arguments.
    func launchedAndPublished(_ sandbox: ChannelSandbox) throws -> (update: [String], launch: [String], offered: Seed) {
        let bundled = try sandbox.release("1.0.0", generation: 0)
        try sandbox.publish(bundled, compressed: true)
        let offered = try sandbox.release("1.1.0", generation: 1)
        #expect(try sandbox.publish(offered, compressed: true).manifest.deltas.count == 1)
        let publicKey = sandbox.directory.appending("channel.pub")
        try Data((sandbox.key.publicKey.base64 + "\n").utf8).write(to: publicKey)
        let launch = ["launch", "--seed", bundled.manifestURL.path, "--data-dir", sandbox.dataDirectory.path, "--user-store", "items-user"]
        let launched = try ReseedBinary.run(launch)
        #expect(launched.status == 0, "\(launched.stderr)")
        let update = ["update", "--channel", sandbox.server.url.absoluteString, "--public-key", publicKey.path,
                      "--seed", bundled.manifestURL.path, "--data-dir", sandbox.dataDirectory.path, "--user-store", "items-user", "--json", "--verbose"]
        return (update, launch, offered)
    }

    @Test func aStoreUnchangedSinceItsInstallIsCheckedFromTheChangedRows() throws {
        let sandbox = try ChannelSandbox()
        let (update, launch, offered) = try launchedAndPublished(sandbox)
        // A second launch opens the stores (as an app does every start): the seed stays the file its install recorded.
        let relaunched = try ReseedBinary.run(launch)
        #expect(relaunched.status == 0, "\(relaunched.stderr)")
        let result = try ReseedBinary.run(update)
        #expect(result.status == 0, "\(result.stderr)")
        #expect((try? jsonObject(result.stdout))?["method"] as? String == "delta", "\(result.stdout)")
        #expect(result.stderr.contains("checked the delta's result from the rows it changed"), "\(result.stderr)")
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash)
        #expect(try IncrementalContentHash.compute(path: sandbox.storeURL.path).hash == offered.manifest.incrementalContentHash)
        let preferences = try String(contentsOf: sandbox.preferencesURL, encoding: .utf8)
        #expect(preferences.contains(#""incrementalContentHash": "\#(offered.manifest.incrementalContentHash ?? "")""#), "\(preferences)")
    }

    /// A single-file store whose `-wal` holds an app's committed row, not yet checkpointed (the
    /// app was killed), so the file alone is not what the store holds: the delta's result is hashed
    /// whole, does not match, and the full seed replaces it. (Two things turn the incremental check
    /// off here: the app's first open switched the file to WAL, which changed its fingerprint, and
    /// the `-wal` holds frames; this test does not tell them apart.)
    @Test func framesInTheWALOfASingleFileStoreTurnTheIncrementalCheckOff() throws {
        let sandbox = try ChannelSandbox()
        let (withUserStore, launchWithUserStore, offered) = try launchedAndPublished(sandbox)
        // The same device without a user store: a single-file store.
        let strip = { (arguments: [String]) in
            arguments.enumerated().filter { index, argument in
                argument != "--user-store" && (index == 0 || arguments[index - 1] != "--user-store")
            }.map(\.element)
        }
        try FileManager.default.removeItem(at: sandbox.dataDirectory)
        let launched = try ReseedBinary.run(strip(launchWithUserStore))
        #expect(launched.status == 0, "\(launched.stderr)")
        let before = try FileManager.default.attributesOfItem(atPath: sandbox.storeURL.path)[.modificationDate] as? Date
        // A committed row left in the -wal: the writer exits without closing, so nothing is checkpointed.
        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        writer.arguments = ["-c", """
            import os, sqlite3, sys
            c = sqlite3.connect(sys.argv[1]); c.execute("PRAGMA wal_autocheckpoint = 0")
            c.execute("UPDATE item SET label = 'written by the app' WHERE id = 2"); c.commit(); os._exit(0)
            """, sandbox.storeURL.path]
        try writer.run()
        writer.waitUntilExit()
        #expect(writer.terminationStatus == 0)
        #expect(try FileManager.default.attributesOfItem(atPath: sandbox.storeURL.path)[.modificationDate] as? Date == before)
        #expect((try FileManager.default.attributesOfItem(atPath: sandbox.storeURL.path + "-wal")[.size] as? Int ?? 0) > 0)
        let result = try ReseedBinary.run(strip(withUserStore))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("the delta applied yields content hash"), "\(result.stderr)")
        #expect((try? jsonObject(result.stdout))?["method"] as? String == "full", "\(result.stdout)")
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash)
    }

    /// Something wrote a row into the seed's file: the delta's result is hashed whole, does not
    /// match, and the full seed replaces it.
    @Test func aSeedFileWrittenToIsHashedWholeAndGetsTheFullSeed() throws {
        let sandbox = try ChannelSandbox()
        let (update, _, offered) = try launchedAndPublished(sandbox)
        let queue = try DatabaseQueue(path: sandbox.storeURL.path)
        try queue.write { try $0.execute(sql: "UPDATE item SET label = 'changed by the app' WHERE id = 2") }
        try queue.close()
        let result = try ReseedBinary.run(update)
        #expect(result.status == 0, "\(result.stderr)")
        // The whole result was hashed: the content hash, not the incremental one, is what did not match.
        #expect(result.stderr.contains("the delta applied yields content hash"), "\(result.stderr)")
        #expect((try? jsonObject(result.stdout))?["method"] as? String == "full", "\(result.stdout)")
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash)
    }
}

/// What a delta update writes into its private copy of the installed seed: each page it changes,
/// once, and no rollback journal (a failed apply deletes the copy, so nothing needs rolling back).
@Suite(.enabled(if: SyscallFaultTests.straceProblem == nil, Comment(rawValue: SyscallFaultTests.straceProblem ?? "")), .timeLimit(.minutes(10)))
struct DeltaWriteTests {
    /// 40,000 rows with an index on their label, about 9 MB; release 1.1.0 updates one row in 16,
    /// deletes another one in 16 and inserts 400: three statements touching most pages of the table
    /// and of the index, more than SQLite's default cache of 2 MiB holds.
    static func release(_ sandbox: ChannelSandbox, _ version: String, generation: Int) throws -> Seed {
        try SeedFixture(name: "items", version: version, sql: [
            "CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT NOT NULL, body TEXT NOT NULL)",
            "CREATE INDEX item_label ON item (label)",
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40000)
            INSERT INTO item (id, label, body) SELECT i, hex(i * 2654435761 % 4294967291), printf('%.*c', 100, 'x') || hex(i * 40503 % 65521) FROM n
            """,
            "UPDATE item SET label = label || ' v\(generation)' WHERE \(generation) > 0 AND id % 16 = 3",
            "DELETE FROM item WHERE \(generation) > 0 AND id % 16 = 11",
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 400)
            INSERT INTO item (id, label, body) SELECT 40000 + i, 'new ' || i, 'new' FROM n WHERE \(generation) > 0
            """,
        ]).build(in: sandbox.directory.appending("release-\(version)"))
    }

    /// 1.0.0 installed by `reseed launch` beside a user store, as most apps have it (the installed
    /// seed file is never opened for writing, so its copy needs no -wal replayed, which writes pages
    /// before the apply), 1.0.0 then 1.1.0 published with its delta: the update's arguments.
    static func device(_ sandbox: ChannelSandbox) throws -> (update: [String], new: Seed) {
        let old = try release(sandbox, "1.0.0", generation: 0)
        let new = try release(sandbox, "1.1.0", generation: 1)
        try sandbox.publish(old, compressed: true)
        #expect(try sandbox.publish(new, compressed: true).manifest.deltas.count == 1)
        let publicKey = sandbox.directory.appending("channel.pub")
        try Data((sandbox.key.publicKey.base64 + "\n").utf8).write(to: publicKey)
        let launched = try ReseedBinary.run(["launch", "--seed", old.manifestURL.path, "--data-dir", sandbox.dataDirectory.path, "--user-store", "items-user"])
        #expect(launched.status == 0, "\(launched.stderr)")
        return (["update", "--channel", sandbox.server.url.absoluteString, "--public-key", publicKey.path,
                 "--seed", old.manifestURL.path, "--data-dir", sandbox.dataDirectory.path, "--user-store", "items-user", "--json"], new)
    }

    @Test func aDeltaUpdateWritesEachChangedPageOnceAndNoJournal() throws {
        let strace = try #require(SyscallFaultTests.strace)
        let sandbox = try ChannelSandbox()
        let (update, new) = try Self.device(sandbox)
        let trace = sandbox.directory.appending("update.trace")
        let result = try ReseedBinary.start(update, prefix: [strace, "-f", "-qq", "-o", trace.path, "-e", "trace=openat,close,pwrite64"]).wait()
        #expect(result.status == 0, "\(result.stderr)")
        #expect((try? jsonObject(result.stdout))?["method"] as? String == "delta", "\(result.stdout)")
        #expect(try sandbox.storeContentHash() == new.manifest.contentHash)

        // The copy's descriptors (`openat(…, ".items.sqlite.reseed-tmp-…", …) = FD`, until closed), then their page writes.
        var copies = Set<Int>(), offsets: [Int: Int] = [:], journals: [String] = []
        for line in try String(contentsOf: trace, encoding: .utf8).split(separator: "\n") {
            if let open = line.firstMatch(of: /openat\([^,]+, "([^"]+)".* = (\d+)$/), let fd = Int(open.2) {
                if open.1.hasSuffix("-journal") { journals.append(String(open.1)) }
                if open.1.contains(".items.sqlite.reseed-tmp-"), !open.1.contains("-journal") { copies.insert(fd) } else { copies.remove(fd) }
            } else if let close = line.firstMatch(of: /close\((\d+)\)/), let fd = Int(close.1) {
                copies.remove(fd)
            } else if let write = line.firstMatch(of: /pwrite64\((\d+), .*, (\d+)\) += \d+$/), let fd = Int(write.1), copies.contains(fd),
                      let offset = Int(write.2) {
                offsets[offset, default: 0] += 1
            }
        }
        #expect(journals.isEmpty, "\(journals)")
        #expect(offsets.count > 600, "the delta changed \(offsets.count) pages: too few to fill SQLite's default cache")
        let rewritten = offsets.filter { $0.value > 1 }
        #expect(rewritten.isEmpty, "\(rewritten.count) of \(offsets.count) pages were written more than once")
    }
    /// With no journal, a kill in the middle of the apply leaves a half-written copy: a temp file
    /// that only the next install reads, to remove it. SIGKILL at the N-th `pwrite64` of a thread
    /// (strace counts each thread apart; the apply's page writes come from one), from the first
    /// page written to past the last (strace's largest N, 65,535): the installed seed's bytes stay as they were until the swap,
    /// the next update installs 1.1.0, and no temp file is left.
    @Test func aKillDuringTheApplyLeavesTheInstalledSeedAndTheNextUpdateFinishes() throws {
        let strace = try #require(SyscallFaultTests.strace)
        let sandbox = try ChannelSandbox()
        let (update, new) = try Self.device(sandbox)
        let template = sandbox.directory.appending("template")
        try FileManager.default.copyItem(at: sandbox.dataDirectory, to: template)
        let installed = try fileSHA256(sandbox.storeURL)
        var outcomes: [String] = []
        for when in [1, 40, 300, 600, 60_000] {
            try FileManager.default.removeItem(at: sandbox.dataDirectory)
            try FileManager.default.copyItem(at: template, to: sandbox.dataDirectory)
            let killed = try ReseedBinary.start(update, prefix: [strace, "-f", "-qq", "-o", "/dev/null", "-e", "trace=pwrite64",
                                                                 "-e", "inject=pwrite64:signal=SIGKILL:when=\(when)"],
                                                environment: ["SWIFT_BACKTRACE": "enable=no"]).wait()
            let leftCopy = try FileManager.default.contentsOfDirectory(atPath: sandbox.dataDirectory.path).contains { $0.contains(".reseed-tmp-") }
            let storeHash = try sandbox.storeContentHash()
            if killed.status == 0 {
                #expect(storeHash == new.manifest.contentHash, "when=\(when)")
            } else if storeHash != new.manifest.contentHash {
                #expect(try fileSHA256(sandbox.storeURL) == installed, "when=\(when): the installed seed's bytes changed")
            }
            outcomes.append("when=\(when): \(killed.status == 0 ? "finished" : "killed")\(leftCopy ? " leaving a copy" : ""), \(storeHash == new.manifest.contentHash ? "1.1.0" : "1.0.0")")
            let again = try ReseedBinary.run(update)
            #expect(again.status == 0, "when=\(when): \(again.stderr)")
            #expect(try sandbox.storeContentHash() == new.manifest.contentHash, "when=\(when)")
            let names = try FileManager.default.contentsOfDirectory(atPath: sandbox.dataDirectory.path)
            #expect(!names.contains { $0.contains(".reseed-tmp-") || $0.contains(".reseed-download-") }, "when=\(when): \(names)")
        }
        // Kills hit the apply (a copy was left, the store at 1.0.0), and the last run finished.
        #expect(outcomes.contains { $0.hasSuffix("killed leaving a copy, 1.0.0") }, "\(outcomes)")
        #expect(outcomes.last?.hasSuffix("finished, 1.1.0") == true, "\(outcomes)")
        print("kills during the journal-less apply: \(outcomes)")
    }
}
