#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Reseed
import ReseedTesting
import ReseedTestSupport
import Testing

/// The CLI's own output failing: a full disk, a reader that went away, a write the kernel refuses.
/// Each run ends with an exit status and, where stderr can still be written, one line saying
/// what was lost; never a crash (a trap, SIGILL, SIGPIPE) and never a silent exit 0.
@Suite struct OutputFailureTests {
    static let crashMarks = SyscallFaultTests.stackTraceMarks

    func itemsSeed(_ version: String, in sandbox: TemporaryDirectory) throws -> Seed {
        try SeedFixture(name: "items", version: version, sql: [
            "CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT NOT NULL)",
            "INSERT INTO item (label) VALUES ('\(version)')",
        ]).build(in: sandbox.appending("seed-\(version)"))
    }

    func recordedVersion(in data: URL) throws -> String? {
        try PreferencesFile(url: data.appendingPathComponent("preferences.json")).recordedVersion(of: "items")
    }

    /// Runs `reseed arguments…` with stdout and/or stderr on the given handles, and waits.
    func run(_ arguments: [String], stdout: FileHandle? = nil, stderr: FileHandle? = nil,
             prefix: [String] = [], environment: [String: String] = [:]) throws -> (ReseedBinary.Result, Process.TerminationReason) {
        let running = try ReseedBinary.start(arguments, prefix: prefix, standardOutput: stdout, standardError: stderr, environment: environment)
        let result = running.wait()
        return (result, running.process.terminationReason)
    }

    @Test func launchWithStdoutOnAFullDiskExitsOneAndSaysTheOutputWasLost() throws {
        let sandbox = try TemporaryDirectory()
        let seed = try itemsSeed("1.0.0", in: sandbox)
        let data = sandbox.appending("data")
        let full = try #require(FileHandle(forWritingAtPath: "/dev/full"))
        defer { try? full.close() }
        let (result, reason) = try run(["launch", "--seed", seed.manifestURL.path, "--data-dir", data.path, "--json"], stdout: full)
        #expect(reason == .exit, "reseed died of signal \(result.status): \(result.stderr)")
        #expect(result.status == 1)
        #expect(result.stderrLines.count == 1, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("reseed: stdout: cannot write: no space left on device; the command ran, but its output was lost"), "\(result.stderr)")
        #expect(!Self.crashMarks.contains { result.stderr.contains($0) })
        // The install itself happened: only its report was lost.
        #expect(try recordedVersion(in: data) == "1.0.0")
    }

    @Test func launchIntoAPipeNobodyReadsExitsOneWithoutDyingOfSIGPIPE() throws {
        let sandbox = try TemporaryDirectory()
        let seed = try itemsSeed("1.0.0", in: sandbox)
        let data = sandbox.appending("data")
        let pipe = Pipe()
        // No reader is left: the CLI's first write to stdout gets EPIPE (SIGPIPE unless it ignores it).
        try pipe.fileHandleForReading.close()
        let (result, reason) = try run(["launch", "--seed", seed.manifestURL.path, "--data-dir", data.path, "--json"],
                                       stdout: pipe.fileHandleForWriting)
        #expect(reason == .exit, "reseed died of signal \(result.status): \(result.stderr)")
        #expect(result.status == 1)
        #expect(result.stderrLines.count == 1, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("reseed: stdout: cannot write: broken pipe; the command ran, but its output was lost"), "\(result.stderr)")
        #expect(try recordedVersion(in: data) == "1.0.0")
    }

    @Test func aFailureWithStderrOnAFullDiskStillExitsOneWithoutACrash() throws {
        let sandbox = try TemporaryDirectory()
        let full = try #require(FileHandle(forWritingAtPath: "/dev/full"))
        defer { try? full.close() }
        let missing = sandbox.appending("no-such-seed").path
        let (result, reason) = try run(["launch", "--seed", missing, "--data-dir", sandbox.appending("data").path], stderr: full)
        #expect(reason == .exit, "reseed died of signal \(result.status)")
        #expect(result.status == 1)
        #expect(result.stdout == "")
    }

    @Test func helpOnAFullDiskExitsOneAndSaysSo() throws {
        let full = try #require(FileHandle(forWritingAtPath: "/dev/full"))
        defer { try? full.close() }
        let (result, reason) = try run(["launch", "--help"], stdout: full)
        #expect(reason == .exit, "reseed died of signal \(result.status): \(result.stderr)")
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("reseed: stdout: cannot write: no space left on device"), "\(result.stderr)")

