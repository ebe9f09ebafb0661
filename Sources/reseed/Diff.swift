import ArgumentParser
import Foundation
import ReseedPackaging

extension ReseedCommand {
    struct Diff: ParsableCommand {
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

        func run() throws {
            try reportingErrors {
                let diff = try SeedDiff.compare(old: fileURL(old), new: fileURL(new), exampleLimit: examples)
                if json {
                    FileHandle.standardOutput.write(try diff.jsonData())
                    FileHandle.standardOutput.write(Data("\n".utf8))
                } else {
                    FileHandle.standardOutput.write(Data(diff.renderText().utf8))
                }
            }
        }
    }
}
