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
                let storeURL = dataDirectory.appendingPathComponent(StoreLayout(store: storeName).storeFileName)
                let size = (try? FileManager.default.attributesOfItem(atPath: storeURL.path)[.size] as? Int64) ?? nil
                // The launcher's own decision, found as a launch finds it, writing nothing.
                var configuration = Launcher.Configuration()
                configuration.preferencesURL = preferences.url
                let decision = try shipped.map { _ in
                    try Launcher(seed: store.seedURL(project), dataDirectory: dataDirectory, configuration: configuration).plannedDecision()
                }
                let matches = decision?.writesNothing
                let preferencesState: String = switch contents {
                case .missing: "missing"
                case .valid: "valid"
                case .corrupt: "corrupt"
                case .tooLarge: "tooLarge"
                }
                // reseed.json's user store goes with its seed, as on launch.
                let userStoreName = userStore ?? (store.seed == nil ? project.userStore : nil)
                let user = try userStoreName.map { name in try UserStoreSummary.look(name: name, in: dataDirectory) }
                let files = StoreLayout.files(in: dataDirectory, store: storeName, userStore: userStoreName, preferences: preferences.url)
                if json {
                    try Terminal.out(json: Report(
                        name: storeName, recordedVersion: recorded, source: source, shippedVersion: shipped?.version, upToDate: matches,
                        decision: decision.map(Self.action), reason: decision.flatMap(Self.reason), files: files,
                        store: storeURL.path, storePresent: size != nil, storeSize: size, preferences: preferences.url.path,
                        preferencesState: preferencesState, userStore: user))
                    return
                }
                try Terminal.out("store:     \(storeURL.path) " + (size.map { "(\($0) bytes)" } ?? "(missing)"))
                try Terminal.out("recorded:  \(recorded ?? "none")" + (source.map { " from the \($0.rawValue)" } ?? "") + " (preferences \(preferencesState): \(preferences.url.path))")
                try Terminal.out("shipped:   \(shipped?.version ?? "unknown")")
                if let decision { try Terminal.out(Self.sentence(decision)) }
                if !files.isEmpty { try Terminal.out("files:\n" + files.map { "  " + $0.line }.joined(separator: "\n")) }
                if let user { try Terminal.out(Self.lines(user)) }
            }
        }

        static func action(_ decision: Decision) -> String {
            switch decision {
            case .upToDate: "upToDate"
            case .keepDownloaded: "keepDownloaded"
            case .recordVersion: "recordVersion"
            case .install: "install"
            }
        }

        static func reason(_ decision: Decision) -> String? {
            switch decision {
            case .upToDate, .keepDownloaded: nil
            case .recordVersion(let reason), .install(let reason, _): reason.rawValue
            }
        }

        /// The decision as the human output's line.
        static func sentence(_ decision: Decision) -> String {
            switch decision {
            case .upToDate: "up to date"
            case .keepDownloaded(let version): "up to date: a launch keeps the downloaded \(version), which the shipped seed is not newer than"
            case .recordVersion(let reason): "a launch will record the shipped version, which the store holds (\(reason.rawValue))"
            case .install(let reason, _): "a launch will install the shipped seed (\(reason.rawValue))"
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
        /// What a launch would do: `upToDate`, `keepDownloaded`, `recordVersion` or `install`.
        @NullWhenNil var decision: String?
        /// Why it would install or record (a ``LaunchOutcome/Reason``).
        @NullWhenNil var reason: String?
        /// The files Reseed keeps in the data directory that are there (the store's, the user store's,
        /// the preferences file's), each with its `name`, `kind`, what removes it (`removedBy`), the
        /// file it `belongsTo` and what it is in words (`description`).
        var files: [StoreLayout.File]
        var store: String
        var storePresent: Bool
        @NullWhenNil var storeSize: Int64?
        var preferences: String
        var preferencesState: String
        /// The user store, from --user-store or reseed.json; null when none is configured.
        @NullWhenNil var userStore: UserStoreSummary?
    }
}
