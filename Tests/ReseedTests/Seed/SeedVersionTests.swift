import Reseed
import Testing

/// The one version order of `package`, `launch`, `publish` and `update`, as a table.
@Suite struct SeedVersionTests {
    /// One row: two versions and how the second compares with the first.
    struct Case: Sendable, CustomTestStringConvertible {
        var older: String
        var newer: String
        /// nil: equal precedence, or no order at all.
        var change: SeedVersion.Change? = .upgrade

        var testDescription: String { "\(older) → \(newer)" }
    }

    static let cases: [Case] = [
        Case(older: "1.0.0", newer: "2.0.0"),
        Case(older: "5.0.0-staging.1", newer: "5.0.0"),
        Case(older: "2024.1", newer: "2024.2"),
        Case(older: "2024.9", newer: "2024.10"),
        Case(older: "2024.07.2", newer: "2024.07.10"),
        Case(older: "2024.07.2", newer: "2024.8"),
        Case(older: "2024.12.31", newer: "2025.1"),
        Case(older: "9", newer: "10"),
        Case(older: "1.2.3", newer: "1.2.3.4"),
        Case(older: "2024.1.0-rc.1", newer: "2024.1"),
        Case(older: "2.0.0", newer: "2024.1"),
        Case(older: "2024.1", newer: "2024.1.0", change: nil),
        Case(older: "2024.07.2", newer: "2024.7.2", change: nil),
        Case(older: "1.0.0+build.1", newer: "1.0.0+build.2", change: nil),
        Case(older: "2026-spring", newer: "2026-summer", change: nil),
        Case(older: "banana", newer: "2.0.0", change: nil),
        Case(older: "2.0.0", newer: "banana", change: nil),
    ]

    @Test(arguments: cases) func versionsFollowOneOrder(_ row: Case) {
        #expect(SeedVersion(row.newer).change(from: SeedVersion(row.older)) == row.change)
        let reverse: SeedVersion.Change? = switch row.change {
        case .upgrade: .downgrade
        case .downgrade: .upgrade
        case nil: nil
        }
        #expect(SeedVersion(row.older).change(from: SeedVersion(row.newer)) == reverse)
        #expect(SeedVersion(row.newer).isNewer(than: SeedVersion(row.older)) == (row.change == .upgrade))
    }

    @Test(arguments: ["1.0.0", "5.0.0-staging.1", "2.1.0+build.7", "2024.1", "2024.07.2", "42", "01.2.3"])
    func theGrammarOrdersSemVerAndDottedNumbers(_ text: String) {
        #expect(SeedVersion(text).isOrdered)
    }

    @Test(arguments: ["banana", "", "2024.", ".1", "2024..1", "v2.0.0", "2024.1-rc.1", "01.0.0-rc.1", "2026-spring", "1.0.0-", "99999999999999999999.1"])
    func theGrammarLeavesEverythingElseUnordered(_ text: String) {
        #expect(!SeedVersion(text).isOrdered)
    }
}
