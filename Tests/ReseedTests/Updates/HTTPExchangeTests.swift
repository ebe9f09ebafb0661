import Foundation
@testable import Reseed
import Testing

/// The record both HTTP engines keep of a GET (``HTTPTransfer/Exchange``): when its watchdog cuts
/// the transfer, with which sentence, and what the transfer comes to. A value on elapsed time, no I/O.
@Suite struct HTTPExchangeTests {
    static let url = URL(fileURLWithPath: "/channel/channel.json")

    static func exchange(deadline: Duration? = nil, minimumRate: HTTPTransfer.MinimumRate? = nil) -> (HTTPTransfer.Exchange, ContinuousClock.Instant) {
        let start = ContinuousClock.now
        let request = HTTPTransfer.Request(url: url, headers: [:], step: .fetchManifest, timeout: .seconds(10), deadline: deadline, minimumRate: minimumRate)
        return (HTTPTransfer.Exchange(request, startedAt: start), start)
    }

    /// The watchdog's answers at `seconds` after the start, in order (`exchange.check` is mutating,
    /// which `#expect` cannot call).
    static func checks(_ exchange: inout HTTPTransfer.Exchange, from start: ContinuousClock.Instant, at seconds: [Int],
                       checkingIdle: Bool = true) -> [Bool] {
        seconds.map { exchange.check(at: start + .seconds($0), checkingIdle: checkingIdle) }
    }

    @Test func aSilentServerIsCutAfterTheIdleTimeoutWithTheSentenceOfWhereItStopped() {
        var (waiting, start) = Self.exchange()
        let unchecked = Self.checks(&waiting, from: start, at: [11], checkingIdle: false)
        #expect(unchecked == [true], "URLSession keeps the idle timeout itself")
        let checked = Self.checks(&waiting, from: start, at: [9, 11])
        #expect(checked == [true, false])
        #expect(waiting.result(engineFailure: nil).failure?.message == "no answer within 10.0 seconds (timed out)")

        var (answered, began) = Self.exchange()
        answered.answered(HTTPTransfer.Response(status: 200, headers: [:]))
        answered.heard(at: began + .seconds(5))
        let afterAnswer = Self.checks(&answered, from: began, at: [14, 16])
        #expect(afterAnswer == [true, false], "silent for 9 seconds, then 11")
        #expect(answered.result(engineFailure: nil).failure?.message == "the server sent nothing more for 10.0 seconds (timed out)")
    }

    @Test func theDeadlineCutsATransferThatKeepsMoving() {
        var (exchange, start) = Self.exchange(deadline: .seconds(60))
        exchange.answered(HTTPTransfer.Response(status: 200, headers: [:]))
        var answers: [Bool] = []
        for second in stride(from: 5, through: 65, by: 5) {
            exchange.heard(at: start + .seconds(second))
            answers += Self.checks(&exchange, from: start, at: [second])
        }
        #expect(answers == Array(repeating: true, count: 12) + [false])
        let failure = exchange.result(engineFailure: nil).failure
        #expect(failure?.code == .download)
        #expect(failure?.message == "the transfer took longer than 60.0 seconds in all (the server sends too slowly)")
        #expect(failure?.url == Self.url && failure?.step == .fetchManifest)
    }

    @Test func aBodyUnderTheMinimumRateIsCutAsTooSlow() {
        var (exchange, start) = Self.exchange(minimumRate: HTTPTransfer.MinimumRate(bytesPerSecond: 1000, window: .seconds(2)))
        exchange.answered(HTTPTransfer.Response(status: 200, headers: [:]))
        exchange.delivered(5_000)
        let answers = Self.checks(&exchange, from: start, at: [1, 3], checkingIdle: false)
        #expect(answers == [true, false], "5,000 bytes, then nothing for 2 seconds")
        let failure = exchange.result(engineFailure: nil).failure
        #expect(failure?.code == .downloadTooSlow)
        #expect(failure?.message.hasSuffix("under the minimum of 1000 bytes a second averaged over 2 seconds (too slow)") == true, "\(failure?.message ?? "")")
        #expect(exchange.bodyBytes == 5_000)
    }

    @Test func theFirstReasonStandsOverLaterOnesAndTheEngines() {
        var (exchange, start) = Self.exchange(deadline: .seconds(1))
        exchange.stop(ReseedError(.channelRefused, step: .fetchManifest, url: Self.url, message: "the channel manifest is larger than the limit"))
        exchange.cancelled = true
        let answers = Self.checks(&exchange, from: start, at: [5])
        #expect(answers == [false])
        exchange.stop("cancelled")
        let failure = exchange.result(engineFailure: "the connection broke: reset by peer").failure
        #expect(failure?.code == .channelRefused)
        #expect(failure?.message == "the channel manifest is larger than the limit")
    }

    @Test func whatTheTransferComesTo() {
        let (fresh, _) = Self.exchange()
        #expect(fresh.result(engineFailure: nil).failure?.message == "the server closed the connection without answering")
        #expect(fresh.result(engineFailure: "cannot connect: refused").failure?.message == "cannot connect: refused")
        var (answered, start) = Self.exchange()
        answered.answered(HTTPTransfer.Response(status: 304, headers: ["etag": "\"e\""]))
        #expect((try? answered.result(engineFailure: nil).get())?.status == 304)
        answered.cancelled = true
        let answers = Self.checks(&answered, from: start, at: [0], checkingIdle: false)
        #expect(answers == [false])
        #expect(answered.result(engineFailure: nil).failure?.message == "cancelled")
    }
}

extension Result {
    /// The error, when this is a failure.
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

