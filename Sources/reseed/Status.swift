import ArgumentParser
import Foundation
import Reseed

extension ReseedCommand {
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the recorded version, the store file and the shipped version, without changing anything.")

        @OptionGroup var store: StoreOptions

        @Option(help: "The store name, when no seed is given.")
        var name: String?

        @Option(name: .customLong("user-store"), help: ArgumentHelp(
            "The user store's name, to show it (default: \"userStore\" in reseed.json, without --seed).", valueName: "name"))
        var userStore: String?

        @Flag(help: "Print one JSON object on stdout.")
        var json = false

        @MainActor
        func run() async throws {
            try await reportingErrors {
                let project = try ProjectConfiguration.load()
                let dataDirectory = try store.dataDirectoryURL(project)
                let shipped: SeedManifest? = if store.seed != nil || project.output != nil { try Seed(at: store.seedURL(project)).manifest } else { nil }
                guard let storeName = name ?? shipped?.name ?? project.name else {
                    throw ValidationError("give --name or --seed")
                }
                let preferences = PreferencesFile(url: store.preferences.map(fileURL) ?? dataDirectory.appendingPathComponent(PreferencesFile.defaultFileName))
                let contents = try preferences.read()
                let recorded: String? = if case .valid(let versions) = contents { versions[storeName] } else { nil }
                let source = try preferences.recordedSource(of: storeName)
                let storeURL = dataDirectory.appendingPathComponent(storeName + ".sqlite")
                let size = (try? FileManager.default.attributesOfItem(atPath: storeURL.path)[.size] as? Int64) ?? nil
                // The launcher's decision, without opening the store: a store the preferences do not
                // record counts as one a launch installs (a launch may find it holds the shipped seed).
                let state: Decision.StoreState = if size == nil { .missing } else {
                    try .judging(storeURL.lastPathComponent, in: FileSystem().openDirectory(dataDirectory, create: false))
                }
                let matches = shipped.map { shipped in
                    Decision.decide(
                        name: shipped.name, version: shipped.version, source: .bundle,
                        recorded: recorded.map { Decision.Recorded(version: $0, source: source ?? .bundle) }, store: state
                    ).writesNothing
                }
                let preferencesState: String = switch contents {
                case .missing: "missing"
                case .valid: "valid"
                case .corrupt: "corrupt"
                case .tooLarge: "tooLarge"
                }
                // reseed.json's user store goes with its seed, as on launch.
                let user = try (userStore ?? (store.seed == nil ? project.userStore : nil)).map { name in
                    try UserStoreSummary.look(name: name, in: dataDirectory)
                }
                if json {
                    try Terminal.out(json: Report(
                        name: storeName, recordedVersion: recorded, source: source, shippedVersion: shipped?.version, upToDate: matches,
                        store: storeURL.path, storePresent: size != nil, storeSize: size, preferences: preferences.url.path,
                        preferencesState: preferencesState, userStore: user))
                    return
                }
                try Terminal.out("store:     \(storeURL.path) " + (size.map { "(\($0) bytes)" } ?? "(missing)"))
                try Terminal.out("recorded:  \(recorded ?? "none")" + (source.map { " from the \($0.rawValue)" } ?? "") + " (preferences \(preferencesState): \(preferences.url.path))")
                try Terminal.out("shipped:   \(shipped?.version ?? "unknown")")
                if let matches { try Terminal.out(matches ? "up to date" : "a launch will install the shipped seed") }
                if let user { try Terminal.out(Self.lines(user)) }
            }
        }

        /// The user store's lines of the human output.
        static func lines(_ user: UserStoreSummary) -> String {
            var text = "user store: \(user.path) " + (user.size.map { "(\($0) bytes)" } ?? "(missing)")
            if let problem = user.problem, user.present { text += "\n  unreadable: \(problem)" }
            if let tables = user.tables {
                text += "\n  tables:     " + (tables.isEmpty ? "none" : UserStoreSummary.describe(tables))
            }
            if let migrations = user.appliedMigrations {
                text += "\n  migrations: " + (migrations.isEmpty ? "none recorded" : migrations.joined(separator: ", "))
            }
            return text
        }
    }
}

extension ReseedCommand.Status {
    /// The `--json` object of `reseed status`; `upToDate` is `null` when no seed is known to compare with.
    struct Report: Encodable {
        var name: String
        @NullWhenNil var recordedVersion: String?
        @NullWhenNil var source: SeedSource?
        @NullWhenNil var shippedVersion: String?
        @NullWhenNil var upToDate: Bool?
        var store: String
        var storePresent: Bool
        @NullWhenNil var storeSize: Int64?
        var preferences: String
        var preferencesState: String
        /// The user store, from --user-store or reseed.json; null when none is configured.
        @NullWhenNil var userStore: UserStoreSummary?
    }
}
