// snippet.hide
// AdoptingALegacyStore.md, "Overview".
import Foundation
import Logging
import Reseed

let documents = URL(fileURLWithPath: "Documents")
let appSupport = URL(fileURLWithPath: "Library/Application Support")
let bundledSeed = URL(fileURLWithPath: "SeedData")
let logger = Logger(label: "com.example.app")
// snippet.show
var configuration = Launcher.Configuration()
configuration.legacyStores = [
    Launcher.LegacyStore(storeURL: documents.appending(path: "Triage.sqlite"),
                         preferencesURL: documents.appending(path: "settings.json"),
                         recordedName: "Triage"),
]
let (database, outcome) = try Launcher(seed: bundledSeed, dataDirectory: appSupport,
                                       configuration: configuration).launch()
if let from = outcome.adoptedFrom { logger.info("moved the store from \(from.path)") }
// snippet.hide
print(database.path)
