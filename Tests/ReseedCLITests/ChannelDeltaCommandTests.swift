import Foundation
import GRDB
import Reseed
import ReseedPackaging
import ReseedTesting
import ReseedTestSupport
import Synchronization
import Testing

/// `reseed update` and `reseed diff --delta-size` with row-level deltas on a channel served over
/// HTTP (the updater's delta logic itself is tested in process, in `ReseedTests`' `ChannelDeltaTests`).
@Suite(.timeLimit(.minutes(10))) struct ChannelDeltaCommandTests {
    @Test func updateWithProgressShowsTheDeltaInstallOnStderr() throws {
        let sandbox = try ChannelSandbox()
        let keyFile = sandbox.directory.appending("channel.pub")
        try Data((sandbox.key.publicKey.base64 + "\n").utf8).write(to: keyFile)
        let bundled = try sandbox.release("1.0.0", generation: 0)
        try sandbox.launch(bundled)
        try sandbox.publish(bundled, compressed: true)
        try sandbox.publish(try sandbox.release("1.1.0", generation: 1), compressed: true)
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
}

/// `reseed update` checks a delta's result from the rows it changed while the seed's file is the
/// one its install recorded (a seed beside a user store: the app's data and GRDB's writes go to the
/// user store), and hashes the whole result once anything wrote to it.
@Suite(.timeLimit(.minutes(10))) struct IncrementalDeltaCheckTests {
    /// 1.0.0 installed by `reseed launch` (with a user store, unless not `userStore`), 1.0.0 then 1.1.0
    /// published: the update's arguments.
    func launchedAndPublished(_ sandbox: ChannelSandbox, userStore: Bool = true) throws -> (update: [String], launch: [String], offered: Seed) {
        let bundled = try sandbox.release("1.0.0", generation: 0)
        try sandbox.publish(bundled, compressed: true)
        let offered = try sandbox.release("1.1.0", generation: 1)
        #expect(try sandbox.publish(offered, compressed: true).manifest.deltas.count == 1)
        let publicKey = sandbox.directory.appending("channel.pub")
        try Data((sandbox.key.publicKey.base64 + "\n").utf8).write(to: publicKey)
        let user = userStore ? ["--user-store", "items-user"] : []
        let launch = ["launch", "--seed", bundled.manifestURL.path, "--data-dir", sandbox.dataDirectory.path] + user
        let launched = try ReseedBinary.run(launch)
        #expect(launched.status == 0, "\(launched.stderr)")
        let update = ["update", "--channel", sandbox.server.url.absoluteString, "--public-key", publicKey.path,
                      "--seed", bundled.manifestURL.path, "--data-dir", sandbox.dataDirectory.path] + user + ["--json", "--verbose"]
        return (update, launch, offered)
    }

    /// Beside a user store, or a single-file store the app's launches only read (they write nothing into it).
    @Test(arguments: [true, false]) func aStoreUnchangedSinceItsInstallIsCheckedFromTheChangedRows(userStore: Bool) throws {
        let sandbox = try ChannelSandbox()
        let (update, launch, offered) = try launchedAndPublished(sandbox, userStore: userStore)
        // More launches open the store (as an app does every start): the seed stays the file its install recorded.
        for _ in 0..<2 {
            let relaunched = try ReseedBinary.run(launch)
            #expect(relaunched.status == 0, "\(relaunched.stderr)")
        }
        let result = try ReseedBinary.run(update)
        #expect(result.status == 0, "\(result.stderr)")
        #expect((try? jsonObject(result.stdout))?["method"] as? String == "delta", "\(result.stdout)")
        #expect(result.stderr.contains("checked the delta's result from the rows it changed"), "\(result.stderr)")
        #expect(try sandbox.storeContentHash() == offered.manifest.contentHash)
        // The channel's incremental content hash (the build leaves it to publish), recorded for the next delta.
        let offeredIncremental = try IncrementalContentHash.compute(path: offered.fileURL.path).hash
        #expect(try IncrementalContentHash.compute(path: sandbox.storeURL.path).hash == offeredIncremental)
        let preferences = try String(contentsOf: sandbox.preferencesURL, encoding: .utf8)
        #expect(preferences.contains(#""incrementalContentHash": "\#(offeredIncremental)""#), "\(preferences)")
    }

    /// A single-file store whose `-wal` holds an app's committed row, not yet checkpointed (the
    /// app was killed), so the file alone is not what the store holds: the delta's result is hashed
    /// whole, does not match, and the full seed replaces it. The store file is as its install left
    /// it: the `-wal`'s fingerprint is what tells.
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
        #expect(try sandbox.leaveARowInTheWAL(label: "written by the app") == 0)
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
