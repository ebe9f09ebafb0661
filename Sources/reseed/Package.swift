import ArgumentParser
import Foundation
import Reseed
import ReseedPackaging
import Synchronization

extension ReseedCommand {
    struct Package: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Build the seed from Migrations/ into SeedData/, reproducibly, with its manifest.",
            discussion: "Defaults come from reseed.json; in this repository `reseed package` rebuilds the example seed.")

        @Option(help: ArgumentHelp("The folder of ordered steps.", valueName: "dir"))
        var migrations: String?

        @Option(help: ArgumentHelp("Where <name>.sqlite (or <name>.sqlite\(Codecs.written.fileSuffix)) and <name>.manifest.json are written.", valueName: "dir"))
        var output: String?

        @Option(help: "The seed (store) name.")
        var name: String?

        @Option(name: .customLong("version"), help: "The seed version: SemVer 2.0 (2.0.0, 2.1.0-rc.1) or dotted numbers (2024.1, 2024.07.2).")
        var seedVersion: String?

        @Flag(help: ArgumentHelp(
            "Write <name>.sqlite\(Codecs.written.fileSuffix) (\(Codecs.written.name)) instead of <name>.sqlite: a smaller app, but no App Store delta updates of the seed.",
            discussion: "The manifest then says \"compression\": \"\(Codecs.written.name)\"; its size and sha256 stay the database's. The other file an earlier build left is removed."))
        var compress = false

        @Flag(help: "Print the manifest as JSON on stdout.")
        var json = false

        @OptionGroup var logging: LoggingOptions

        @MainActor
        func run() async throws {
            try await reportingErrors {
                let project = try ProjectConfiguration.load()
                guard let migrations = migrations.map(fileURL) ?? project.migrations else { throw ValidationError("give --migrations") }
                guard let output = output.map(fileURL) ?? project.output else { throw ValidationError("give --output") }
                guard let name = name ?? project.name else { throw ValidationError("give --name") }
                guard let version = seedVersion ?? project.version else { throw ValidationError("give --version") }
                try checkOrdered(version, from: seedVersion == nil ? project.url : nil)
                var builder = SeedBuilder(migrations: migrations, output: output, name: name, version: version)
                builder.logger = logging.logger("reseed.packaging")
                builder.compression = compress ? .written : nil
                builder.userVersion = project.userVersion
                builder.applicationID = project.applicationID
                builder.analyze = project.analyze
                if Terminal.stderrIsTerminal { builder.progress = ProgressLine().report }
                let result = try builder.build()
                if json {
                    try Terminal.out(result.manifest.encoded())
                } else {
                    try Terminal.out("Built \(name) \(version): \(result.seedURL.path) (\(result.manifest.size) bytes, sha256 \(result.manifest.sha256))")
                }
            }
        }
    }
}

/// Refuses a seed version outside the one grammar (``SeedVersion/grammar``), which channels and launches
/// could not order: an update to it, or from it, would be refused. `configuration` is the `reseed.json` it
/// came from; nil for `--version`.
func checkOrdered(_ version: String, from configuration: URL?) throws {
    guard !SeedVersion(version).isOrdered else { return }
    let problem = "\"\(version)\" cannot be ordered, so no device could tell whether it is newer: a version is \(SeedVersion.grammar)"
    if let configuration {
        throw ConfigurationError(path: configuration.path, message: "\"version\": " + problem)
    }
    throw ValidationError("--version " + problem)
}

/// Rows and rows per second of a long data step, on one rewritten stderr line.
///
/// Progress is a diagnostic: once stderr cannot be written, it stops, and the build goes on.
final class ProgressLine: Sendable {
    private let started = Mutex<ContinuousClock.Instant?>(nil)
    private let output = ProgressOutput()

    func report(_ progress: SeedBuilder.Progress) {
        switch progress {
        case .step:
            started.withLock { $0 = .now }
        case .rows(let step, let rows, let done):
            let elapsed = started.withLock { start in start.map { ContinuousClock.now - $0 } } ?? .zero
            let seconds = elapsed.inSeconds
            // Formatted, not converted to Int: a rate over Int.max would trap.
            let rate = String(format: "%.0f", seconds > 0 ? Double(rows) / seconds : 0)
            output.write("\r\(step.id): \(rows) rows, \(rate) rows/s   " + (done ? "\n" : ""))
        }
    }
}
