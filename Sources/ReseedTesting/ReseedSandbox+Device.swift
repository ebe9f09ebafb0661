import Foundation
import GRDB
import Reseed

extension ReseedSandbox {
    /// What a user's device may hold besides the store of a release.
    public struct DeviceState: Sendable, Hashable {
        /// Leave the user's writes in the WAL, uncheckpointed, as after the app was killed.
        public var uncheckpointedWrites = false
        /// Replace the preferences file with bytes that are not JSON.
        public var corruptPreferences = false
        /// Leave the temporary file of an install that was interrupted.
        public var leftoverTemporaryFile = false

        public init(uncheckpointedWrites: Bool = false, corruptPreferences: Bool = false, leftoverTemporaryFile: Bool = false) {
            self.uncheckpointedWrites = uncheckpointedWrites
            self.corruptPreferences = corruptPreferences
            self.leftoverTemporaryFile = leftoverTemporaryFile
        }
    }

    /// Puts the sandbox in the state a user's device is in after running release `seed`:
    /// that seed installed (through Reseed's own launcher) and recorded, `userWrites` applied,
    /// and the extra `state`.
    ///
    /// ```swift
    /// for release in try SeedCheck.releases(in: testsFolder.appending(path: "Releases")) {
    ///     try sandbox.recreateDevice(after: release.manifestURL, userWrites: ["UPDATE setting SET value = 'x'"],
    ///                                state: .init(uncheckpointedWrites: true))
    ///     #expect(try sandbox.launch().isConsistent)
    /// }
    /// ```
    ///
    /// - Parameter seed: an earlier release's seed: a manifest or a folder (a packaged seed, or a ``SeedFixture`` build).
    public func recreateDevice(after seed: URL, userWrites: [String] = [], state: DeviceState = DeviceState()) throws {
        try wipe()
        let earlier = Launcher(seed: seed, dataDirectory: dataDirectory)
        let outcome = try earlier.prepare()
        let storePath = outcome.storeURL.path
        var configuration = Configuration()
        configuration.prepareDatabase { try $0.execute(sql: "PRAGMA wal_autocheckpoint = 0") }
        let pool = try DatabasePool(path: storePath, configuration: configuration)
        try pool.write { db in
            for sql in userWrites { try db.execute(sql: sql) }
        }
        if state.uncheckpointedWrites {
            // Snapshot the files while the pool is open, as a kill would leave them.
            let snapshot = directory.appendingPathComponent("snapshot-\(UUID().uuidString.prefix(6))")
            try FileManager.default.copyItem(at: dataDirectory, to: snapshot)
            try pool.close()
            try FileManager.default.removeItem(at: dataDirectory)
            try FileManager.default.moveItem(at: snapshot, to: dataDirectory)
        } else {
            try pool.close()
        }
        if state.corruptPreferences {
            try Data("{\"reseed\": {\"".utf8).write(to: launcher.preferencesURL)
        }
        if state.leftoverTemporaryFile {
            let name = StoreLayout.temporaryName(of: StoreLayout(store: outcome.name).storeFileName)
            try Data(repeating: 0x53, count: 8192).write(to: dataDirectory.appendingPathComponent(name))
        }
    }
}
