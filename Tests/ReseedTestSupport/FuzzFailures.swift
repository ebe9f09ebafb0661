/// What went wrong over many fuzz cases: every failure counts, the first few are kept for the report.
///
/// ```swift
/// var failures = FuzzFailures()
/// for _ in 0..<10_000 { failures.check(roundTrips(random.bytes()), "case \(n)") }
/// #expect(failures.count == 0, "\(failures.summary)")
/// ```
public struct FuzzFailures: Sendable {
    /// How many cases failed.
    public private(set) var count = 0
    /// The messages of the first eight failures.
    public private(set) var first: [String] = []

    public init() {}

    /// Counts a failure when `condition` is false.
    public mutating func check(_ condition: Bool, _ message: @autoclosure () -> String) {
        guard !condition else { return }
        count += 1
        if first.count < 8 { first.append(message()) }
    }

    /// The count and the first failures, one a line.
    public var summary: String { "\(count) failing case(s):\n" + first.joined(separator: "\n") }

    /// A case's bytes, readable in a failure message (the first 240, and the length).
    public static func shown(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.prefix(240), as: UTF8.self).debugDescription + (bytes.count > 240 ? "… (\(bytes.count) bytes)" : "")
    }
}
