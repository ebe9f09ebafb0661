// snippet.hide
// GettingStarted.md, "Configure".
import Foundation
import Logging
import Reseed

let seedFolder = URL(fileURLWithPath: "SeedData")
let dataFolder = URL(fileURLWithPath: "data")
// snippet.show
var configuration = Launcher.Configuration()
configuration.verification = .checksum        // full SHA-256 while copying
configuration.busyTimeout = .seconds(2)       // wait for other connections to close the old store
configuration.logger = Logger(label: "com.example.reseed")
configuration.progress = { progress in print("\(progress.step): \(progress.completed) of \(progress.total)") }
let launcher = Launcher(seed: seedFolder, dataDirectory: dataFolder, configuration: configuration)
// snippet.hide
print(launcher.preferencesURL)
