import Foundation
import GRDB
import Reseed
import ReseedTesting
import ReseedTestSupport
import Testing

/// SIGKILL a real `reseed package` at many moments of a rebuild; each time the output folder must
/// hold a usable seed (the old release, or the new one), and the next build must finish and leave
/// nothing but the seed and its manifest: the folder ships inside the app.
@Suite struct KillDuringPackageTests {
    static let kills = 20

    @Test func outputFolderSurvivesSIGKILLAtAnyMomentOfABuild() throws {
        let sandbox = try TemporaryDirectory(prefix: "reseed-kill-package")
        let migrations = sandbox.appending("Migrations")
        try FileManager.default.createDirectory(at: migrations, withIntermediateDirectories: true)
        try Data("CREATE TABLE reading (id INTEGER PRIMARY KEY, station TEXT NOT NULL, value REAL);".utf8)
            .write(to: migrations.appendingPathComponent("0001_schema.sql"))
        let rows = (1...200_000).map { "\($0),ST\(String(format: "%04d", $0 % 1000)),\(Double($0) / 2)\n" }.joined()
        try Data(("id,station,value\n" + rows).utf8).write(to: migrations.appendingPathComponent("0002_reading.csv"))
        try Data("CREATE INDEX reading_station ON reading (station);".utf8).write(to: migrations.appendingPathComponent("0003_index.sql"))

        func package(_ version: String, into folder: URL) -> [String] {
            ["package", "--migrations", migrations.path, "--output", folder.path, "--name", "data", "--version", version]
        }
        // The folder as the last release left it: 1.0.0 built and committed.
        let template = sandbox.appending("template")
        let first = try ReseedBinary.run(package("1.0.0", into: template))
        try #require(first.status == 0, "\(first.stderr)")

        let output = sandbox.appending("SeedData")
        var durations: [Double] = []
        for _ in 0..<3 {
            try reset(output, from: template)
            let clock = ContinuousClock()
            let start = clock.now
            let full = try ReseedBinary.run(package("2.0.0", into: output))
            #expect(full.status == 0, "\(full.stderr)")
            let duration = clock.now - start
            durations.append(Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
        }
        let seconds = durations.sorted()[1]

        var generator = SystemRandomNumberGenerator()
        var outcomes: [String: Int] = [:]
        var leftTemporaryFiles = 0
        for kill in 0..<Self.kills {
            try reset(output, from: template)
            // Spread over the whole run and a little past it, so the last moments (rename, manifest) are hit too.
            let delay = 1.1 * seconds * (Double(kill) + Double.random(in: 0..<1, using: &generator)) / Double(Self.kills)
            let running = try ReseedBinary.start(package("2.0.0", into: output))
            Thread.sleep(forTimeInterval: delay)
            running.kill()
            let result = running.wait()
            let state = try state(of: output)
            if !temporaryFiles(in: output).isEmpty { leftTemporaryFiles += 1 }
            outcomes["\(result.status == 0 ? "finished" : "killed") → \(state)", default: 0] += 1

            // The next build removes what the killed one left, and finishes.
            let rebuild = try ReseedBinary.run(package("2.0.0", into: output))
            #expect(rebuild.status == 0, "after kill \(kill): \(rebuild.stderr)")
            #expect(try self.state(of: output) == "seed 2.0.0, manifest 2.0.0")
            #expect(temporaryFiles(in: output).isEmpty, "after kill \(kill) and a rebuild: \(temporaryFiles(in: output))")
            let verify = try ReseedBinary.run(["verify", output.appendingPathComponent("data.sqlite").path, "--migrations", migrations.path])
            #expect(verify.status == 0, "after kill \(kill) and a rebuild: \(verify.stdout)")
        }
        print("package kills: \(Self.kills) over \(String(format: "%.3f", seconds)) s; states after each: \(outcomes.sorted { $0.key < $1.key }); runs that left temporary files (removed by the next build): \(leftTemporaryFiles)")
    }

    private func reset(_ folder: URL, from template: URL) throws {
        if FileManager.default.fileExists(atPath: folder.path) { try FileManager.default.removeItem(at: folder) }
        try FileManager.default.copyItem(at: template, to: folder)
    }

    private func temporaryFiles(in folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasPrefix(".") }
    }

    /// Which allowed state the folder is in: a usable seed of either release, and a manifest of
    /// either (a new seed beside the old manifest is the documented window between the two renames).
    private func state(of folder: URL) throws -> String {
        let seed = folder.appendingPathComponent("data.sqlite")
        let queue = try DatabaseQueue(path: seed.path, configuration: {
            var configuration = Configuration()
            configuration.readonly = true
            return configuration
        }())
        defer { try? queue.close() }
        let (check, metadata) = try queue.read { db in (try String.fetchOne(db, sql: "PRAGMA quick_check"), try SeedMetadata.read(db)) }
        #expect(check == "ok")
        let manifestURL = folder.appendingPathComponent("data.manifest.json")
        let manifest = try SeedManifest.decode(Array(try Data(contentsOf: manifestURL)), path: manifestURL.path)
        let versions = [metadata?.version ?? "?", manifest.version]
        #expect(versions.allSatisfy { $0 == "1.0.0" || $0 == "2.0.0" }, "\(versions)")
        #expect(versions != ["1.0.0", "2.0.0"], "a manifest of the new release beside the old seed")
        if metadata?.version == manifest.version {
            #expect(Int(manifest.size) == (try FileManager.default.attributesOfItem(atPath: seed.path)[.size] as? Int))
        }
        return "seed \(versions[0]), manifest \(versions[1])"
    }
}
