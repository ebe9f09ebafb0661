import Foundation
import GRDB
import Reseed
import ReseedSystem

/// What a launch did and what the store holds afterwards, in plain values any test framework can assert on.
public struct LaunchReport: Sendable {
    /// The launcher's outcome.
    public var outcome: LaunchOutcome
    /// The version the preferences record after the launch.
    public var recordedVersion: String?
    /// The version the store itself says it holds (its metadata table), nil for a store without one.
    public var embeddedVersion: String?
    /// Every table of the store (Reseed's own metadata tables excluded) with its row count.
    public var rowCounts: [String: Int]
    /// `PRAGMA integrity_check`, "ok" when sound.
    public var integrity: String

    /// True when the launch left a sound store at the shipped version, recorded as such.
    public var isConsistent: Bool {
        integrity == "ok" && recordedVersion == outcome.version && embeddedVersion == outcome.version
    }

    init(outcome: LaunchOutcome, store: some DatabaseReader, preferences: PreferencesFile) throws {
        self.outcome = outcome
        self.recordedVersion = try preferences.recordedVersion(of: outcome.name)
        (embeddedVersion, rowCounts, integrity) = try store.read { db in
            let tables = try String.fetchAll(db, sql: """
                SELECT name FROM sqlite_master WHERE type = 'table'
                AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'reseed_%' ORDER BY name
                """)
            var counts: [String: Int] = [:]
            for table in tables {
                counts[table] = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table.quotedIdentifier)")
            }
            let integrity = try String.fetchAll(db, sql: "PRAGMA integrity_check").joined(separator: "; ")
            return (try SeedMetadata.read(db)?.version, counts, integrity)
        }
    }
}
