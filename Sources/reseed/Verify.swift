import ArgumentParser
import Foundation
import ReseedPackaging

extension ReseedCommand {
    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Prove a seed matches its manifest (and its Migrations/): size, SHA-256, integrity, steps.",
            discussion: "Exits 1 and lists every finding when anything differs.")

        @Argument(help: ArgumentHelp("The seed: its manifest, or a folder holding one.", valueName: "seed"))
        var seed: String

        @Option(help: ArgumentHelp("Compare the steps recorded in the seed with this folder.", valueName: "dir"))
        var migrations: String?

        @Flag(help: "Print the report as JSON on stdout.")
        var json = false

        func run() throws {
            try reportingErrors {
                let report = try SeedVerifier(seed: fileURL(seed)).verify(migrations: migrations.map(fileURL))
                if json {
                    try Terminal.out(JSONOutput.object([
                        ("seed", .string(report.seed)),
                        ("name", .string(report.name)),
                        ("version", .string(report.version)),
                        ("ok", .bool(report.isClean)),
                        ("findings", .array(report.findings.map { finding in
                            .object([("kind", .string(finding.kind.rawValue)), ("step", .optional(finding.step)), ("message", .string(finding.message))])
                        })),
                    ]).render(indent: nil))
                } else if report.isClean {
                    try Terminal.out("\(report.name) \(report.version) verified: \(report.seed)")
                } else {
                    for finding in report.findings { try Terminal.out("\(finding.kind.rawValue): \(finding.message)") }
                }
                if !report.isClean {
                    Terminal.error("\(report.findings.count) finding\(report.findings.count == 1 ? "" : "s") in \(report.seed)")
                    throw ExitCode.failure
                }
            }
        }
    }
}
