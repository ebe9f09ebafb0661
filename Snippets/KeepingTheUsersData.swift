// snippet.hide
// KeepingTheUsersData.md, "Overview".
import Foundation
import GRDB
import Reseed

let appSupport = URL(fileURLWithPath: "Library/Application Support")
let bundledSeed = URL(fileURLWithPath: "SeedData")
// snippet.show
var migrator = DatabaseMigrator()
migrator.registerMigration("incidents") { db in
    // Runs before the rows of an earlier single-file store are carried in: written as for a fresh install.
    try db.create(table: "incident") { t in
        t.autoIncrementedPrimaryKey("id")
        t.column("reported_at", .datetime).notNull()
        t.column("category_id", .integer)   // a key of the seed's injury_category
        t.column("note", .text)
    }
}
var configuration = Launcher.Configuration()
configuration.userStore = Launcher.UserStore(
    name: "triage-user", migrator: migrator,
    userTables: ["incident"],   // where an earlier release kept them in the single file
    references: [try SeedReference("incident.category_id", to: "injury_category.id")])
let launcher = Launcher(seed: bundledSeed, dataDirectory: appSupport, configuration: configuration)
let (database, outcome) = try launcher.launch()
let rows = try database.read { db in
    try Row.fetchAll(db, sql: """
        SELECT incident.reported_at, injury_category.name
        FROM incident JOIN injury_category ON injury_category.id = incident.category_id
        """)
}
// snippet.hide
print(outcome.action, rows.count)
