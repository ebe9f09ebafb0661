// snippet.hide
// UpgradeFromEveryRelease.md, "A bad seed": the body of a test in an app's test target.
import Foundation
import Reseed
import ReseedTesting
import Testing

// @main: a file of declarations, as a test file is, so these are plain (nonisolated) globals.
@main enum Snippet { static func main() {} }

let appLauncherConfiguration = Launcher.Configuration()
let damagedSeedFolder = URL(fileURLWithPath: "DamagedSeedData")

@Test func damagedSeedIsRefused() throws {
    let lastRelease = try Seed(at: URL(fileURLWithPath: "Tests/AppTests/Releases/2.0.0/triage.manifest.json"))
    // snippet.show
    var configuration = appLauncherConfiguration
    configuration.verification = .checksum
    let sandbox = try ReseedSandbox(seed: damagedSeedFolder, configuration: configuration)
    try sandbox.recreateDevice(after: lastRelease.manifestURL)
    #expect(throws: ReseedError.self) { try sandbox.launch() }
    // snippet.hide
}
