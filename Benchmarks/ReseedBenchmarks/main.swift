// In-process figures for Benchmarks/run; each prints one line of JSON with our figure and its
// reference, both measured here, in this process, interleaved so drift hits both alike.
//
//   ReseedBenchmarks uptodate SEED DATA_DIR ITERATIONS
//   ReseedBenchmarks replace SMALL_SEED LARGE_SEED DATA_DIR ROUNDS
//   ReseedBenchmarks install SEED WORK_DIR size|checksum ROUNDS
//   ReseedBenchmarks userswap SEED_A SEED_B WORK_DIR ROWS ROUNDS
//   ReseedBenchmarks useruptodate SEED DATA_DIR ITERATIONS
//   ReseedBenchmarks userimport SEED DATA_DIR
//   ReseedBenchmarks gunzip FILE.gz ROUNDS
//   ReseedBenchmarks unxz DATABASE ROUNDS   (writes DATABASE.xz with Reseed's encoder, then decodes it)
//   ReseedBenchmarks deltaprogress WORK_DIR ROWS ROUNDS
import Foundation
import GRDB
import Reseed
import Synchronization

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// The middle of `values` once sorted (the upper one of an even count); nil when there are none.
func middle<T: Comparable>(_ values: [T]) -> T? {
    let sorted = values.sorted()
    return sorted.isEmpty ? nil : sorted[sorted.count / 2]
}

func median(_ values: [Double]) -> Double { middle(values) ?? .nan }

func time(_ body: () throws -> Void) rethrows -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    try body()
    return seconds(clock.now - start)
}

func readOneRow(_ database: some DatabaseReader) throws {
    _ = try database.read { try Row.fetchOne($0, sql: "SELECT * FROM sqlite_master LIMIT 1") }
}

/// Figure 1 and 2: launch when up to date (our whole startup call, then one row) versus a bare
/// GRDB DatabasePool open of the same store and one row.
func upToDate(seed: URL, dataDirectory: URL, iterations: Int) throws {
    let launcher = Launcher(seed: seed, dataDirectory: dataDirectory)
    let (first, _) = try launcher.launch()
    try first.close()
    let storePath = dataDirectory.appendingPathComponent(try Seed(at: seed).manifest.storeFileName).path
    var ours: [Double] = []
    var bare: [Double] = []
    for _ in 0..<iterations {
        ours.append(try time {
            let (pool, outcome) = try launcher.launch()
            guard outcome.action == .upToDate else { throw BenchmarkError(description: "the launch was not up to date: \(outcome.action)") }
            try readOneRow(pool)
            try pool.close()
        })
        bare.append(try time {
            let pool = try DatabasePool(path: storePath)
            try readOneRow(pool)
            try pool.close()
        })
    }
    print("{\"ours\": \(median(ours)), \"reference\": \(median(bare)), \"iterations\": \(iterations)}")
}

/// Figure 6: what a live replace costs the app's other work, small seed versus large.
///
/// - `small`/`large`: the longest wait of one `store.read` in any of 3 reader tasks that read in a
///   loop while the replace runs (the median over rounds of each replace's longest): what an app's
///   task feels, the gate's held time and the scheduling delay of the pool's threads together.
/// - `smallBlocked`/`largeBlocked`: the replace's own `blockedFor` (the gate alone), and `reopen`,
///   a bare checkpoint + close + reopen of the pool, its reference.
///
/// The readers run at `.medium` priority: on Linux that is the priority whose threads
/// `DispatchQueue.global()` shares, where blocking work on the global queue stalls tasks.
func replaceCost(small: URL, large: URL, dataDirectory: URL, rounds: Int) async throws {
    let smallSeed = try Seed(at: small)
    let largeSeed = try Seed(at: large)
    let store = try await LiveStore(launcher: Launcher(seed: small, dataDirectory: dataDirectory))
    var smallWait: [Double] = [], largeWait: [Double] = []
    var smallBlocked: [Double] = [], largeBlocked: [Double] = []
    for _ in 0..<rounds {
        let largeRound = try await readersDuring(store, replacingWith: largeSeed)
        largeWait.append(largeRound.longestWait)
        largeBlocked.append(largeRound.blocked)
        let smallRound = try await readersDuring(store, replacingWith: smallSeed)
        smallWait.append(smallRound.longestWait)
        smallBlocked.append(smallRound.blocked)
    }
    let path = store.storeURL.path
    var reopen: [Double] = []
    for _ in 0..<rounds {
        let pool = try DatabasePool(path: path)
        try readOneRow(pool)
        reopen.append(try time {
            try pool.writeWithoutTransaction { _ = try $0.checkpoint(.truncate) }
            try pool.close()
            let again = try DatabasePool(path: path)
            try readOneRow(again)
            try again.close()
        })
    }
    print("{\"small\": \(median(smallWait)), \"large\": \(median(largeWait)), \"smallBlocked\": \(median(smallBlocked)), "
        + "\"largeBlocked\": \(median(largeBlocked)), \"reopen\": \(median(reopen)), \"rounds\": \(rounds), "
        + "\"each\": {\"small\": \(smallWait), \"large\": \(largeWait)}}")
}

