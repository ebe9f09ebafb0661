import ArgumentParser
import Foundation
import GRDB
import Reseed

/// Where the seed and the data directory are: flags, else reseed.json.
struct StoreOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The seed: its manifest, or a folder holding one.", valueName: "path"))
    var seed: String?

    @Option(name: .customLong("data-dir"), help: ArgumentHelp("The folder of the live store.", valueName: "dir"))
    var dataDirectory: String?

    @Option(help: ArgumentHelp("The preferences JSON file (default <data-dir>/preferences.json).", valueName: "file"))
    var preferences: String?

    func seedURL(_ project: ProjectConfiguration) throws -> URL {
        if let seed { return fileURL(seed) }
        if let output = project.output { return output }
        throw ValidationError("give --seed (no \(ProjectConfiguration.fileName) with \"output\" in the current folder)")
    }

    func dataDirectoryURL(_ project: ProjectConfiguration) throws -> URL {
        if let dataDirectory { return fileURL(dataDirectory) }
        if let folder = project.dataDirectory { return folder }
        throw ValidationError("give --data-dir (no \(ProjectConfiguration.fileName) with \"dataDirectory\" in the current folder)")
    }
}

extension ReseedCommand {
    struct Launch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Install the bundled seed into the data directory when its version changed, then open the store.",
            discussion: """
                With no --seed/--data-dir, uses reseed.json in the current folder: in this repository the example \
                seed in SeedData/ and the local data folder .reseed-data/. Exits 0 only when the store is open at \
                the shipped version.
                """)

        @OptionGroup var store: StoreOptions

        @OptionGroup var user: UserStoreOptions

        @Option(help: "How a copied seed is checked: size (O(1) checks) or checksum (adds the full SHA-256).")
        var verify: Verification = .size

        @Option(name: .customLong("lock-timeout"), help: ArgumentHelp("Seconds to wait for another launcher.", valueName: "seconds"))
        var lockTimeout: Double = 60

        @Option(name: .customLong("busy-timeout"), help: ArgumentHelp("Seconds to wait for others to close the old store.", valueName: "seconds"))
        var busyTimeout: Double = 5

        @Option(name: .customLong("legacy-store"), help: ArgumentHelp(
            "An earlier location of the store, adopted when the store is missing (repeatable).", valueName: "file"))
        var legacyStores: [String] = []

        @Flag(help: "Print one JSON object on stdout.")
        var json = false

        @OptionGroup var logging: LoggingOptions

        func validate() throws {
            _ = try duration(lockTimeout, of: "--lock-timeout")
            _ = try duration(busyTimeout, of: "--busy-timeout")
        }

        @MainActor
        func run() async throws {
            try await reportingErrors {
                let project = try ProjectConfiguration.load()
                var configuration = Launcher.Configuration()
                configuration.verification = verify
                configuration.lockTimeout = try duration(lockTimeout, of: "--lock-timeout")
                configuration.busyTimeout = try duration(busyTimeout, of: "--busy-timeout")
                configuration.preferencesURL = store.preferences.map(fileURL)
                configuration.logger = logging.logger("reseed")
                configuration.legacyStores = legacyStores.map { Launcher.LegacyStore(storeURL: fileURL($0)) }
                configuration.userStore = try user.userStore(project, store: store)
                let launcher = Launcher(seed: try store.seedURL(project), dataDirectory: try store.dataDirectoryURL(project), configuration: configuration)
                let (database, outcome) = try launcher.launch()
                do {
                    // Exit 0 means the store is open and readable at the shipped version.
                    try database.read { db in _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") }
                    try database.close()
                } catch let error as DatabaseError {
                    throw ReseedError(.database, step: .open, path: outcome.storeURL.path, databaseError: error,
                                      message: "the store opened but cannot be read")
                }
                if json {
                    try Terminal.out(json: Report(outcome))
                } else {
                    try Terminal.out(Self.sentence(outcome))
                    if let line = Self.userStoreLine(outcome) { try Terminal.out(line) }
                }
            }
        }

        static func sentence(_ outcome: LaunchOutcome) -> String {
            var text: String
            switch outcome.action {
            case .upToDate:
                text = "\(outcome.name) is up to date at \(outcome.version)" + (outcome.source == .download ? " (downloaded)" : "")
            case .repaired:
                text = "\(outcome.name) \(outcome.version) was already installed; its version is recorded again (\(outcome.reason?.rawValue ?? ""))"
            case .installed:
                text = "Installed \(outcome.name) \(outcome.version)"
                if let previous = outcome.previousVersion {
                    text += " over \(previous)" + (outcome.change.map { " (\($0.rawValue))" } ?? "")
                }
                text += " (reason: \(outcome.reason?.rawValue ?? "unknown"))"
            }
            text += " at \(outcome.storeURL.path)."
            if let aside = outcome.preferencesMovedAside { text += " The corrupt preferences file was kept at \(aside.path)." }
            if let aside = outcome.storeKeptAside { text += " The unusable old store was kept at \(aside.path)." }
            if let legacy = outcome.adoptedFrom { text += " The store was adopted from \(legacy.path)." }
            for legacy in outcome.legacyStoresLeftInPlace { text += " A legacy store was left in place at \(legacy.path)." }
            return text
        }

        /// The user store's line of the human output: its file, what this launch did to it, and
        /// the references left pointing at keys the seed no longer has; nil without a user store.
        static func userStoreLine(_ outcome: LaunchOutcome) -> String? {
            guard let url = outcome.userStoreURL else { return nil }
            var text = "User store at \(url.path)"
            if outcome.importedTables.isEmpty {
                text += ", no tables imported"
            } else {
                text += ", imported \(UserStoreSummary.describe(outcome.importedTables))"
            }
            if !outcome.missingUserTables.isEmpty {
                text += "; not in the old store: \(outcome.missingUserTables.joined(separator: ", "))"
            }
            if !outcome.strandedTables.isEmpty {
                text += "; left in the old store, kept at \(outcome.storeKeptAside?.path ?? "its place"): \(outcome.strandedTables.joined(separator: ", "))"
            }
            if !outcome.appliedMigrations.isEmpty {
                text += "; applied \(outcome.appliedMigrations.joined(separator: ", "))"
            }
            text += "."
            if let aside = outcome.userStoreKeptAside { text += " The user store that was not a database was kept at \(aside.path)." }
            let orphans = outcome.orphans.filter { $0.value > 0 }.sorted { $0.key < $1.key }
            if !orphans.isEmpty {
                text += " Rows pointing at keys the seed no longer has: "
                    + orphans.map { "\($0.value) by \($0.key)" }.joined(separator: ", ") + "."
            }
            return text
        }
    }
}

