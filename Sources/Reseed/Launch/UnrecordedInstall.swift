import Foundation
import GRDB
import Logging
import ReseedSystem

/// A seed swapped in whose record a crash cut short: the store file holds another version than
/// the preferences say.
///
/// Each install records the store file's fingerprint as its swap left it. A file in the store's
/// place with another identity (device and inode: a rename put it there) was installed after the
/// last record; when its metadata table names this store at another version than recorded, that
/// version is what the store holds. A launch, `reseed status` and an update decide from it, and a
/// launch and an update record it: the version, the source, the file's fingerprint; the content
/// hashes, which no longer describe the file, are cleared (a later delta update takes the full seed once).
///
/// Nothing but a `stat` is read while the file is the one recorded: the up-to-date launch reads no
/// database page. A file of another identity that holds the recorded version (restored, copied) gets
/// its fingerprint recorded by the next launch that installs nothing, so it is read once.
struct UnrecordedInstall: Sendable {
    /// What the store file's metadata table says.
    var embedded: SeedMetadata
    /// The store file's fingerprint now.
    var fingerprint: String
    /// The file holds the recorded version: it was copied or restored (a device restored from a
    /// backup, a data directory copied), not installed. Its new fingerprint is recorded once, so
    /// later launches read no database page again (``recordFingerprint(in:name:timeout:logger:)``).
    var isRecordedVersion: Bool { embedded.version == recordedVersion }
    /// The version the preferences record.
    var recordedVersion: String

    /// Finds one for the store `name` in `directory`, whose preferences entry is `entry`.
    static func find(name: String, entry: PreferencesFile.Entry?, in directory: Directory) -> UnrecordedInstall? {
        let storeName = StoreLayout(store: name).storeFileName
        guard let entry, let recorded = entry.version, let fingerprint = entry.storeFingerprint,
              let status = (try? directory.status(storeName)) ?? nil, status.kind == .regular,
              !fingerprint.hasPrefix("\(status.device):\(status.inode):"),
              let embedded = embeddedMetadata(path: directory.path(storeName)),
              embedded.name == name else { return nil }
        return UnrecordedInstall(embedded: embedded, fingerprint: status.fingerprint, recordedVersion: recorded)
    }

    /// The store's name and version, read through an immutable attachment: no lock taken, no `-wal`
    /// or `-shm` made, nothing changed in the data directory (a launch that fails later leaves it as it
    /// was). A seed's metadata table is written when it is built, never after, so its pages are in the file.
    private static func embeddedMetadata(path: String) -> SeedMetadata? {
        guard let queue = try? DatabaseQueue() else { return nil }
        defer { try? queue.close() }
        return (try? queue.inDatabase { db in
            try Launcher.attachSeed(db, uri: Launcher.readOnlyURI(path), path: path)
            return try SeedMetadata.read(db, schema: Launcher.seedSchema)
        }) ?? nil
    }

    /// What the preferences should say: the embedded version, from the bundle when it is the
    /// bundled version (`bundled`, when known), else from a download.
    func recorded(bundled: String?, userStore: String?) -> Decision.Recorded {
        Decision.Recorded(version: embedded.version, source: embedded.version == bundled ? .bundle : .download, userStore: userStore)
    }

    /// For a file that holds the recorded version (``isRecordedVersion``): records its fingerprint, and
    /// clears the incremental content hash and the content hash a fingerprint vouches for (a copied
    /// file may have been written: a delta then checks its result whole).
    func recordFingerprint(in preferences: PreferencesFile, name: String, timeout: Duration, logger: Logger) throws(ReseedError) {
        logger.notice("the store file is another file than the one installed, holding the same version; recording it", metadata: ["store": "\(name)"])
        _ = try preferences.record([.storeFingerprint(fingerprint)], for: name, clearing: [.incrementalContentHash, .fingerprintedContentHash], timeout: timeout, logger: logger)
    }

    /// Records ``recorded(bundled:userStore:)`` for the store `name` in one write; returns it.
    func record(in preferences: PreferencesFile, name: String, bundled: String?, userStore: String?, timeout: Duration, logger: Logger)
        throws(ReseedError) -> Decision.Recorded
    {
        let recorded = recorded(bundled: bundled, userStore: userStore)
        logger.warning("the store holds another version than recorded (an install cut short before its record); recording it", metadata: [
            "store": "\(name)", "version": "\(recorded.version)", "source": "\(recorded.source.rawValue)",
        ])
        _ = try preferences.record([.version(recorded.version), .source(recorded.source), .storeFingerprint(fingerprint)], for: name,
                                   clearing: [.contentHash, .incrementalContentHash, .fingerprintedContentHash], timeout: timeout, logger: logger)
        return recorded
    }
}