        let shown = try ReseedBinary.run(["launch", "--help"])
        #expect(shown.status == 0)
        #expect(shown.stdout.contains("--lock-timeout"))
        #expect(shown.stderr == "")
    }

    @Test(arguments: [["launch", "--lock-timeout", "inf"], ["launch", "--busy-timeout", "nan"], ["launch", "--lock-timeout", "1e300"],
                      ["launch", "--busy-timeout=-1"], ["update", "--channel", "http://127.0.0.1:9/", "--public-key", "k", "--timeout", "1e300"],
                      ["update", "--channel", "http://127.0.0.1:9/", "--public-key", "k", "--manifest-deadline", "inf"],
                      ["diff", "a.sqlite", "b.sqlite", "--examples=-1"]])
    func anOutOfRangeNumberIsAUsageErrorNotACrash(arguments: [String]) throws {
        let sandbox = try TemporaryDirectory()
        let (result, reason) = try run(arguments + (arguments[0] == "launch" ? ["--seed", "s", "--data-dir", sandbox.appending("d").path] : []))
        #expect(reason == .exit, "\(arguments): reseed died of signal \(result.status): \(result.stderr)")
        #expect(result.status == 64, "\(arguments): \(result.stderr)")
        #expect(result.stderr.hasPrefix("Error: --"), "\(arguments): \(result.stderr)")
        #expect(!Self.crashMarks.contains { result.stderr.contains($0) })
    }

    /// The reproduction: `strace -e inject=write:error=ENOSPC` on the write of the JSON line
    /// to stdout (a file), after a successful install.
    @Test(.enabled(if: SyscallFaultTests.straceProblem == nil, Comment(rawValue: SyscallFaultTests.straceProblem ?? "")),
          .timeLimit(.minutes(10)))
    func anInjectedENOSPCOnTheStdoutWriteExitsOneAfterTheInstall() throws {
        guard let strace = SyscallFaultTests.strace else { return }
        let sandbox = try TemporaryDirectory()
        let seed = try itemsSeed("1.0.0", in: sandbox)
        let outPath = sandbox.appending("out.json").path
        let trace = sandbox.appending("trace").path
        // The runtime's backtracer can hang under a tracer; a trap must show as a signal, quickly.
        let environment = ["SWIFT_BACKTRACE": "enable=no"]
        func launch(into data: URL, inject: [String]) throws -> (ReseedBinary.Result, Process.TerminationReason, String) {
            _ = FileManager.default.createFile(atPath: outPath, contents: nil)
            let out = try #require(FileHandle(forWritingAtPath: outPath))
            defer { try? out.close() }
            let (result, reason) = try run(["launch", "--seed", seed.manifestURL.path, "--data-dir", data.path, "--json"], stdout: out,
                                           prefix: [strace, "-f", "-qq", "-y", "-o", trace, "-e", "trace=write"] + inject, environment: environment)
            return (result, reason, (try? String(contentsOfFile: trace, encoding: .utf8)) ?? "")
        }

        // A dry run finds which write (the N-th `write` of its thread) puts the JSON line on stdout.
        let (dry, dryReason, dryTrace) = try launch(into: sandbox.appending("dry"), inject: [])
        try #require(dryReason == .exit && dry.status == 0, "the traced launch fails without a fault: \(dry.stderr)")
        let calls = UpgradeScenario.calls(in: dryTrace)
        var ordinals: [Int: Int] = [:]
        var stdoutWrite: (thread: Int, ordinal: Int)?
        for call in calls where call.name == "write" {
            let ordinal = (ordinals[call.thread] ?? 0) + 1
            ordinals[call.thread] = ordinal
            if call.line.contains("write(1<\(outPath)>") { stdoutWrite = (call.thread, ordinal) }
        }
        let target = try #require(stdoutWrite, "no write to stdout in the trace: \(dryTrace.prefix(2000))")

        let data = sandbox.appending("data")
        let (result, reason, faultTrace) = try launch(into: data, inject: ["-e", "inject=write:error=ENOSPC:when=\(target.ordinal)"])
        #expect(faultTrace.contains("write(1<\(outPath)>") && faultTrace.contains("ENOSPC (No space left on device) (INJECTED)"),
                "the fault did not hit the stdout write: \(faultTrace.prefix(2000))")
        #expect(reason == .exit, "reseed died of signal \(result.status): \(result.stderr)")
        #expect(result.status == 1)
        #expect(result.stderr.contains("reseed: stdout: cannot write: no space left on device; the command ran, but its output was lost"), "\(result.stderr)")
        #expect(!Self.crashMarks.contains { result.stderr.contains($0) })
        #expect(try recordedVersion(in: data) == "1.0.0")
        #expect((try? String(contentsOfFile: outPath, encoding: .utf8)) == "")
    }
}
