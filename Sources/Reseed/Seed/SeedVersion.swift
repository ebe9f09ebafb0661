/// A seed version: any non-empty string, ordered when it follows the one version grammar Reseed knows.
///
/// The grammar, used by `reseed package`, `launch`, `publish` and `update` alike:
/// - **SemVer 2.0**: `2.1.0`, `2.1.0-rc.1`, `2.1.0+build.7`;
/// - **dotted numbers**: one or more numbers separated by dots, as calendar versions are
///   written: `2024.1`, `2024.07.2`, `42`.
///
/// Both read as a list of numbers, compared number by number, a missing number counting as 0:
/// `2024.1` equals `2024.1.0`, `2024.07.2` equals `2024.7.2` (a leading zero is only a digit),
/// `1.2.3.4` is newer than `1.2.3`, and `2024.10` is newer than `2024.9`. Then, as SemVer §11
/// says, a pre-release comes before its release (`2024.1.0-rc.1` is older than `2024.1`), and
/// build metadata does not count. Two versions of equal precedence (`2024.1` and `2024.1.0`)
/// are neither newer nor older. A version outside the grammar (`banana`, `2026-spring`) has no
/// order: it is never newer, and `reseed package` refuses it.
///
/// The launcher installs a bundled seed over another bundled one on *any*
/// difference (the bundle is the truth), and there the order only says
/// whether a change was an upgrade or a downgrade. Against a downloaded seed,
/// and for what a channel offers, the order decides (``isNewer(than:)``).
///
/// ```swift
/// SeedVersion("2.0.0").change(from: SeedVersion("1.4.2")) // .upgrade
/// SeedVersion("2024.2").isNewer(than: SeedVersion("2024.1")) // true
/// ```
public struct SeedVersion: Sendable, Hashable, CustomStringConvertible {
    public let text: String
    /// The version's place in the order; nil when `text` is outside the grammar.
    let precedence: Precedence?

    /// The grammar in words, for messages that refuse a version outside it.
    public static let grammar = "SemVer 2.0 (such as 2.1.0 or 2.1.0-rc.1) or dotted numbers (such as 2024.1 or 2024.07.2)"

    /// What orders a version: its numbers, then its pre-release identifiers (build metadata never counts).
    struct Precedence: Sendable, Comparable {
        var numbers: [UInt64]
        var prerelease: [String]

        /// Equal precedence, which is not equal text: `2024.1` and `2024.1.0`.
        static func == (lhs: Precedence, rhs: Precedence) -> Bool {
            !(lhs < rhs) && !(rhs < lhs)
        }

        /// Number by number, a missing one counting as 0; then SemVer 2.0 §11 for pre-releases.
        static func < (lhs: Precedence, rhs: Precedence) -> Bool {
            for index in 0..<max(lhs.numbers.count, rhs.numbers.count) {
                let left = index < lhs.numbers.count ? lhs.numbers[index] : 0
                let right = index < rhs.numbers.count ? rhs.numbers[index] : 0
                if left != right { return left < right }
            }
            switch (lhs.prerelease.isEmpty, rhs.prerelease.isEmpty) {
            case (true, true), (true, false): return false
            case (false, true): return true
            case (false, false): break
            }
            for (left, right) in zip(lhs.prerelease, rhs.prerelease) where left != right {
                switch (UInt64(left), UInt64(right)) {
                case let (l?, r?): return l < r
                case (_?, nil): return true
                case (nil, _?): return false
                case (nil, nil): return left < right
                }
            }
            return lhs.prerelease.count < rhs.prerelease.count
        }
    }

    /// Whether going from one version to another raised or lowered it.
    public enum Change: String, Sendable, Hashable, Codable {
        case upgrade, downgrade
    }

    public init(_ text: String) {
        self.text = text
        self.precedence = Self.semantic(text) ?? Self.dottedNumbers(text)
    }

    public var description: String { text }

    /// True when `text` follows the grammar (``grammar``), so that it can be ordered.
    public var isOrdered: Bool { precedence != nil }

    public static func == (lhs: SeedVersion, rhs: SeedVersion) -> Bool { lhs.text == rhs.text }

    public func hash(into hasher: inout Hasher) { hasher.combine(text) }

    /// True when both versions follow the grammar and this one has the higher precedence.
    ///
    /// The rule for seeds from two sources: a bundled seed replaces a downloaded one only
    /// when `bundled.isNewer(than: downloaded)`; a channel's seed is installed only when
    /// `offered.isNewer(than: installed)`; `reseed publish` refuses a seed that is not newer
    /// than the channel's. A version outside the grammar is never newer.
    ///
    /// ```swift
    /// SeedVersion("2.1.0").isNewer(than: SeedVersion("2.1.0-beta.2")) // true
    /// SeedVersion("2.1.0").isNewer(than: SeedVersion("2.1.0+build.7")) // false: build metadata does not count
    /// SeedVersion("2024.10").isNewer(than: SeedVersion("2024.9")) // true: numbers, not text
    /// ```
    public func isNewer(than other: SeedVersion) -> Bool {
        change(from: other) == .upgrade
    }

    /// `.upgrade` or `.downgrade` when both versions follow the grammar and their precedence differs; nil otherwise.
    public func change(from previous: SeedVersion) -> Change? {
        guard let new = precedence, let old = previous.precedence else { return nil }
        if old < new { return .upgrade }
        if new < old { return .downgrade }
        return nil
    }

    /// The SemVer 2.0 reading of `text`, when it is one.
    private static func semantic(_ text: String) -> Precedence? {
        var rest = Substring(text)
        if let plus = rest.firstIndex(of: "+") {
            let build = rest[rest.index(after: plus)...].split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            rest = rest[..<plus]
            guard build.allSatisfy(isIdentifier) else { return nil }
        }
        var prerelease: [String] = []
        if let dash = rest.firstIndex(of: "-") {
            prerelease = rest[rest.index(after: dash)...].split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            rest = rest[..<dash]
            guard prerelease.allSatisfy({ isIdentifier($0) && !hasLeadingZero($0) }) else { return nil }
        }
        let core = rest.split(separator: ".", omittingEmptySubsequences: false)
        guard core.count == 3, core.allSatisfy({ !hasLeadingZero(String($0)) }), let numbers = numbers(core) else { return nil }
        return Precedence(numbers: numbers, prerelease: prerelease)
    }

    /// The dotted-numbers reading of `text` (`2024.07.2`), when it is one.
    private static func dottedNumbers(_ text: String) -> Precedence? {
        numbers(text.split(separator: ".", omittingEmptySubsequences: false)).map { Precedence(numbers: $0, prerelease: []) }
    }

    /// The values of `parts` when each is a run of ASCII digits that fits 64 bits.
    private static func numbers(_ parts: [Substring]) -> [UInt64]? {
        var values: [UInt64] = []
        for part in parts {
            guard !part.isEmpty, part.allSatisfy(\.isASCIIDigit), let value = UInt64(part) else { return nil }
            values.append(value)
        }
        return values
    }

    private static func isIdentifier(_ part: String) -> Bool {
        !part.isEmpty && part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
    }

    /// A numeric identifier with a leading zero ("01") is not SemVer.
    private static func hasLeadingZero(_ part: String) -> Bool {
        part.count > 1 && part.first == "0" && part.allSatisfy(\.isASCIIDigit)
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
