import ArgumentParser
import Foundation
import Reseed

extension ReseedCommand {
    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Install a newer seed from a channel into the data directory: check, download, verify, install.",
            discussion: """
                Fetches <channel>/channel.json (conditionally: an unchanged channel costs one 304), its signature \
                channel.json.sig, then <channel>/keys.json (also after a 304, once the channel has one, to check the \
                key that signed what the 304 stands for), and checks that keys.json is signed by the --public-key \
                roots (or the roots keys.json rotated to), is not older than one seen nor expired, and names the \
                channel --channel-name (or the one first verified there); that a channel key keys.json lists signed \
                channel.json (for a channel without keys.json: a --public-key itself), that it names that keys.json, \
                was issued in the past, is valid no longer than --maximum-validity and has not expired. What verified \
                is kept beside the store before anything is downloaded; nothing lower is taken afterwards. When the \
                channel offers a newer version than the installed one, it downloads \
                the seed (resuming a broken download, or one cut for averaging under --low-speed-limit bytes a second over \
                --low-speed-time seconds), verifies its size and SHA-256 and installs it. When the channel \
                offers a delta from the installed seed's content hash, only the changed rows are downloaded and applied \
                to a copy of the installed seed (any failure falls back to the full seed). The next \
                `reseed launch` keeps it unless the bundled seed is newer. Exit status 0 when the store is up to date \
                with the channel, 1 otherwise.
                """)

        @Option(help: ArgumentHelp("The channel folder's URL (http or https).", valueName: "url"))
        var channel: String

        @Option(name: .customLong("public-key"),
                help: ArgumentHelp("A pinned root public key file from `reseed keygen` (repeat for several).", valueName: "path"))
        var publicKey: [String]

        @OptionGroup var store: StoreOptions

        @OptionGroup var user: UserStoreOptions

        @Option(help: ArgumentHelp("Seconds a server may stay silent before the update fails.", valueName: "seconds"))
        var timeout: Double = 30

        @Option(name: .customLong("manifest-deadline"),
                help: ArgumentHelp("Seconds fetching channel.json or its signature may take in all, however slowly the server sends.", valueName: "seconds"))
        var manifestDeadline: Double = 60

        @Option(name: .customLong("clock-skew"),
                help: ArgumentHelp("Seconds this device's clock may be behind: an expiry is enforced only that long after it passed.", valueName: "seconds"))
        var clockSkew: Double = 300

        @Option(name: .customLong("low-speed-limit"),
                help: ArgumentHelp("Bytes a second a download must average over --low-speed-time, or it is cut (and resumes on the next try); 0 turns the check off.", valueName: "bytes"))
        var lowSpeedLimit: Int64 = 1024

        @Option(name: .customLong("low-speed-time"),
                help: ArgumentHelp("Seconds the --low-speed-limit average is taken over.", valueName: "seconds"))
        var lowSpeedTime: Double = 60

        @Option(name: .customLong("channel-name"),
                help: ArgumentHelp("The channel's name keys.json must state (default: the first name verified from the channel).", valueName: "name"))
        var channelName: String?

        @Option(name: .customLong("maximum-validity"),
                help: ArgumentHelp("The longest a channel.json may be valid, from its issue time: a number and d, h, m or s.", valueName: "duration"))
        var maximumValidity = "90d"

        @Option(name: .customLong("minimum-threshold"),
                help: ArgumentHelp("The fewest root signatures keys.json must carry.", valueName: "n"))
        var minimumThreshold = 1

        @Flag(name: .customLong("allow-downgrade"), help: "Install the channel's seed even when it is not newer than the installed one.")
        var allowDowngrade = false

        @Flag(help: "Print one JSON object on stdout.")
        var json = false

        @Flag(help: "Show the download's and the install's progress on stderr even when it is not a terminal (on a terminal it is always shown).")
        var progress = false

        @OptionGroup var logging: LoggingOptions

        func validate() throws {
            _ = try channelURL()
            _ = try duration(timeout, of: "--timeout", allowingZero: false)
            _ = try duration(manifestDeadline, of: "--manifest-deadline", allowingZero: false)
            _ = try duration(clockSkew, of: "--clock-skew")
            guard !publicKey.isEmpty else { throw ValidationError("give at least one --public-key") }
            _ = try duration(lowSpeedTime, of: "--low-speed-time", allowingZero: false)
            _ = try validity(maximumValidity, of: "--maximum-validity")
            guard (1...ChannelKeys.maximumSignatures).contains(minimumThreshold) else {
                throw ValidationError("--minimum-threshold must be between 1 and \(ChannelKeys.maximumSignatures)")
            }
            if let channelName, !ChannelKeys.isValidChannelName(channelName) {
                throw ValidationError("--channel-name must be 1-\(ChannelKeys.maximumChannelNameLength) letters, digits, '.', '_' or '-'")
            }
            guard lowSpeedLimit >= 0 else { throw ValidationError("--low-speed-limit must be a number of bytes a second, from 0") }
        }

        func channelURL() throws -> URL {
            guard let url = URL(string: channel), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil else {
                throw ValidationError("--channel must be an http or https URL, such as https://cdn.example.com/triage/")
            }
            return url
        }

        @MainActor
        func run() async throws {
            try await reportingErrors {
                let project = try ProjectConfiguration.load()
                var launcherConfiguration = Launcher.Configuration()
                launcherConfiguration.preferencesURL = store.preferences.map(fileURL)
                launcherConfiguration.logger = logging.logger("reseed")
                launcherConfiguration.userStore = try user.userStore(project, store: store)
                var configuration = ChannelUpdater.Configuration()
                if progress || Terminal.stderrIsTerminal {
                    let output = ProgressOutput()
                    // One callback for both steps; a delta's copy, apply and content hash come as one scale (see `InstallProgress`).
                    configuration.progress = { progress in
                        let (done, total) = (progress.completed, progress.total)
                        switch progress.step {
                        case .download: output.write("\rdownloading: \(Self.percent(done, of: total))% of \(total) bytes   " + (done == total ? "\n" : ""))
                        case .install: output.write("\rinstalling: \(Self.percent(done, of: total))%   " + (done == total ? "\n" : ""))
                        }
                    }
                }
                let launcher = Launcher(seed: try store.seedURL(project), dataDirectory: try store.dataDirectoryURL(project),
                                        configuration: launcherConfiguration)
                configuration.timeout = try duration(timeout, of: "--timeout", allowingZero: false)
                configuration.manifestDeadline = try duration(manifestDeadline, of: "--manifest-deadline", allowingZero: false)
                configuration.lowSpeedLimit = lowSpeedLimit
                configuration.lowSpeedTime = try duration(lowSpeedTime, of: "--low-speed-time", allowingZero: false)
                configuration.allowsDowngrade = allowDowngrade
                configuration.clockSkew = try duration(clockSkew, of: "--clock-skew")
                configuration.maximumValidity = try validity(maximumValidity, of: "--maximum-validity")
                configuration.minimumThreshold = minimumThreshold
                configuration.channelName = channelName
                let channelURL = try self.channelURL()
                let updater = ChannelUpdater(channel: channelURL, publicKeys: try publicKey.map { try ChannelPublicKey(contentsOf: fileURL($0)) },
                                             launcher: launcher, configuration: configuration)
                let outcome = try await updater.update()
                if json {
                    try Terminal.out(json: Report(outcome, channel: channelURL))
                } else {
                    try Terminal.out(Self.sentence(outcome, channel: channelURL))
                }
            }
        }

        static func percent(_ done: Int64, of total: Int64) -> Int {
            Int(Double(done) * 100 / Double(max(total, 1)))
        }

        static func sentence(_ outcome: ChannelUpdater.Outcome, channel: URL) -> String {
            switch outcome.action {
            case .upToDate:
                return "\(outcome.name) is up to date at \(outcome.version) with \(channel.absoluteString)" + (outcome.notModified ? " (not modified)." : ".")
            case .updated:
                var text = "Updated \(outcome.name) to \(outcome.version)"
                if let previous = outcome.previousVersion { text += " (was \(previous))" }
                text += " from \(channel.absoluteString)" + (outcome.method == .delta ? " with a delta" : "")
                text += ": \(outcome.downloadedBytes) bytes downloaded"
                if let failure = outcome.deltaFailure { text += " (the full seed: the delta failed, \(failure))" }
                if let revoked = outcome.revokedKeyID {
                    text += " (installed although not newer: the channel's root removed the key \(revoked.prefix(16)) that signed the release it replaced)"
                }
                if let resumed = outcome.resumedFrom { text += ", resumed at byte \(resumed)" }
                return text + ", at \(outcome.storeURL.path)."
            }
        }
    }
}

