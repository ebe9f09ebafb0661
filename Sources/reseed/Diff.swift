import ArgumentParser
import Foundation
import Reseed
import ReseedPackaging

extension ReseedCommand {
    struct Diff: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show what changed between two seeds: schema, and rows added, removed and changed per table.",
            discussion: """
                Rows are matched by primary key; a table without one (or whose key holds NULL) by content, as a delta \
                matches it, so a row that only moved to another rowid is no change. With --reference, also lists per reference \
                the seed keys OLD has and NEW does not: values the app's user rows may point to. Exit 0 whether or not \
                they differ.
                """)

        @Argument(help: ArgumentHelp("The older seed database.", valueName: "old.sqlite"))
        var old: String

        @Argument(help: ArgumentHelp("The newer seed database.", valueName: "new.sqlite"))
        var new: String

        @Option(help: "How many example rows to show per table and kind of change.")
        var examples = 5

        @Option(name: .customLong("reference"), help: ArgumentHelp(
            "A user column that points at a seed key, such as 'incident.category_id->injury_category.id' (repeatable).",
            valueName: "reference"))
        var references: [String] = []

        @Flag(help: "Also build the row-level delta from OLD to NEW in a temporary file and print what it weighs (bytes, rows per table), or why there is none.")
        var deltaSize = false

        @Flag(help: "Print the diff as JSON on stdout.")
        var json = false

        func validate() throws {
            guard examples >= 0 else { throw ValidationError("--examples must be 0 or more") }
            _ = try seedReferences(references, option: "--reference")
        }

        @MainActor
        func run() async throws {
            try await reportingErrors {
                var diff = try SeedDiff.compare(old: fileURL(old), new: fileURL(new), exampleLimit: examples)
                let parsed = try seedReferences(references, option: "--reference")
                if !parsed.isEmpty {
                    diff.referencedKeys = try SeedDiff.referencedKeys(old: fileURL(old), new: fileURL(new), references: parsed)
                }
                if deltaSize {
                    diff.delta = try SeedDiff.deltaSize(old: fileURL(old), new: fileURL(new))
                }
                if json {
                    try Terminal.out(try diff.jsonData() + Data("\n".utf8))
                } else {
                    try Terminal.out(diff.renderText().utf8)
                }
            }
        }
    }
}