extension ReseedCommand.Launch {
    /// The `--json` object of `reseed launch`: the ``LaunchOutcome``, with paths for URLs.
    struct Report: Encodable {
        var outcome: LaunchOutcome.Action
        @NullWhenNil var reason: LaunchOutcome.Reason?
        var name: String
        var version: String
        var source: SeedSource
        @NullWhenNil var previousVersion: String?
        @NullWhenNil var change: SeedVersion.Change?
        var store: String
        @NullWhenNil var verification: Verification?
        @NullWhenNil var preferencesMovedAside: String?
        @NullWhenNil var storeKeptAside: String?
        var removedLeftovers: [String]
        @NullWhenNil var adoptedFrom: String?
        var legacyStoresLeftInPlace: [String]
        @NullWhenNil var userStore: String?
        var importedTables: [String: Int]
        var missingUserTables: [String]
        /// The user's tables left in the old store, kept aside whole at `storeKeptAside`.
        var strandedTables: [String]
        var appliedMigrations: [String]
        @NullWhenNil var userStoreKeptAside: String?
        var orphans: [String: Int]

        init(_ launch: LaunchOutcome) {
            outcome = launch.action
            reason = launch.reason
            name = launch.name
            version = launch.version
            source = launch.source
            previousVersion = launch.previousVersion
            change = launch.change
            store = launch.storeURL.path
            verification = launch.verification
            preferencesMovedAside = launch.preferencesMovedAside?.path
            storeKeptAside = launch.storeKeptAside?.path
            removedLeftovers = launch.removedLeftovers
            adoptedFrom = launch.adoptedFrom?.path
            legacyStoresLeftInPlace = launch.legacyStoresLeftInPlace.map(\.path)
            userStore = launch.userStoreURL?.path
            importedTables = launch.importedTables
            missingUserTables = launch.missingUserTables
            strandedTables = launch.strandedTables
            appliedMigrations = launch.appliedMigrations
            userStoreKeptAside = launch.userStoreKeptAside?.path
            orphans = launch.orphans
        }
    }
}

extension Verification: ExpressibleByArgument {}
