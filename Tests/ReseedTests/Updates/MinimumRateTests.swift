@testable import Reseed
import Testing

/// When a transfer counts as too slow (``HTTPTransfer/RateWindow``), as tables of arrivals over
/// time: what both engines (libcurl on Linux, URLSession elsewhere) ask at every check.
struct MinimumRateTests {
    /// (milliseconds since the transfer began, body bytes received by then) at each check.
    typealias Arrivals = [(Int, Int64)]

    /// The first check, if any, at which a transfer limited to `limit` bytes a second over
    /// `window` milliseconds is cut, and the bytes it reports over its span.
    static func firstCut(_ arrivals: Arrivals, limit: Int64, window: Int) -> (at: Int, received: Int64)? {
        var rate = HTTPTransfer.RateWindow(HTTPTransfer.MinimumRate(bytesPerSecond: limit, window: .milliseconds(window)))
        for (at, total) in arrivals {
            if let shortfall = rate.record(total: total, after: .milliseconds(at)) { return (at, shortfall.received) }
        }
        return nil
    }

    /// A check once a second for `seconds`, `total(second)` bytes received by each.
    static func everySecond(_ seconds: Int, _ total: (Int) -> Int64) -> Arrivals {
        (0...seconds).map { ($0 * 1000, total($0)) }
    }

    @Test func aTransferYoungerThanTheWindowIsNeverCutHoweverSlow() {
        #expect(Self.firstCut(Self.everySecond(59) { _ in 0 }, limit: 1024, window: 60_000) == nil)
    }

    @Test func aTransferThatSendsNothingIsCutOnceTheWindowHasPassed() {
        let cut = Self.firstCut(Self.everySecond(120) { _ in 0 }, limit: 1024, window: 60_000)
        #expect(cut?.at == 60_000)
        #expect(cut?.received == 0)
    }

    @Test func aSteadyTransferAtTheLimitIsNeverCut() {
        #expect(Self.firstCut(Self.everySecond(600) { Int64($0) * 1024 }, limit: 1024, window: 60_000) == nil)
    }

    @Test func aSteadyTransferJustUnderTheLimitIsCutAfterOneWindow() {
        let cut = Self.firstCut(Self.everySecond(600) { Int64($0) * 1023 }, limit: 1024, window: 60_000)
        #expect(cut?.at == 60_000)
    }

    /// A burst, then a byte a second (a server holding the update): the burst counts for one
    /// window only; the transfer is cut about one window after the burst, not never.
    @Test func aBurstThenATrickleIsCutAboutOneWindowAfterTheBurst() {
        let arrivals = Self.everySecond(600) { second in second == 0 ? 0 : 1_000_000 + Int64(second) }
        let cut = Self.firstCut(arrivals, limit: 1024, window: 60_000)
        let at = try? #require(cut?.at)
        #expect(at.map { $0 > 60_000 && $0 <= 60_000 + 60_000 / 32 + 2000 } == true, "cut at \(String(describing: at)) ms")
        #expect(cut.map { $0.received < 1024 * 60 } == true)
    }

    /// A stall of half a minute (a tunnel), then the rate catches up: not cut.
    @Test func aStallWithinTheWindowThatCatchesUpIsNotCut() {
        let arrivals = Self.everySecond(300) { second -> Int64 in
            switch second {
            case ..<100: Int64(second) * 4096
            case 100..<130: 100 * 4096
            default: 100 * 4096 + Int64(second - 130) * 4096
            }
        }
        #expect(Self.firstCut(arrivals, limit: 1024, window: 60_000) == nil)
    }

    @Test func aLimitOfZeroTurnsTheCheckOff() {
        #expect(Self.firstCut(Self.everySecond(600) { _ in 0 }, limit: 0, window: 60_000) == nil)
    }

    /// Checks many times a second (libcurl calls on every piece) keep at most a bounded number of samples.
    @Test func manyChecksASecondAreAveragedOverTheWindow() {
        let arrivals: Arrivals = (0...20_000).map { ($0 * 10, Int64($0) * 20) }  // 2000 bytes a second, checked every 10 ms
        #expect(Self.firstCut(arrivals, limit: 1000, window: 2000) == nil)
        #expect(Self.firstCut(arrivals, limit: 3000, window: 2000)?.at == 2000)
    }

    @Test func theSentenceSaysTheRateAndTheWindow() {
        let rate = HTTPTransfer.RateWindow(HTTPTransfer.MinimumRate(bytesPerSecond: 1000, window: .seconds(2)))
        let message = rate.message(HTTPTransfer.RateWindow.Shortfall(received: 3, span: .milliseconds(2100)))
        #expect(message == "the server sent 3 bytes in 2.1 seconds, under the minimum of 1000 bytes a second averaged over 2 seconds (too slow)")
        // A window of centuries is written, not trapped on.
        #expect(HTTPTransfer.RateWindow.seconds(.seconds(Int64.max)).hasSuffix("e+18"))
    }
}
