#if canImport(Glibc)
import Glibc
#endif
import Foundation
import GRDB
@testable import Reseed
import ReseedPackaging
import ReseedSystem
import ReseedTesting
import ReseedTestSupport
import Synchronization
import Testing

/// Real system-call failures in a real `reseed launch`, one at a time, during an upgrade.
///
/// A clean upgrade (1.0.0 installed, 2.0.0 of 4 MiB shipped) is traced once to find every
/// invocation of each call below that touches the data directory or the seed; then each of
/// them (up to `capPerCall`, spread over the run) is made to fail with `strace -e inject`.
/// After each run: one clear line on stderr (or a launch that worked), no crash, the install
/// invariant, and a clean relaunch that installs 2.0.0 and leaves no temporary file.
@Suite(.serialized) struct SyscallFaultTests {
    /// The calls that act on the data directory: the file-system layer's (`sync_file_range` only
    /// starts writeback early: its failure must not fail anything), and SQLite's own
    /// (`pwrite64`, `fdatasync`, `ftruncate`). strace ignores a `?name` this architecture lacks.
    static let calls = ["openat", "write", "pwrite64", "copy_file_range", "sync_file_range", "fsync", "fdatasync", "ftruncate", "renameat",
                        "renameat2", "rename", "unlinkat", "unlink", "flock", "linkat", "mkdirat", "fstat", "newfstatat", "pread64", "read"]
    /// The error each call fails with: a plausible one for it (`ENOLCK` rather than `EWOULDBLOCK` for
    /// `flock`, which would only look like a held lock), `EIO` otherwise.
    static let errors = ["openat": "EACCES", "mkdirat": "EACCES", "linkat": "EMLINK", "write": "ENOSPC", "pwrite64": "ENOSPC", "flock": "ENOLCK"]
    static let capPerCall = 15
    static let stackTraceMarks = ["Fatal error", "Stack dump", "Current stack trace", "Segmentation fault", "Illegal instruction", "BUG IN"]

