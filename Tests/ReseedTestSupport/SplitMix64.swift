/// A small, seeded random number generator (SplitMix64): a fixed seed gives the same cases on
/// every run and every machine, so a fuzz test that fails can be run again as it failed.
///
/// ```swift
/// var random = SplitMix64(seed: 42)
/// let length = random.int(0..<100)
/// ```
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform integer in `range`, which must not be empty: the draw `Int.random(in: range, using:)`
    /// makes (Lemire's method), written out because a debug build runs the generic one unspecialised,
    /// slowly (see `Benchmarks/README.md`, "SplitMix64 in a debug build"). The same seed gives the
    /// same cases as before.
    public mutating func int(_ range: Range<Int>) -> Int {
        precondition(!range.isEmpty, "SplitMix64.int: empty range")
        let bound = UInt64(truncatingIfNeeded: range.upperBound &- range.lowerBound)
        var product = next().multipliedFullWidth(by: bound)
        if product.low < bound {
            let threshold = (0 &- bound) % bound
            while product.low < threshold { product = next().multipliedFullWidth(by: bound) }
        }
        return Int(truncatingIfNeeded: UInt64(truncatingIfNeeded: range.lowerBound) &+ product.high)
    }

    /// True with the given probability: `Double.random(in: 0..<1, using:) < probability`, written out
    /// (53 random bits scaled by 2⁻⁵³) for the same reason as ``int(_:)``.
    public mutating func chance(_ probability: Double) -> Bool {
        Double(next() & (1 << 53 - 1)) * 0x1p-53 < probability
    }
    /// One of `items`, which must not be empty.
    public mutating func pick<T>(_ items: [T]) -> T { items[int(0..<items.count)] }
}
