import ArgumentParser
import Foundation
import ReseedPackaging

extension ReseedCommand {
    struct Diff: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show what changed between two seeds: schema, and rows added, removed and changed per table.",
            discussion: "Rows are matched by primary key (rowid when there is none). Exit 0 whether or not they differ.")

        @Argument(help: ArgumentHelp("The older seed database.", valueName: "old.sqlite"))
        var old: String

        @Argument(help: ArgumentHelp("The newer seed database.", valueName: "new.sqlite"))
        var new: String

        @Option(help: "How many example rows to show per table and kind of change.")
        var examples = 5

        @Flag(help: "Print the diff as JSON on stdout.")
        var json = false

        func validate() throws {
            guard examples >= 0 else { throw ValidationError("--examples must be 0 or more") }
        }

        @MainActor
        func run() async throws {
            try await reportingErrors {
                let diff = try SeedDiff.compare(old: fileURL(old), new: fileURL(new), exampleLimit: examples)
                if json {
                    try Terminal.out(try diff.jsonData() + Data("\n".utf8))
                } else {
                    try Terminal.out(diff.renderText().utf8)
                }
            }
        }
    }
}
