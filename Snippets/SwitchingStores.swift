// snippet.hide
// SwitchingStores.md, "Overview".
import Foundation
import Reseed

let appSupport = URL(fileURLWithPath: "Library/Application Support")
let bundledSeed = URL(fileURLWithPath: "SeedData")
let demoSeed = URL(fileURLWithPath: "DemoSeedData")
// snippet.show
func launcher(for account: String) -> Launcher {
    Launcher(seed: bundledSeed, dataDirectory: appSupport.appending(path: "accounts/\(account)"))
}

let store = try await LiveStore(launcher: launcher(for: "alice"))
try await store.switchTo(launcher(for: "bob"))     // bob's store, installed on first use
try await store.switchTo(Launcher(seed: demoSeed, dataDirectory: appSupport.appending(path: "demo")))
try await store.switchTo(launcher(for: "alice"))   // alice's rows are all still there
