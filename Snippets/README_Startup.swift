// snippet.hide
// README.md, "At app startup". The README's block is this file's visible part (DocumentationSnippetTests).
enum StartupError: Error {
    case seedMissing
}

func log(_ message: String) { print(message) }   // the app's own logging
// snippet.show
import Foundation
import GRDB
import Reseed

// The app's own rows live in a user store that no seed update touches (GRDB's migrator shapes it).
var migrator = DatabaseMigrator()
migrator.registerMigration("incidents") { db in
    try db.execute(sql: "CREATE TABLE IF NOT EXISTS incident (id INTEGER PRIMARY KEY, category_id INTEGER, note TEXT)")
}
var configuration = Launcher.Configuration()
configuration.userStore = Launcher.UserStore(
    name: "triage-user", migrator: migrator,
    userTables: ["incident"],   // carried out of the single-file store of earlier releases, once
    references: [try SeedReference("incident.category_id", to: "injury_category.id")])

// The seed: a folder with one *.manifest.json, in the app's bundle.
guard let seed = Bundle.main.url(forResource: "SeedData", withExtension: nil) else {
    throw StartupError.seedMissing   // the app's own error
}
let appSupport = try FileManager.default.url(for: .applicationSupportDirectory, in: .userDomainMask,
                                              appropriateFor: nil, create: true)
let launcher = Launcher(seed: seed, dataDirectory: appSupport, configuration: configuration)
let (database, outcome) = try launcher.launch()   // a GRDB DatabasePool: the user store, the seed attached read-only
if outcome.action == .installed, let reason = outcome.reason {
    log("installed \(outcome.version) (\(reason), was \(outcome.previousVersion ?? "none")); orphans: \(outcome.orphans)")
}
let incidents = try database.read { db in   // unqualified names find user tables first, then seed tables
    try Row.fetchAll(db, sql: "SELECT incident.note, injury_category.name FROM incident JOIN injury_category ON injury_category.id = incident.category_id")
}
// snippet.hide
log("\(incidents.count) incidents")
