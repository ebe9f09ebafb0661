// snippet.hide
// ReplacingWhileOpen.md, "Overview": open the store through a LiveStore.
import Foundation
import GRDB
import Reseed

let appSupport = URL(fileURLWithPath: "Library/Application Support")
let bundledSeed = URL(fileURLWithPath: "SeedData")
// snippet.show
let store = try await LiveStore(launcher: Launcher(seed: bundledSeed, dataDirectory: appSupport))

// Anywhere, from any task:
let categories = try await store.read { db in
    try String.fetchAll(db, sql: "SELECT name FROM injury_category ORDER BY name")
}
// snippet.hide
print(categories)