    /// Why strace cannot be used here, or nil.
    static let straceProblem: String? = {
        guard let strace else { return "strace is not installed (not on PATH)" }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: strace)
        process.arguments = ["-f", "-qq", "-o", "/dev/null", "true"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return "strace does not start: \(error)" }
        process.waitUntilExit()
        return process.terminationStatus == 0 ? nil : "strace cannot trace here (`strace -f true` exits \(process.terminationStatus); is ptrace permitted?)"
    }()

    static let strace: String? = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        .map { "\($0)/strace" }.first { FileManager.default.isExecutableFile(atPath: $0) }

    @Test(.enabled(if: straceProblem == nil, Comment(rawValue: straceProblem ?? "")), .timeLimit(.minutes(20)),
          arguments: [Verification.size, .checksum])
    func upgradeSurvivesAnyOneFailedSystemCall(level: Verification) throws {
        guard let strace = Self.strace else { return }
        try Self.runMatrix(try UpgradeScenario(level: level, strace: strace), name: "\(level)")
    }

    /// The same table of faults against `reseed update` from a channel served over HTTP: the full
    /// seed (compressed, as `reseed publish` writes it), or a delta from the installed seed. A
    /// failed delta that falls back to the full seed counts as an update that worked.
    @Test(.enabled(if: straceProblem == nil, Comment(rawValue: straceProblem ?? "")), .timeLimit(.minutes(20)),
          arguments: [false, true])
    func updateSurvivesAnyOneFailedSystemCall(delta: Bool) throws {
        guard let strace = Self.strace else { return }
        // Not `write`: strace counts `when=N` per thread, and an update's threads (curl's, the
        // download's checksum, libdispatch's) vary from run to run. Once, under the full suite, the
        // N-th write of another thread than the dry run's failed instead and the update hung until
        // the watchdog killed it; the download's failed write is tested through the seam instead
        // (`theDownloadWritesThroughTheFileSystemSeamAndAFailedWriteIsAClearError`).
        try Self.runMatrix(try UpgradeScenario(update: delta, strace: strace), name: delta ? "update by delta" : "update",
                           calls: Self.calls.filter { $0 != "write" })
    }

    /// The matrix: a dry run of `scenario` finds every call that touches the data directory or the
    /// seed; each (up to ``capPerCall`` a call) then fails in a run of its own; after each, one clear
    /// line, the invariant, no file judged unusable, and a clean run again that reaches 2.0.0.
    static func runMatrix(_ scenario: UpgradeScenario, name level: String, calls: [String] = Self.calls) throws {
        let clock = ContinuousClock()
        let start = clock.now

        let dryRun = try scenario.traced(["-e", "trace=" + calls.map { "?" + $0 }.joined(separator: ",")])
        try #require(dryRun.result.status == 0, "the upgrade fails even without a fault: \(dryRun.result.stderr)")
        try #require(dryRun.calls.contains { scenario.touchesTarget($0.line) },
                     "the traced upgrade shows no call on the data directory: \(dryRun.trace.utf8.count) bytes of trace, \(dryRun.trace.prefix(500).debugDescription); stdout \(dryRun.result.stdout)")
        let (points, totals) = scenario.faultPoints(dryRun)

        var outcomes: [String: Int] = [:]
        var injectedPerCall: [String: Int] = [:]
        var collateral = 0
        var leftoversAfterFailure = 0
        var warned: [String] = []
        var voided: [String] = []
        for call in calls {
            for when in Self.spread(points[call] ?? [], cap: Self.capPerCall) {
                let label = "\(level) \(call):\(Self.errors[call] ?? "EIO"):when=\(when)"
                try scenario.reset()
                guard let run = try scenario.faultRun(["-e", "trace=\(call)", "-e", "inject=\(call):error=\(Self.errors[call] ?? "EIO"):when=\(when)"],
                                                      label: label, voided: &voided) else { continue }
                let injected = run.calls.filter { $0.line.contains("(INJECTED)") }
                let hits = injected.filter { scenario.touchesTarget($0.line) }
                collateral += injected.count - hits.count
                #expect(!hits.isEmpty, "\(label): the fault hit no call on the data directory or the seed: \(injected.map(\.line)); trace: \(run.trace.utf8.count) bytes, \(run.calls.count) calls: \(run.trace.prefix(300).debugDescription)")
                injectedPerCall[call, default: 0] += hits.isEmpty ? 0 : 1

                scenario.expectOneClearLine(run, label)
                let bytes = try? fileSHA256(scenario.data.appendingPathComponent("items.sqlite"))
                let state = scenario.state()
                // Before the swap nothing writes the installed seed; the swap itself (its sidecars
                // removed, the rename) first checkpoints the old store's WAL into it, by design.
                let inSwap = hits.contains { $0.name.hasPrefix("rename") || $0.line.contains("items.sqlite-") }
                if state == "old store, 1.0.0 recorded", !inSwap {
                    #expect(bytes == scenario.installedBytes, "\(label): the installed seed's bytes changed, though it was not replaced")
                }
                #expect(UpgradeScenario.allowedStates.contains(state), "\(label): \(state); stderr: \(run.result.stderr)")
                if call == "sync_file_range" {
                    #expect(run.result.status == 0, "\(label): a failed writeback hint failed the launch: \(run.result.stderr)")
                }
                if run.result.status == 0 {
                    #expect(state == "new store, 2.0.0 recorded", "\(label): exit 0 but \(state)")
                    #expect((try? jsonObject(run.result.stdout))?["version"] as? String == "2.0.0", "\(label): stdout \(run.result.stdout)")
                }
                if run.result.status != 0, !scenario.temporaryFiles().isEmpty { leftoversAfterFailure += 1 }
                // The old store is a good database and the preferences parse: a fault must not make either look unusable.
                let aside = scenario.filesKeptAside()
                #expect(aside.isEmpty, "\(label): a usable file was judged unusable and set aside: \(aside); stderr: \(run.result.stderr)")
                if run.result.stderrLines.contains(where: UpgradeScenario.isWarning) { warned.append("\(call):\(when)") }
                let step = run.result.status == 0 ? "launched" : "failed at " + (run.result.stderrLines.last.map(UpgradeScenario.step) ?? "?")
                outcomes["\(step) → \(state)", default: 0] += 1

                let relaunch = try ReseedBinary.run(scenario.arguments)
                #expect(relaunch.status == 0, "\(label): the relaunch failed: \(relaunch.stderr)")
                #expect((try? jsonObject(relaunch.stdout))?["version"] as? String == "2.0.0", "\(label): relaunch stdout \(relaunch.stdout)")
                let relaunched = scenario.state()
                #expect(relaunched == "new store, 2.0.0 recorded", "\(label): after the relaunch: \(relaunched)")
                let leftovers = scenario.temporaryFiles()
                #expect(leftovers.isEmpty, "\(label): temporary files after the relaunch: \(leftovers)")
            }
        }

        #expect(voided.count <= voidedPointsAllowed, "\(level): \(voided.count) points could not be tested: \(voided)")
        let elapsed = clock.now - start
        let found = calls.map { "\($0) \(points[$0]?.count ?? 0)/\(totals[$0] ?? 0)" }.joined(separator: ", ")
        print("""
            syscall faults (\(level)): calls found (on the data directory or seed / all): \(found)
            syscall faults (\(level)): \(injectedPerCall.values.reduce(0, +)) faults injected \
            (\(calls.compactMap { call in injectedPerCall[call].map { "\(call) \($0)" } }.joined(separator: ", "))), \
            \(collateral) more on other threads' same-numbered calls, in \(elapsed.components.seconds) s; \
            runs that failed and left a temporary file (removed by the relaunch): \(leftoversAfterFailure); \
            runs with a logged warning: \(warned); \
            points not tested (each of 3 runs failed a runtime eventfd write instead): \(voided)
            syscall faults (\(level)): outcomes: \(outcomes.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: "; "))
            """)
    }

    /// A point whose three runs were all void is reported, not failed; more than a few mean the
    /// dry run no longer predicts the fault runs' threads, and the matrix no longer tests much.
    static let voidedPointsAllowed = 3

    /// Up to `cap` of `points`, spread evenly from the first to the last.
    static func spread(_ points: [Int], cap: Int) -> [Int] {
        guard points.count > cap else { return points }
        return (0..<cap).map { points[$0 * (points.count - 1) / (cap - 1)] }
    }
}