/// Replaces the store with `seed` while 3 reader tasks read one row in a loop; returns the longest
/// single read any of them waited, and the replace's `blockedFor`.
func readersDuring(_ store: LiveStore, replacingWith seed: Seed) async throws -> (longestWait: Double, blocked: Double) {
    let done = StopFlag()
    return try await withThrowingTaskGroup(of: (Double, Double?).self) { group in
        for _ in 0..<3 {
            group.addTask(priority: .medium) {
                let clock = ContinuousClock()
                var longest: Duration = .zero
                while !done.isSet {
                    let start = clock.now
                    _ = try await store.read { try String.fetchOne($0, sql: "SELECT label FROM item LIMIT 1") }
                    longest = max(longest, clock.now - start)
                }
                return (seconds(longest), nil)
            }
        }
        group.addTask(priority: .medium) {
            let outcome = try await store.replace(with: seed)
            done.set()
            return (0, seconds(outcome.blockedFor))
        }
        var longest = 0.0
        var blocked = Double.nan
        for try await (wait, replaced) in group {
            longest = max(longest, wait)
            if let replaced { blocked = replaced }
        }
        return (longest, blocked)
    }
}

/// Tells the reader tasks the replace is over.
final class StopFlag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}

/// Writes a line to stderr; a failure is ignored (the exit status says the run failed).
func printError(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

/// A benchmark run that went wrong: a step did not do what the figure assumes.
struct BenchmarkError: Error, CustomStringConvertible {
    var description: String
}

/// Runs a shell command line (the reference tools), failing loudly.
///
/// Spawned with `posix_spawn` and reaped with a blocking `waitpid`: Foundation's
/// `Process.waitUntilExit()` on Linux polls its run loop every 50 ms, which rounded every reference
/// time up to a multiple of 50 ms (a 16 MiB `openssl dgst` measured 0.0508 s, a 64 MiB one 0.1011 s)
/// and made quick mode's small-seed ratios (figure 4) meaningless.
func shell(_ command: String) throws {
    let arguments = ["/bin/sh", "-c", command]
    var pid: pid_t = 0
    let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    let spawned = posix_spawn(&pid, "/bin/sh", nil, nil, argv, environ)
    guard spawned == 0 else { throw BenchmarkError(description: "cannot start /bin/sh (errno \(spawned)): \(command)") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 {
        guard errno == EINTR else { throw BenchmarkError(description: "waitpid failed (errno \(errno)): \(command)") }
    }
    // Exited normally with status 0: WIFEXITED and WEXITSTATUS, which Swift does not import.
    guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else { throw BenchmarkError(description: "failed (wait status \(status)): \(command)") }
}

/// Reads `path` through once, so it is in the page cache, then syncs: every measured run starts
/// from the same state. (This VM drops page cache on its own: a 1 GiB seed was half evicted by the
/// time its install ran, and whichever command read it first paid the disk.)
func startEven(reading path: String) throws {
    let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
    defer { try? handle.close() }
    while let chunk = try handle.read(upToCount: 8 << 20), !chunk.isEmpty {}
    sync()
}

/// Figures 3, 4 and 8: a fresh, durable install of SEED (our launcher, in process) versus
/// `cp SEED DEST && sync DEST` (size) or `openssl dgst -sha256 SEED` (checksum), each
/// started with the seed read into the page cache and no dirty pages.
func install(seed: URL, work: URL, verification: Verification, rounds: Int) throws {
    let bundled = try Seed(at: seed)
    let manifest = bundled.manifest
    let seedFile = bundled.fileURL.path
    var configuration = Launcher.Configuration()
    configuration.verification = verification
    var ours: [Double] = []
    var reference: [Double] = []
    var durableCopy: [Double] = []
    // One unmeasured install first: the disk here writes blocks ext4 has never used (or has just
    // discarded) up to 5× slower than blocks it is reusing, so the first run to write SIZE bytes would
    // pay for everyone. After it, each run reuses the blocks the one before freed.
    let warmUp = work.appendingPathComponent("install-warm-up")
    _ = try Launcher(seed: seed, dataDirectory: warmUp, configuration: configuration).prepare()
    try FileManager.default.removeItem(at: warmUp)
    for round in 0..<rounds {
        let data = work.appendingPathComponent("install-\(round)")
        try startEven(reading: seedFile)
        ours.append(try time {
            let outcome = try Launcher(seed: seed, dataDirectory: data, configuration: configuration).prepare()
            guard outcome.action == .installed && outcome.version == manifest.version else {
                throw BenchmarkError(description: "the launch did not install \(manifest.version): \(outcome.action) \(outcome.version)")
            }
        })
        try FileManager.default.removeItem(at: data)
        let copy = work.appendingPathComponent("cp-\(round)").path
        let command = verification == .size
            ? "cp '\(seedFile)' '\(copy)' && sync '\(copy)'"
            : "openssl dgst -sha256 '\(seedFile)' > /dev/null"
        try startEven(reading: seedFile)
        reference.append(try time { try shell(command) })
        if verification == .checksum {
            try startEven(reading: seedFile)
            // The floor under any durable install: the bytes written and synced.
            durableCopy.append(try time { try shell("cp '\(seedFile)' '\(copy)' && sync '\(copy)'") })
        }
        try? FileManager.default.removeItem(atPath: copy)
    }
    // The fastest of each: the disk's write speed is bimodal (the same `dd … conv=fsync` of 1 GiB
    // takes 0.55 s or 1.8 s and more, by where ext4 puts the blocks), and a median of a few rounds
    // lands on either mode for either side; the fastest run is each command's own cost.
    let durable = durableCopy.min().map { "\($0)" } ?? "null"
    print("{\"ours\": \(ours.min() ?? .nan), \"reference\": \(reference.min() ?? .nan), \"durableCopy\": \(durable), \"bytes\": \(manifest.size), \"rounds\": \(rounds), \"each\": {\"ours\": \(ours), \"reference\": \(reference), \"durableCopy\": \(durableCopy)}}")
}

let arguments = CommandLine.arguments.dropFirst()
do {
    switch arguments.first {
    case "uptodate" where arguments.count == 4:
        let values = Array(arguments)
        try upToDate(seed: URL(fileURLWithPath: values[1]), dataDirectory: URL(fileURLWithPath: values[2]), iterations: Int(values[3]) ?? 1000)
    case "replace" where arguments.count == 5:
        let values = Array(arguments)
        try await replaceCost(small: URL(fileURLWithPath: values[1]), large: URL(fileURLWithPath: values[2]),
                          dataDirectory: URL(fileURLWithPath: values[3]), rounds: Int(values[4]) ?? 5)
    case "install" where arguments.count == 5:
        let values = Array(arguments)
        try install(seed: URL(fileURLWithPath: values[1]), work: URL(fileURLWithPath: values[2]),
                    verification: Verification(rawValue: values[3]) ?? .size, rounds: Int(values[4]) ?? 3)
    case "userswap" where arguments.count == 6:
        let values = Array(arguments)
        try await userStoreSwap(seeds: [URL(fileURLWithPath: values[1]), URL(fileURLWithPath: values[2])], work: URL(fileURLWithPath: values[3]),
                                rows: Int(values[4]) ?? 1_000_000, rounds: Int(values[5]) ?? 5)
    case "useruptodate" where arguments.count == 4:
        let values = Array(arguments)
        try userStoreUpToDate(seed: URL(fileURLWithPath: values[1]), dataDirectory: URL(fileURLWithPath: values[2]), iterations: Int(values[3]) ?? 1000)
    case "userimport" where arguments.count == 3:
        let values = Array(arguments)
        try userTableImport(seed: URL(fileURLWithPath: values[1]), dataDirectory: URL(fileURLWithPath: values[2]))
    case "deltaprogress" where arguments.count == 4:
        let values = Array(arguments)
        try deltaProgress(workDirectory: URL(fileURLWithPath: values[1]), rows: Int(values[2]) ?? 3000, rounds: Int(values[3]) ?? 9)
    case "channelupdate" where arguments.count == 9:
        let values = Array(arguments)
        guard let delta = URL(string: values[2]), let full = URL(string: values[3]) else { throw BenchmarkError(description: "not URLs: \(values[2]) \(values[3])") }
        try await channelUpdate(seed: URL(fileURLWithPath: values[1]), deltaChannel: delta, fullChannel: full,
                                publicKey: URL(fileURLWithPath: values[4]), userStore: values[5], work: URL(fileURLWithPath: values[6]),
                                rounds: Int(values[7]) ?? 5, cold: values[8] == "cold")
    case "gunzip" where arguments.count == 3:
        let values = Array(arguments)
        try gunzip(file: URL(fileURLWithPath: values[1]), rounds: Int(values[2]) ?? 5)
    case "unxz" where arguments.count == 3:
        let values = Array(arguments)
        try unxz(database: URL(fileURLWithPath: values[1]), rounds: Int(values[2]) ?? 5)
    default:
        printError("usage: ReseedBenchmarks uptodate SEED DATA_DIR N | replace SMALL LARGE DATA_DIR ROUNDS | install SEED WORK_DIR size|checksum ROUNDS"
            + " | userswap SEED_A SEED_B WORK_DIR ROWS ROUNDS | useruptodate SEED DATA_DIR N | userimport SEED DATA_DIR | gunzip FILE.gz ROUNDS | unxz DATABASE ROUNDS"
            + " | channelupdate SEED DELTA_URL FULL_URL PUBLIC_KEY USER_STORE WORK_DIR ROUNDS warm|cold")
        exit(2)
    }
} catch {
    printError("ReseedBenchmarks: \(error)")
    exit(1)
}
