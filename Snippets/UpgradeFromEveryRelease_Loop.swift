// snippet.hide
// UpgradeFromEveryRelease.md, "Loop over them": what an app's test target writes.
import Foundation
import Reseed

// @main: a file of declarations, as a test file is, so these are plain (nonisolated) globals.
@main enum Snippet { static func main() {} }

let releasesFolder = URL(fileURLWithPath: "Tests/AppTests/Releases")
let bundledSeedFolder = URL(fileURLWithPath: "SeedData")
let migrationsFolder = URL(fileURLWithPath: "Migrations")
let appLauncherConfiguration = Launcher.Configuration()
// snippet.show
import ReseedTesting
import Testing

@Test(arguments: try SeedCheck.releases(in: releasesFolder))
func upgradeFromEveryRelease(release: Seed) throws {
    let sandbox = try ReseedSandbox(seed: bundledSeedFolder, configuration: appLauncherConfiguration)
    try sandbox.recreateDevice(
        after: release.manifestURL,
        userWrites: ["INSERT INTO favorite (protocol_id) VALUES (1)"],
        state: .init(uncheckpointedWrites: true))       // the app was killed with rows in the WAL
    let report = try sandbox.launch()
    #expect(report.isConsistent)                        // sound, shipped version recorded and embedded
    #expect(report.outcome.previousVersion == release.manifest.version)
    #expect(report.rowCounts["injury_category"] == 8)
}

@Test func bundledSeedMatchesMigrations() throws {
    #expect(try SeedCheck.findings(seed: bundledSeedFolder, migrations: migrationsFolder).isEmpty)
}
