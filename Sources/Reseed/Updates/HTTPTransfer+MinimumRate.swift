extension HTTPTransfer {
    /// The slowest a transfer may go, averaged over a window, as curl's `--speed-limit` and
    /// `--speed-time`: a transfer that receives fewer than `bytesPerSecond` bytes a second over
    /// the last `window` is cut. The idle ``HTTPTransfer/timeout`` alone lets a server that sends
    /// a byte just inside it hold an update for days.
    struct MinimumRate: Sendable, Hashable {
        /// Bytes a second; 0 turns the check off.
        var bytesPerSecond: Int64
        /// How long the average is taken over; the check starts once the transfer is this old.
        var window: Duration
    }

    /// The body bytes of one transfer as they arrive, and whether their average over the last
    /// ``MinimumRate/window`` has fallen under the minimum.
    ///
    /// Both engines feed it (libcurl's progress call, at least once a second; the `URLSession`
    /// delegate's data and a once-a-second watchdog), so the same server is cut at the same point
    /// with the same sentence on every platform. A pure value on elapsed time, tested as a table.
    ///
    /// It keeps at most ``sampleCount`` + 2 samples whatever the window: one each window/32, the
    /// oldest being the last one at or before the window's start, so the average is taken over
    /// between one window and 33/32 of one.
    struct RateWindow: Sendable {
        /// What the average was when it fell under the minimum.
        struct Shortfall: Sendable, Hashable {
            /// Body bytes received over `span`.
            var received: Int64
            /// The time the average was taken over: at least one window.
            var span: Duration
        }

        static let sampleCount = 32

        let minimum: MinimumRate
        /// (elapsed since the transfer began, body bytes received by then), oldest first.
        private var samples: [(elapsed: Duration, total: Int64)] = [(.zero, 0)]

        init(_ minimum: MinimumRate) {
            self.minimum = minimum
        }

        /// Records that `total` body bytes had arrived `elapsed` after the transfer began; returns
        /// the shortfall when the average over the last window is under the minimum, else nil.
        mutating func record(total: Int64, after elapsed: Duration) -> Shortfall? {
            guard minimum.bytesPerSecond > 0, minimum.window > .zero else { return nil }
            if let last = samples.last, elapsed - last.elapsed >= minimum.window / Self.sampleCount {
                samples.append((elapsed, total))
            }
            let start = elapsed - minimum.window
            while samples.count > 1, samples[1].elapsed <= start { samples.removeFirst() }
            let base = samples[0]
            let span = elapsed - base.elapsed
            guard span >= minimum.window else { return nil }
            let received = total - base.total
            // received / span < bytesPerSecond, in floating point: a window of years times a rate
            // of gigabytes must not overflow.
            return Double(received) < Double(minimum.bytesPerSecond) * span.inSeconds ? Shortfall(received: received, span: span) : nil
        }

        /// The sentence of a transfer cut by `shortfall`.
        func message(_ shortfall: Shortfall) -> String {
            "the server sent \(shortfall.received) bytes in \(Self.seconds(shortfall.span)) seconds, under the minimum of \(minimum.bytesPerSecond) bytes a second averaged over \(Self.seconds(minimum.window)) seconds (too slow)"
        }

        /// `duration` in seconds, with one decimal when it is not whole.
        static func seconds(_ duration: Duration) -> String {
            let tenths = (duration.inSeconds * 10).rounded()
            // Whole seconds as an integer while one fits with room to spare (a window of centuries does).
            guard tenths.truncatingRemainder(dividingBy: 10) == 0, abs(tenths) < 1e18 else { return String(tenths / 10) }
            return String(Int64(tenths / 10))
        }
    }
}
