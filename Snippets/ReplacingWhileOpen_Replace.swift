// snippet.hide
// ReplacingWhileOpen.md, "Overview": replace the store with a downloaded seed.
import Foundation
import Logging
import Reseed

let store = try await LiveStore(launcher: Launcher(seed: URL(fileURLWithPath: "SeedData"), dataDirectory: URL(fileURLWithPath: "data")))
let downloadedManifestURL = URL(fileURLWithPath: "Downloads/triage.manifest.json")
let logger = Logger(label: "com.example.app")
// snippet.show
let outcome = try await store.replace(with: Seed(at: downloadedManifestURL))
logger.info("seed \(outcome.version); access was held for \(outcome.blockedFor)")
