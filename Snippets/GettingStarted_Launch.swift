// snippet.hide
// GettingStarted.md, "Launch at startup".
enum StartupError: Error {
    case seedMissing
}
// snippet.show
import Foundation
import Reseed

guard let seed = Bundle.main.url(forResource: "SeedData", withExtension: nil) else {
    throw StartupError.seedMissing   // the SeedData folder is not in the app's bundle
}
let appSupport = try FileManager.default.url(for: .applicationSupportDirectory, in: .userDomainMask,
                                              appropriateFor: nil, create: true)
let launcher = Launcher(seed: seed, dataDirectory: appSupport)
let (database, outcome) = try launcher.launch()
// snippet.hide
print(database.path, outcome.action)
