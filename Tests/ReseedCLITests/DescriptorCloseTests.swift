import Foundation
import Reseed
import ReseedTesting
import Testing

/// Every descriptor is closed once: after a `close(2)` that fails, the number is never closed
/// again (on Linux it is released either way, and may already belong to another thread's file).
@Suite(.serialized) struct DescriptorCloseTests {
    /// `close(7</data/.preferences.json.reseed-tmp-…>)` → `close(7</data/.preferences.json.reseed-tmp-…>`.
    private static func closedFile(_ line: String) -> Substring? {
        guard let start = line.range(of: "close(")?.lowerBound, let end = line[start...].firstIndex(of: ")") else { return nil }
        return line[start..<end]
    }

    @Test(.enabled(if: SyscallFaultTests.straceProblem == nil, Comment(rawValue: SyscallFaultTests.straceProblem ?? "")),
          .timeLimit(.minutes(10)))
    func aFailedCloseOfAWrittenFileIsNeverRetried() throws {
        guard let strace = SyscallFaultTests.strace else { return }
        let scenario = try UpgradeScenario(level: .size, strace: strace)
        let dryRun = try scenario.traced(["-e", "trace=close"])
        try #require(dryRun.result.status == 0, "the upgrade fails without a fault: \(dryRun.result.stderr)")
        #expect(!dryRun.calls.contains { $0.line.contains("EBADF") }, "a close of a closed descriptor in a clean upgrade")
        // The closes of the files Reseed writes and renames into place: its temporary files.
        var targets: [(thread: Int, ordinal: Int)] = []
        var perThread: [Int: Int] = [:]
        for call in dryRun.calls where call.name == "close" {
            perThread[call.thread, default: 0] += 1
            if call.line.contains(".reseed-tmp-") { targets.append((call.thread, perThread[call.thread] ?? 0)) }
        }
        try #require(!targets.isEmpty, "no close of a temporary file in the trace")
        var injected = 0
        for target in targets {
            try scenario.reset()
            let run = try scenario.traced(["-e", "trace=close", "-e", "inject=close:error=EIO:when=\(target.ordinal)"])
            scenario.expectOneClearLine(run, "close #\(target.ordinal) failing")
            for (index, call) in run.calls.enumerated() where call.line.contains("(INJECTED)") && call.line.contains(".reseed-tmp-") {
                injected += 1
                guard let file = Self.closedFile(call.line) else { continue }
                let again = run.calls[(index + 1)...].filter { $0.name == "close" && $0.line.contains(file) }
                #expect(again.isEmpty, "closed again after a failed close: \(call.line) then \(again.map(\.line))")
            }
            #expect(!run.calls.contains { $0.line.contains("EBADF") }, "a close of a closed descriptor after close #\(target.ordinal) failed")
            let state = scenario.state()
            #expect(UpgradeScenario.allowedStates.contains(state), "close #\(target.ordinal) failing left: \(state)")
        }
        #expect(injected > 0, "no injected failure hit a temporary file's close")
    }
}