/// The device before an upgrade, the seed of the upgrade, and runs of `reseed launch` under strace.
struct UpgradeScenario {
    static let allowedStates: Set = ["old store, 1.0.0 recorded", "new store, 1.0.0 recorded", "new store, 2.0.0 recorded"]

    let sandbox: TemporaryDirectory
    let strace: String
    let template: URL
    let data: URL
    let seedFolder: URL
    let arguments: [String]
    /// The SHA-256 of the installed store file (1.0.0, in WAL mode) before each run.
    var installedBytes: String? { try? fileSHA256(template.appendingPathComponent("items.sqlite")) }
    /// The channel an update scenario downloads from (kept alive with the scenario).
    var server: ChannelServer?
    var isUpdate: Bool { server != nil }

    init(level: Verification, strace: String) throws {
        sandbox = try TemporaryDirectory(prefix: "reseed-strace")
        self.strace = strace
        let items = "CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT)"
        let old = try SeedFixture(name: "items", version: "1.0.0", sql: [items, "INSERT INTO item (label) VALUES ('old')"])
            .build(in: sandbox.appending("seed-1.0.0"))
        let new = try SeedFixture(name: "items", version: "2.0.0", sql: [items, "INSERT INTO item (label) VALUES ('new')"], paddingBytes: 4 << 20)
            .build(in: sandbox.appending("seed-2.0.0"))
        // The device: 1.0.0 installed and used by the real binary, which leaves the store in WAL mode with its -wal and -shm.
        template = sandbox.appending("template")
        let installed = try ReseedBinary.run(["launch", "--seed", old.manifestURL.path, "--data-dir", template.path])
        guard installed.status == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: installed.stderr]) }
        data = sandbox.appending("data")
        seedFolder = new.manifestURL.deletingLastPathComponent()
        arguments = ["launch", "--seed", new.manifestURL.path, "--data-dir", data.path, "--verify", level.rawValue, "--json"]
        try reset()
    }

    /// 1.0.0 installed by the real binary, and 2.0.0 published, compressed, on a channel served over
    /// HTTP (with the delta from 1.0.0 when `delta`); the runs are `reseed update` of the app that
    /// ships 1.0.0. Both seeds carry the same 4 MiB of padding, so the delta is small.
    init(update delta: Bool, strace: String) throws {
        sandbox = try TemporaryDirectory(prefix: "reseed-strace-update")
        self.strace = strace
        let padding = [
            "CREATE TABLE padding (id INTEGER PRIMARY KEY, bytes BLOB NOT NULL)",
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 4) INSERT INTO padding (bytes) SELECT zeroblob(1048576) FROM n",
        ]
        let items = "CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT)"
        let old = try SeedFixture(name: "items", version: "1.0.0", sql: [items, "INSERT INTO item (label) VALUES ('old')"] + padding)
            .build(in: sandbox.appending("seed-1.0.0"))
        let new = try SeedFixture(name: "items", version: "2.0.0", sql: [items, "INSERT INTO item (label) VALUES ('new')"] + padding)
            .build(in: sandbox.appending("seed-2.0.0"))
        let channel = sandbox.appending("channel")
        try FileManager.default.createDirectory(at: channel, withIntermediateDirectories: true)
        let publicKey = sandbox.appending("channel.pub")
        let key = try ChannelPrivateKey.generate(privateKeyFile: sandbox.appending("channel.key"), publicKeyFile: publicKey)
        let publisher = ChannelPublisher(channel: channel, privateKey: key)
        if delta { try publisher.publish(old) }
        let published = try publisher.publish(new)
        guard published.manifest.deltas.count == (delta ? 1 : 0) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "the channel has \(published.manifest.deltas.count) deltas"])
        }
        let server = try ChannelServer(root: channel, scratch: sandbox.appending("server"))
        self.server = server
        template = sandbox.appending("template")
        let installed = try ReseedBinary.run(["launch", "--seed", old.manifestURL.path, "--data-dir", template.path])
        guard installed.status == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: installed.stderr]) }
        data = sandbox.appending("data")
        seedFolder = old.manifestURL.deletingLastPathComponent()
        arguments = ["update", "--channel", server.url.absoluteString, "--public-key", publicKey.path, "--seed", old.manifestURL.path,
                     "--data-dir", data.path, "--json", "--timeout", "120"]
        try reset()
    }

    func reset() throws {
        if FileManager.default.fileExists(atPath: data.path) { try FileManager.default.removeItem(at: data) }
        try FileManager.default.copyItem(at: template, to: data)
    }

    /// True when a traced call names a file of the data directory or of the seed (paths from `-y`, or arguments).
    /// Where a fault can be injected, from a dry run: per call, the ordinals (strace's `when=N`) of
    /// the calls on the data directory; and per call, how many the dry run made in all.
    ///
    /// strace counts `when=N` per thread, so the N-th call of every thread is failed: an ordinal is a
    /// point only if, in the dry run, no thread's N-th call of it is elsewhere (the loader's, say).
    func faultPoints(_ dryRun: TracedRun) -> (points: [String: [Int]], totals: [String: Int]) {
        var points: [String: [Int]] = [:]
        var totals: [String: Int] = [:]
        var ordinals: [Int: [String: Int]] = [:]
        var collateralOrdinals: [String: Set<Int>] = [:]
        for call in dryRun.calls {
            let ordinal = (ordinals[call.thread]?[call.name] ?? 0) + 1
            ordinals[call.thread, default: [:]][call.name] = ordinal
            totals[call.name, default: 0] += 1
            if touchesTarget(call.line) {
                if points[call.name]?.contains(ordinal) != true { points[call.name, default: []].append(ordinal) }
            } else {
                collateralOrdinals[call.name, default: []].insert(ordinal)
            }
        }
        for (call, ordinalsElsewhere) in collateralOrdinals {
            points[call]?.removeAll { ordinalsElsewhere.contains($0) }
        }
        return (points, totals)
    }

    func touchesTarget(_ line: String) -> Bool {
        [data.path, seedFolder.path].contains { target in ["/", ">", "\""].contains { line.contains(target + $0) } }
    }

    /// One call started in a trace of `strace -f -y -o`, its `<unfinished ...>` and `resumed>` halves joined.
    struct TracedCall {
        var thread: Int
        var name: String
        var line: String
    }

    struct TracedRun {
        var result: ReseedBinary.Result
        var trace: String
        var calls: [TracedCall]
        /// The runtime's call that the fault hit instead, when the run was ended as void.
        var voided: String?
    }

    /// Runs `strace -f -qq -y -o <trace> <straceArguments> reseed <arguments>`; one still running after
    /// `limit` is killed with the process it traces, and reported.
    func traced(_ straceArguments: [String], limit: Double = 120) throws -> TracedRun {
        let trace = sandbox.appending("run.trace")
        // The runtime's backtracer can hang under a tracer: a crash must end the run, as a signal.
        let running = try ReseedBinary.start(arguments, prefix: [strace, "-f", "-qq", "-y", "-o", trace.path] + straceArguments,
                                             environment: ["SWIFT_BACKTRACE": "enable=no"])
        let watchdog = Watchdog(pid: running.process.processIdentifier)
        DispatchQueue.global().asyncAfter(deadline: .now() + limit) { watchdog.fire() }
        startDetachedThread("test-trace-watch") { Self.voidOnRuntimeFault(trace, watchdog) }
        let result = running.wait()
        watchdog.disarm()
        let text = (try? Data(contentsOf: trace)).map { String(decoding: $0, as: UTF8.self) } ?? "(no trace file)"
        if let voided = watchdog.voided { return TracedRun(result: result, trace: text, calls: Self.calls(in: text), voided: voided) }
        #expect(!watchdog.fired, "\(straceArguments) hung for \(limit) s and was killed; stderr: \(result.stderr)")
        #expect(running.process.terminationReason == .exit, "\(straceArguments): reseed died of signal \(result.status); stderr: \(result.stderr)")
        return TracedRun(result: result, trace: text, calls: Self.calls(in: text))
    }

    /// strace counts `when=N` per thread, so a fault meant for the N-th write on the data directory
    /// also fails the N-th write of every other thread, and which threads write how often varies from
    /// run to run. A failed write to the runtime's eventfd (libdispatch's wake-up, which cannot fail
    /// for real) loses a wake-up and the process waits forever: such a run says nothing about Reseed.
    /// Watches the trace while the run lasts and ends the run as void once such a fault shows.
    static func voidOnRuntimeFault(_ trace: URL, _ watchdog: Watchdog) {
        while watchdog.armed {
            usleep(100_000)
            guard let data = try? Data(contentsOf: trace) else { continue }
            let line = String(decoding: data, as: UTF8.self).split(separator: "\n")
                .first { $0.contains("(INJECTED)") && $0.contains("<anon_inode:[eventfd]>") }
            if let line {
                watchdog.void(String(line))
                return
            }
        }
    }

    /// A fault run that is not void: up to three attempts at `straceArguments`; nil (with the reason
    /// in `voided`) when each one injected the fault into the runtime instead (see ``voidOnRuntimeFault``).
    func faultRun(_ straceArguments: [String], label: String, voided: inout [String]) throws -> TracedRun? {
        var reasons: [String] = []
        for _ in 0..<3 {
            let run = try traced(straceArguments)
            guard let reason = run.voided else { return run }
            reasons.append(reason)
            try reset()
        }
        voided.append("\(label): \(reasons.joined(separator: "; "))")
        return nil
    }

    static func calls(in trace: String) -> [TracedCall] {
        var calls: [TracedCall] = []
        var unfinished: [Int: Int] = [:]
        for line in trace.split(separator: "\n") {
            guard let space = line.firstIndex(of: " "), let thread = Int(line[..<space]) else { continue }
            // strace pads the thread id to five places: "5912  openat(…" as well as "26612 openat(…".
            let rest = line[space...].drop { $0 == " " }
            if rest.hasPrefix("<... ") {
                if let index = unfinished.removeValue(forKey: thread) { calls[index].line += rest }
                continue
            }
            guard let paren = rest.firstIndex(of: "("), !rest[..<paren].isEmpty,
                  rest[..<paren].allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else { continue }
            if rest.hasSuffix("<unfinished ...>") { unfinished[thread] = calls.count }
            calls.append(TracedCall(thread: thread, name: String(rest[..<paren]), line: String(line)))
        }
        return calls
    }

    /// stderr is one `reseed: ` line for a failure (nothing for a launch that worked), with at
    /// most one warning of Reseed's logger before it; never a crash report.
    func expectOneClearLine(_ run: TracedRun, _ label: String) {
        let result = run.result
        #expect(!SyscallFaultTests.stackTraceMarks.contains { result.stderr.contains($0) }, "\(label): \(result.stderr)")
        let lines = result.stderrLines
        let errors = lines.filter { $0.hasPrefix("reseed: ") }
        #expect(lines.count <= 2, "\(label): \(lines.count) lines on stderr: \(result.stderr)")
        #expect(lines.allSatisfy { $0.hasPrefix("reseed: ") || Self.isWarning($0) }, "\(label): stderr: \(result.stderr)")
        if result.status == 0 {
            #expect(errors.isEmpty, "\(label): exit 0 with an error line: \(result.stderr)")
        } else {
            #expect(errors.count == 1 && lines.last?.hasPrefix("reseed: ") == true, "\(label): exit \(result.status), stderr: \(result.stderr)")
        }
    }

    /// A line of the CLI's log handler: `<time> warning reseed: …`.
    static func isWarning(_ line: Substring) -> Bool {
        let words = line.split(separator: " ", maxSplits: 3)
        return words.count == 4 && ["warning", "error", "critical"].contains(words[1]) && words[2] == "reseed:"
    }

    /// What an error line says failed: `reseed: /data/items.sqlite: cannot write: …` → `cannot write`.
    static func step(_ line: Substring) -> String {
        String(line.dropFirst("reseed: ".count).drop { $0 != ":" }.dropFirst(2).prefix { $0 != ":" && $0 != ";" })
    }

    /// Which allowed state the data directory is in, read as the app would read it, or what is wrong.
    func state() -> String {
        let store = data.appendingPathComponent("items.sqlite")
        guard FileManager.default.fileExists(atPath: store.path) else { return "the store is gone" }
        do {
            let recorded = try PreferencesFile(url: data.appendingPathComponent("preferences.json")).recordedVersion(of: "items")
            let metadata = try SeedMetadata.read(path: store.path)
            let queue = try DatabaseQueue(path: store.path)
            defer { try? queue.close() }
            let (check, label) = try queue.read { db in
                (try String.fetchOne(db, sql: "PRAGMA quick_check"), try String.fetchOne(db, sql: "SELECT label FROM item"))
            }
            guard check == "ok" else { return "the store fails quick_check: \(check ?? "nil")" }
            switch (metadata?.version, label, recorded) {
            case ("1.0.0", "old", "1.0.0"): return "old store, 1.0.0 recorded"
            case ("2.0.0", "new", "1.0.0"): return "new store, 1.0.0 recorded"
            case ("2.0.0", "new", "2.0.0"): return "new store, 2.0.0 recorded"
            default: return "store \(metadata?.version ?? "without metadata") (\(label ?? "no row")) with \(recorded ?? "no version") recorded"
            }
        } catch {
            return "the store does not open: \(error)"
        }
    }

    func filesKeptAside() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: data.path)) ?? []).filter { $0.contains(".invalid-") || $0.contains(".corrupt-") }
    }

    func temporaryFiles() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: data.path)) ?? []).filter { $0.contains(".reseed-tmp-") }
    }
}

/// Kills a traced run that hangs: strace, and the process it traces (which strace's death would only detach).
final class Watchdog: Sendable {
    private let pid: Int32
    private let state = Mutex((armed: true, fired: false, voided: String?.none))

    init(pid: Int32) { self.pid = pid }

    var fired: Bool { state.withLock { $0.fired } }
    var armed: Bool { state.withLock { $0.armed } }
    /// Why the run was ended as void, if it was (see ``UpgradeScenario/voidOnRuntimeFault(_:_:)``).
    var voided: String? { state.withLock { $0.voided } }

    func disarm() { state.withLock { $0.armed = false } }

    func fire() {
        let armed = state.withLock { state in
            defer { state.fired = state.armed }
            return state.armed
        }
        guard armed else { return }
        kill()
    }

    func void(_ reason: String) {
        let armed = state.withLock { state in
            defer { if state.armed { state.voided = reason } }
            return state.armed
        }
        guard armed else { return }
        kill()
    }

    private func kill() {
        let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
        for child in children.split(separator: " ").compactMap({ Int32($0) }) { Glibc.kill(child, SIGKILL) }
        Glibc.kill(pid, SIGKILL)
    }
}
