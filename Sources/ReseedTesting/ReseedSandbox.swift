import Foundation
import GRDB
import Reseed

/// A throwaway device for an app's tests: a temporary data directory (removed when the sandbox
/// is released) and the app's launcher pointed at it.
///
/// ```swift
/// let sandbox = try ReseedSandbox(seed: bundledSeedFolder)
/// try sandbox.recreateDevice(after: release1, userWrites: ["INSERT INTO favorite (id) VALUES (3)"])
/// let report = try sandbox.launch()
/// #expect(report.outcome.action == .installed)
/// #expect(report.rowCounts["favorite"] == 0)          // the seed replaced the store
/// ```
public final class ReseedSandbox: Sendable {
    /// The temporary folder, removed when the sandbox is released; the data directory is `data/` inside it.
    public let directory: URL
    /// The seed the app ships (its manifest, or a folder holding one).
    public let seedURL: URL
    /// The app's launcher configuration; its preferences URL, if set, is ignored: the sandbox's is used.
    public let configuration: Launcher.Configuration

    /// The sandbox's data directory.
    public var dataDirectory: URL { directory.appendingPathComponent("data") }

    /// - Parameters:
    ///   - seed: the app's bundled seed.
    ///   - configuration: the app's launcher configuration. Default: Reseed's defaults.
    /// - Throws: when the temporary folder cannot be created.
    public init(seed: URL, configuration: Launcher.Configuration = Launcher.Configuration()) throws {
        let name = "reseed-sandbox-\(UUID().uuidString.prefix(8).lowercased())"
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(name, isDirectory: true).standardizedFileURL
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.seedURL = seed
        var configuration = configuration
        configuration.preferencesURL = nil
        self.configuration = configuration
    }

    deinit {
        try? FileManager.default.removeItem(at: directory)
    }

    /// The app's launcher, pointed at the sandbox.
    public var launcher: Launcher {
        Launcher(seed: seedURL, dataDirectory: dataDirectory, configuration: configuration)
    }

    /// The sandbox's preferences file.
    public var preferences: PreferencesFile { PreferencesFile(url: launcher.preferencesURL) }

    /// Runs the app's launcher and reports what it did and what the store holds.
    ///
    /// - Throws: the launcher's ``ReseedError`` (a bad seed, a busy store…), for tests to assert on.
    public func launch() throws -> LaunchReport {
        let (pool, outcome) = try launcher.launch()
        defer { try? pool.close() }
        return try LaunchReport(outcome: outcome, store: pool, preferences: preferences)
    }

    /// Removes everything from the data directory: a device that never ran the app.
    public func wipe() throws {
        if FileManager.default.fileExists(atPath: dataDirectory.path) {
            try FileManager.default.removeItem(at: dataDirectory)
        }
    }
}
