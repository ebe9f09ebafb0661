// snippet.hide
// AdoptingInAnAppThatShipsADatabase.md, "Declare the user's tables".
import Foundation
import GRDB
import Reseed

let appSupport = URL(fileURLWithPath: "Library/Application Support")
let bundledSeed = URL(fileURLWithPath: "SeedData")
var migrator = DatabaseMigrator()
migrator.registerMigration("favorites and notes") { db in
    try db.execute(sql: "CREATE TABLE IF NOT EXISTS favorite (item_id INTEGER)")
    try db.execute(sql: "CREATE TABLE IF NOT EXISTS note (text TEXT)")
}
// snippet.show
var configuration = Launcher.Configuration()
configuration.userStore = Launcher.UserStore(
    name: "App-user", migrator: migrator,
    userTables: ["favorite", "note"],
    references: [try SeedReference("favorite.item_id", to: "item.id")])
let (database, outcome) = try Launcher(seed: bundledSeed, dataDirectory: appSupport,
                                       configuration: configuration).launch()
// snippet.hide
print(database.path, outcome.action)
