import ArgumentParser
import Foundation
import ReseedPackaging

extension ReseedCommand {
    struct Init: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Start a project from an existing database: reseed.json and Migrations/ that rebuild it.",
            discussion: """
                Writes a schema step, one data step per table (CSV where CSV carries every value exactly, \
                else INSERTs), the AUTOINCREMENT counters, then indexes, views and triggers. \
                `reseed package` then builds a seed that `reseed diff` finds identical to the database. \
                Creates --directory (and its parents) when missing. Refuses to overwrite reseed.json or \
                Migrations/ unless --force; writes nothing on failure, and with --force leaves the old ones as they were.
                """)

        @Option(help: ArgumentHelp("The database to start from.", valueName: "existing.sqlite"))
        var from: String

        @Option(help: "The seed (store) name. Default: the database's file name without its extension.")
        var name: String?

        @Option(name: .customLong("version"), help: "The seed version: SemVer 2.0 (1.0.0) or dotted numbers (2024.1).")
        var seedVersion = "1.0.0"

        @Option(help: ArgumentHelp("Where reseed.json and Migrations/ are written. Default: the current folder.", valueName: "dir"))
        var directory: String?

        @Flag(help: "Replace an existing reseed.json and Migrations/ (once the new ones are complete).")
        var force = false

        @Flag(help: "Print what was written as one line of JSON on stdout.")
        var json = false

        /// `--json`'s line.
        struct Report: Encodable {
            struct Step: Encodable {
                var file: String
                var rows: Int
                @NullWhenNil var sqlBecause: String?
            }

            var configuration: String
            var migrations: String
            var steps: [Step]
            var notCarried: [String]
        }

        func validate() throws {
            try checkOrdered(seedVersion, from: nil)
        }

        @MainActor
        func run() async throws {
            try await reportingErrors {
                let source = fileURL(from)
                let name = self.name ?? source.deletingPathExtension().lastPathComponent
                let folder = directory.map(fileURL) ?? fileURL(FileManager.default.currentDirectoryPath)
                var importer = ProjectImporter(source: source, directory: folder, name: name, version: seedVersion)
                importer.force = force
                let result = try importer.run()
                for note in result.notCarried { Terminal.error("not carried: \(note)") }
                if json {
                    try Terminal.out(json: Report(
                        configuration: result.configurationURL.path, migrations: result.migrationsURL.path,
                        steps: result.steps.map { Report.Step(file: $0.fileName, rows: $0.rows, sqlBecause: $0.sqlBecause) },
                        notCarried: result.notCarried))
                } else {
                    var lines = ["Wrote \(result.configurationURL.path) and \(result.migrationsURL.path)/ (\(result.steps.count) steps):"]
                    for step in result.steps {
                        var line = "  \(step.fileName)"
                        if step.rows > 0 { line += ": \(step.rows) row\(step.rows == 1 ? "" : "s")" }
                        if let reason = step.sqlBecause { line += " (SQL: \(reason))" }
                        lines.append(line)
                    }
                    lines.append("Next: reseed package")
                    try Terminal.out(lines.joined(separator: "\n"))
                }
            }
        }
    }
}