extension ReseedCommand.Update {
    /// The `--json` object of `reseed update`: the ``ChannelUpdater/Outcome`` and the channel.
    struct Report: Encodable {
        var outcome: ChannelUpdater.Outcome.Action
        var name: String
        var version: String
        @NullWhenNil var previousVersion: String?
        var channel: String
        var notModified: Bool
        var downloadedBytes: Int64
        @NullWhenNil var resumedFrom: Int64?
        var store: String
        @NullWhenNil var userStore: String?
        var importedTables: [String: Int]
        /// The user's tables left in the old single-file store, kept aside whole at `storeKeptAside`.
        var strandedTables: [String]
        @NullWhenNil var storeKeptAside: String?
        var orphans: [String: Int]
        /// An update opens the user store only to count orphans: it applies no migration and
        /// moves no user store aside (the next launch does), so these two keep the shape of
        /// `reseed launch --json` and are always `[]` and `null`.
        var appliedMigrations: [String] = []
        @NullWhenNil var userStoreKeptAside: String? = nil
        /// `delta` or `full` when a seed was installed, else null.
        @NullWhenNil var method: ChannelUpdater.Method?
        /// The installed seed's content hash before the update, as recorded at its install (null when unknown).
        @NullWhenNil var fromContentHash: String?
        /// Why the channel's delta was not used, when the update fell back to the full seed.
        @NullWhenNil var deltaFailure: String?
        /// The key that signed the release replaced, when the channel's root removed it (the update then installs even a lower version).
        @NullWhenNil var revokedKeyID: String?

        init(_ update: ChannelUpdater.Outcome, channel: URL) {
            outcome = update.action
            name = update.name
            version = update.version
            previousVersion = update.previousVersion
            self.channel = channel.absoluteString
            notModified = update.notModified
            downloadedBytes = update.downloadedBytes
            resumedFrom = update.resumedFrom
            store = update.storeURL.path
            userStore = update.userStoreURL?.path
            importedTables = update.importedTables
            strandedTables = update.strandedTables
            storeKeptAside = update.storeKeptAside?.path
            orphans = update.orphans
            method = update.method
            fromContentHash = update.fromContentHash
            deltaFailure = update.deltaFailure
            revokedKeyID = update.revokedKeyID
        }
    }
}
