import Foundation
import GRDB
import Reseed
import ReseedTesting
import ReseedTestSupport
import Testing

/// Real system-call failures, one at a time, in a real `reseed launch --user-store` that imports
/// the user's notes out of a single-file store and installs the seed (as ``SyscallFaultTests`` does
/// for a plain upgrade): a clean error naming the step or a launch that worked, no note lost, and a
/// next normal launch that completes with every note in the user store.
@Suite(.serialized) struct UserStoreSyscallFaultTests {
    /// The plain upgrade's calls, and those the import adds on the data directory: SQLite's locks
    /// (`fcntl`), the listing for an interrupted import's temporary files (`getdents64`), `close`.
    static let calls = SyscallFaultTests.calls + ["fcntl", "getdents64", "lseek", "fallocate", "close"]

    @Test(.enabled(if: SyscallFaultTests.straceProblem == nil, Comment(rawValue: SyscallFaultTests.straceProblem ?? "")), .timeLimit(.minutes(40)))
    func importSurvivesAnyOneFailedSystemCall() throws {
        guard let strace = SyscallFaultTests.strace else { return }
        let device = try UserRowsDevice(rows: 3_000, walRows: 300, paddingBytes: 4 << 20, prefix: "reseed-strace-import")
        let scenario = UpgradeScenario(importing: device, strace: strace)
        let clock = ContinuousClock()
        let start = clock.now

        try scenario.reset()
        let dryRun = try scenario.traced(["-e", "trace=" + Self.calls.map { "?" + $0 }.joined(separator: ",")])
        try #require(dryRun.result.status == 0, "the import fails even without a fault: \(dryRun.result.stderr)")
        #expect(try device.state(scenario.data, "dry run") == "new seed + complete user store")
        let (points, totals) = scenario.faultPoints(dryRun)
        let importCalls = dryRun.calls.filter { $0.line.contains("items-user.sqlite") }.count
        try #require(importCalls > 0, "the trace shows no call on the user store")

        var outcomes: [String: Int] = [:]
        var injectedPerCall: [String: Int] = [:]
        var lost = 0
        var voided: [String] = []
        for call in Self.calls {
            for when in SyscallFaultTests.spread(points[call] ?? [], cap: SyscallFaultTests.capPerCall) {
                let errno = SyscallFaultTests.errors[call] ?? "EIO"
                let label = "\(call):\(errno):when=\(when)"
                try scenario.reset()
                guard let run = try scenario.faultRun(["-e", "trace=\(call)", "-e", "inject=\(call):error=\(errno):when=\(when)"],
                                                      label: label, voided: &voided) else { continue }
                let hits = run.calls.filter { $0.line.contains("(INJECTED)") && scenario.touchesTarget($0.line) }
                injectedPerCall[call, default: 0] += hits.isEmpty ? 0 : 1
                scenario.expectOneClearLine(run, label)
                let state = try device.state(scenario.data, label)
                if state.contains("LOST") || state.contains("INCOMPLETE") { lost += 1 }
                if run.result.status == 0 {
                    #expect(state == "new seed + complete user store", "\(label): exit 0 but \(state)")
                }
                let aside = scenario.filesKeptAside()
                #expect(aside.isEmpty, "\(label): a usable file was judged unusable and set aside: \(aside); stderr: \(run.result.stderr)")
                let step = run.result.status == 0 ? "launched" : "failed at " + (run.result.stderrLines.last.map(UpgradeScenario.step) ?? "?")
                outcomes["\(step) → \(state)", default: 0] += 1
                try device.expectFinalLaunch(scenario.data, "\(label), relaunch")
            }
        }
        #expect(lost == 0)
        #expect(voided.count <= SyscallFaultTests.voidedPointsAllowed, "\(voided.count) points could not be tested: \(voided)")
        let elapsed = clock.now - start
        print("""
            user store syscall faults: calls found (on the data directory or seed / all): \
            \(Self.calls.map { "\($0) \(points[$0]?.count ?? 0)/\(totals[$0] ?? 0)" }.joined(separator: ", ")); \(importCalls) on the user store
            user store syscall faults: \(injectedPerCall.values.reduce(0, +)) faults injected \
            (\(Self.calls.compactMap { call in injectedPerCall[call].map { "\(call) \($0)" } }.joined(separator: ", "))) in \(elapsed.components.seconds) s; \
            \(lost) with a note lost; points not tested (each of 3 runs failed a runtime eventfd write instead): \(voided)
            user store syscall faults: outcomes: \(outcomes.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: "; "))
            """)
    }
}

extension UpgradeScenario {
    /// The traced runs of ``UpgradeScenario`` over a device with notes to import.
    init(importing device: UserRowsDevice, strace: String) {
        sandbox = device.sandbox
        self.strace = strace
        template = device.template
        data = device.sandbox.appending("data")
        seedFolder = device.newSeed.manifestURL.deletingLastPathComponent()
        arguments = device.arguments(data)
    }
}
