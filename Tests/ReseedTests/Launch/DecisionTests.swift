@testable import Reseed
import Testing

/// Step 2 of an install as a table: what the preferences record and what the store file is,
/// and what the launcher, the install of a download and `reseed status` then do.
@Suite struct DecisionTests {
    /// One row: the facts read before deciding, and the decision they lead to.
    struct Case: Sendable, CustomTestStringConvertible {
        var label: String
        var source: SeedSource = .bundle
        var version = "2.0.0"
        var recorded: Decision.Recorded?
        var store: Decision.StoreState
        var embedded: SeedMetadata?
        var movedAside = false
        var forcing: LaunchOutcome.Reason?
        var holdsUserTables = false
        var expected: Decision

        var testDescription: String { label }

        func decide() -> Decision {
            Decision.decide(.init(name: "items", version: version, source: source, recorded: recorded, store: store,
                                  embedded: embedded, preferencesMovedAside: movedAside, forcing: forcing,
                                  storeHoldsUserTables: holdsUserTables))
        }
    }

    static func bundle(_ version: String) -> Decision.Recorded { Decision.Recorded(version: version, source: .bundle) }
    static func download(_ version: String) -> Decision.Recorded { Decision.Recorded(version: version, source: .download) }
    static func metadata(_ version: String, name: String = "items") -> SeedMetadata {
        SeedMetadata(name: name, version: version, steps: [])
    }

    static let cases: [Case] = [
        // A user store is configured and the store file still holds the user's tables: replace it, whatever the version.
        Case(label: "user tables in an up-to-date store", recorded: bundle("2.0.0"), store: .sqlite, holdsUserTables: true,
             expected: .install(reason: .userDataMoved, previousVersion: "2.0.0")),
        Case(label: "user tables in a kept download", recorded: download("3.0.0"), store: .sqlite, holdsUserTables: true,
             expected: .install(reason: .userDataMoved, previousVersion: "3.0.0")),
        Case(label: "user tables, nothing recorded: the embedded version is the previous one", store: .sqlite,
             embedded: metadata("1.0.0"), holdsUserTables: true, expected: .install(reason: .userDataMoved, previousVersion: "1.0.0")),
        Case(label: "forced wins over user tables", recorded: bundle("2.0.0"), store: .sqlite, forcing: .storeInvalid,
             holdsUserTables: true, expected: .install(reason: .storeInvalid, previousVersion: "2.0.0")),
        // Forced: the store looked up to date but failed to open.
        Case(label: "forced over an up-to-date store", recorded: bundle("2.0.0"), store: .sqlite, forcing: .storeInvalid,
             expected: .install(reason: .storeInvalid, previousVersion: "2.0.0")),
        Case(label: "forced over a kept download", recorded: download("3.0.0"), store: .sqlite, forcing: .storeInvalid,
             expected: .install(reason: .storeInvalid, previousVersion: "3.0.0")),
        Case(label: "forced with nothing recorded ignores the embedded version", store: .sqlite, embedded: metadata("2.0.0"),
             forcing: .storeInvalid, expected: .install(reason: .storeInvalid, previousVersion: nil)),

        // Recorded, offered from the bundle.
        Case(label: "recorded version is the shipped one", recorded: bundle("2.0.0"), store: .sqlite, expected: .upToDate),
        Case(label: "recorded download is the shipped version", recorded: download("2.0.0"), store: .sqlite, expected: .upToDate),
        Case(label: "recorded but the store is gone", recorded: bundle("2.0.0"), store: .missing,
             expected: .install(reason: .storeMissing, previousVersion: "2.0.0")),
        Case(label: "recorded but the store is not SQLite", recorded: bundle("2.0.0"), store: .notSQLite,
             expected: .install(reason: .storeInvalid, previousVersion: "2.0.0")),
        Case(label: "an older bundled seed was recorded", recorded: bundle("1.0.0"), store: .sqlite,
             expected: .install(reason: .versionChanged, previousVersion: "1.0.0")),
        Case(label: "a newer bundled seed was recorded (a downgrade)", recorded: bundle("3.0.0"), store: .sqlite,
             expected: .install(reason: .versionChanged, previousVersion: "3.0.0")),
        Case(label: "a newer download stays", recorded: download("2.1.0"), store: .sqlite, expected: .keepDownloaded(version: "2.1.0")),
        Case(label: "a download the bundle equals by precedence stays", version: "2.1.0+other-build", recorded: download("2.1.0"),
             store: .sqlite, expected: .keepDownloaded(version: "2.1.0")),
        Case(label: "a download stays when the bundled version is not SemVer", version: "nightly", recorded: download("1.0.0"),
             store: .sqlite, expected: .keepDownloaded(version: "1.0.0")),
        Case(label: "a newer bundle replaces a download", recorded: download("1.9.0"), store: .sqlite,
             expected: .install(reason: .versionChanged, previousVersion: "1.9.0")),
        Case(label: "a missing download store is installed over", recorded: download("3.0.0"), store: .missing,
             expected: .install(reason: .storeMissing, previousVersion: "3.0.0")),
        Case(label: "a download store that is not SQLite is installed over", recorded: download("3.0.0"), store: .notSQLite,
             expected: .install(reason: .storeInvalid, previousVersion: "3.0.0")),

        // Nothing recorded, offered from the bundle.
        Case(label: "first launch", store: .missing, expected: .install(reason: .fresh, previousVersion: nil)),
        Case(label: "first launch after corrupt preferences", store: .missing, movedAside: true,
             expected: .install(reason: .preferencesCorrupt, previousVersion: nil)),
        Case(label: "unrecorded store that is not SQLite", store: .notSQLite, expected: .install(reason: .storeInvalid, previousVersion: nil)),
        Case(label: "store that is not SQLite after corrupt preferences", store: .notSQLite, movedAside: true,
             expected: .install(reason: .preferencesCorrupt, previousVersion: nil)),
        Case(label: "unrecorded store holding the shipped seed", store: .sqlite, embedded: metadata("2.0.0"),
             expected: .recordVersion(reason: .preferencesMissing)),
        Case(label: "store holding the shipped seed after corrupt preferences", store: .sqlite, embedded: metadata("2.0.0"),
             movedAside: true, expected: .recordVersion(reason: .preferencesCorrupt)),
        Case(label: "unrecorded store holding another version", store: .sqlite, embedded: metadata("1.0.0"),
             expected: .install(reason: .preferencesMissing, previousVersion: "1.0.0")),
        Case(label: "unrecorded store holding another version after corrupt preferences", store: .sqlite, embedded: metadata("1.0.0"),
             movedAside: true, expected: .install(reason: .preferencesCorrupt, previousVersion: "1.0.0")),
        Case(label: "unrecorded store holding a newer download (the preferences lost)", store: .sqlite, embedded: metadata("3.0.0"),
             expected: .keepDownloaded(version: "3.0.0")),
        Case(label: "unrecorded store holding another store's seed", store: .sqlite, embedded: metadata("2.0.0", name: "other"),
             expected: .install(reason: .preferencesMissing, previousVersion: "2.0.0")),
        Case(label: "unrecorded database without seed metadata", store: .sqlite,
             expected: .install(reason: .preferencesMissing, previousVersion: nil)),

        // Offered from a download (the updater already refused a downgrade it does not allow).
        Case(label: "download of the recorded version", source: .download, recorded: download("2.0.0"), store: .sqlite, expected: .upToDate),
        Case(label: "download over the recorded bundled seed", source: .download, recorded: bundle("1.0.0"), store: .sqlite,
             expected: .install(reason: .versionChanged, previousVersion: "1.0.0")),
        Case(label: "download older than a recorded download (an allowed downgrade)", source: .download, recorded: download("3.0.0"),
             store: .sqlite, expected: .install(reason: .versionChanged, previousVersion: "3.0.0")),
        Case(label: "download with the store gone", source: .download, recorded: bundle("1.0.0"), store: .missing,
             expected: .install(reason: .storeMissing, previousVersion: "1.0.0")),
        Case(label: "download on a first launch", source: .download, store: .missing, expected: .install(reason: .fresh, previousVersion: nil)),
        Case(label: "download never trusts the store's embedded version", source: .download, store: .sqlite, embedded: metadata("2.0.0"),
             expected: .install(reason: .preferencesMissing, previousVersion: nil)),
    ]

