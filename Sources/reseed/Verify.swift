import ArgumentParser
import Foundation
import ReseedPackaging

extension ReseedCommand {
    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Prove a seed matches its manifest (and its Migrations/): size, SHA-256, integrity, content hash, steps.",
            discussion: "Exits 1 and lists every finding when anything differs.")

        @Argument(help: ArgumentHelp("The seed: its manifest, or a folder holding one.", valueName: "seed"))
        var seed: String

        @Option(help: ArgumentHelp("Compare the steps recorded in the seed with this folder.", valueName: "dir"))
        var migrations: String?

        @Flag(help: "Print the report as JSON on stdout.")
        var json = false

        @MainActor
        func run() async throws {
            try await reportingErrors {
                let report = try SeedVerifier(seed: fileURL(seed)).verify(migrations: migrations.map(fileURL))
                for note in report.notes { Terminal.error("note: \(note)") }
                if json {
                    try Terminal.out(json: Report(report))
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

extension ReseedCommand.Verify {
    /// The `--json` object of `reseed verify`: the ``SeedVerifier/Report``, with `ok` and every key present.
    struct Report: Encodable {
        /// One ``SeedVerifier/Finding``, its `step` `null` when it concerns no step.
        struct Finding: Encodable {
            var kind: SeedVerifier.Finding.Kind
            @NullWhenNil var step: String?
            var message: String
        }

        var seed: String
        var name: String
        var version: String
        var ok: Bool
        var findings: [Finding]
        /// ``SeedVerifier/Report/notes``: not failures (`ok` stays true), such as "no content hash".
        var notes: [String]

        init(_ report: SeedVerifier.Report) {
            seed = report.seed
            name = report.name
            version = report.version
            ok = report.isClean
            findings = report.findings.map { Finding(kind: $0.kind, step: $0.step, message: $0.message) }
            notes = report.notes
        }
    }
}
