import Foundation
import GRDB
import Reseed
@testable import ReseedPackaging
import ReseedTesting
import ReseedTestSupport
import Testing

/// A migrations folder written from strings, and builds of it.
final class MigrationsSandbox: Sendable {
    let directory: TemporaryDirectory
    var migrations: URL { directory.appending("Migrations") }
    var output: URL { directory.appending("SeedData") }

    init(_ files: [String: String] = [:]) throws {
        directory = try TemporaryDirectory(prefix: "reseed-pkg")
        try FileManager.default.createDirectory(at: migrations, withIntermediateDirectories: true)
        for (name, content) in files { try write(name, content) }
    }

    func write(_ name: String, _ content: String) throws {
        try Data(content.utf8).write(to: migrations.appendingPathComponent(name))
    }

    /// Builds, and checks that the build, done or failed, left no temporary file (journals included).
    func build(name: String = "test", version: String = "1.0.0", limits: SeedBuilder.Limits = .init()) throws -> SeedBuilder.Result {
        defer {
            let leftovers = ((try? FileManager.default.contentsOfDirectory(atPath: output.path)) ?? []).filter { $0.hasPrefix(".") }
            if !leftovers.isEmpty { Issue.record("the build left \(leftovers) in \(output.path)") }
        }
        var builder = SeedBuilder(migrations: migrations, output: output, name: name, version: version)
        builder.limits = limits
        return try builder.build()
    }

    /// The names in the output folder (none but a finished seed and its manifest after any build).
    func outputFiles() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: output.path)) ?? []).sorted()
    }

    /// Runs `query` on the built seed.
    func read<T>(_ result: SeedBuilder.Result, _ query: (Database) throws -> T) throws -> T {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: result.seedURL.path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read(query)
    }
}

/// The error a build throws, which must be a ``PackagingError``.
func buildError(_ sandbox: MigrationsSandbox, limits: SeedBuilder.Limits = .init()) -> PackagingError? {
    do {
        _ = try sandbox.build(limits: limits)
        return nil
    } catch let error as PackagingError {
        return error
    } catch {
        return PackagingError(.io, step: .build, message: "unexpected error type: \(error)")
    }
}

let itemSchema = "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT, count INTEGER, price REAL, note TEXT);"