    @Test(arguments: cases)
    func decidesAsTheTableSays(_ row: Case) {
        #expect(row.decide() == row.expected)
    }

    @Test func onlyTheUpToDateAndKeptDownloadDecisionsWriteNothing() {
        #expect(Decision.upToDate.writesNothing)
        #expect(Decision.keepDownloaded(version: "2.1.0").writesNothing)
        #expect(!Decision.recordVersion(reason: .preferencesMissing).writesNothing)
        #expect(!Decision.install(reason: .fresh, previousVersion: nil).writesNothing)
    }

    /// Every combination of the facts: where the launcher does not open the store to read its
    /// embedded version, the decision must not depend on it.
    @Test func theEmbeddedVersionIsReadOnlyWhereItDecides() {
        let recordings: [Decision.Recorded?] = [nil, Self.bundle("2.0.0"), Self.bundle("1.0.0"), Self.download("3.0.0"), Self.download("1.0.0")]
        let embeddings: [SeedMetadata?] = [nil, Self.metadata("2.0.0"), Self.metadata("1.0.0"), Self.metadata("2.0.0", name: "other")]
        var looked = 0
        for source in SeedSource.allCases {
            for recorded in recordings {
                for store in [Decision.StoreState.missing, .notSQLite, .sqlite] {
                    for forcing in [nil, LaunchOutcome.Reason.storeInvalid] {
                        for movedAside in [false, true] {
                            let found = Decision.Found(name: "items", version: "2.0.0", source: source, recorded: recorded, store: store,
                                                       preferencesMovedAside: movedAside, forcing: forcing)
                            let decisions = Set(embeddings.map { embedded in
                                var withEmbedded = found
                                withEmbedded.embedded = embedded
                                return Decision.decide(withEmbedded)
                            })
                            let looks = found.looksAtEmbeddedMetadata
                            let expected = source == .bundle && recorded == nil && store == .sqlite && forcing == nil
                            #expect(looks == expected, "\(source) \(String(describing: recorded)) \(store) \(String(describing: forcing))")
                            if looks {
                                looked += 1
                                #expect(decisions.count > 1)
                            } else {
                                #expect(decisions.count == 1, "\(source) \(String(describing: recorded)) \(store) \(String(describing: forcing)): \(decisions)")
                            }
                        }
                    }
                }
            }
        }
        #expect(looked == 2)
    }
}
