/// A seed version: any non-empty string, compared as Semantic Versioning 2.0 when it parses as such.
///
/// The launcher installs a bundled seed over another bundled one on *any*
/// difference (the bundle is the truth), and there the SemVer order only says
/// whether a change was an upgrade or a downgrade. Against a downloaded seed,
/// and for what a channel offers, the order decides (``isNewer(than:)``).
///
/// ```swift
/// SeedVersion("2.0.0").change(from: SeedVersion("1.4.2")) // .upgrade
/// ```
public struct SeedVersion: Sendable, Hashable, CustomStringConvertible {
    public let text: String
    /// The SemVer reading, when `text` is one.
    let semantic: Semantic?

    /// The parts of a Semantic Versioning 2.0 version.
    struct Semantic: Sendable, Hashable, Comparable {
        var major: UInt64, minor: UInt64, patch: UInt64
        var prerelease: [String]
        var build: [String]

        /// Precedence per SemVer 2.0 §11; build metadata is ignored.
        static func < (lhs: Semantic, rhs: Semantic) -> Bool {
            if (lhs.major, lhs.minor, lhs.patch) != (rhs.major, rhs.minor, rhs.patch) {
                return (lhs.major, lhs.minor, lhs.patch) < (rhs.major, rhs.minor, rhs.patch)
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
        self.semantic = Self.parse(text)
    }

    public var description: String { text }

    /// True when both versions are SemVer and this one has the higher precedence.
    ///
    /// The rule for seeds from two sources: a bundled seed replaces a downloaded one only
    /// when `bundled.isNewer(than: downloaded)`; a channel's seed is installed only when
    /// `offered.isNewer(than: installed)`. A version that is not SemVer is never newer.
    ///
    /// ```swift
    /// SeedVersion("2.1.0").isNewer(than: SeedVersion("2.1.0-beta.2")) // true
    /// SeedVersion("2.1.0").isNewer(than: SeedVersion("2.1.0+build.7")) // false: build metadata does not count
    /// ```
    public func isNewer(than other: SeedVersion) -> Bool {
        change(from: other) == .upgrade
    }

    /// `.upgrade` or `.downgrade` when both versions are SemVer and their precedence differs; nil otherwise.
    public func change(from previous: SeedVersion) -> Change? {
        guard let new = semantic, let old = previous.semantic else { return nil }
        if old < new { return .upgrade }
        if new < old { return .downgrade }
        return nil
    }

    private static func parse(_ text: String) -> Semantic? {
        var rest = Substring(text)
        var build: [String] = []
        if let plus = rest.firstIndex(of: "+") {
            build = rest[rest.index(after: plus)...].split(separator: ".", omittingEmptySubsequences: false).map(String.init)
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
        guard core.count == 3, core.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCIIDigit) && !hasLeadingZero(String($0)) }),
              let major = UInt64(core[0]), let minor = UInt64(core[1]), let patch = UInt64(core[2])
        else { return nil }
        return Semantic(major: major, minor: minor, patch: patch, prerelease: prerelease, build: build)
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
