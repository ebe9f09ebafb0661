import Foundation
import Logging

/// The JSON preferences file where Reseed records which seed version each store holds.
///
/// Default: `<data-dir>/preferences.json`. The file is a JSON object the app
/// may share with its own settings. Reseed reads and writes only its top-level
/// key `"reseed"`, an object keyed by store name:
///
/// ```json
/// {"theme": "dark", "reseed": {"triage": {"version": "2.0.0", "source": "bundle"}}}
/// ```
///
/// Each store's entry holds `"version"`: the seed version installed in that
/// store; `"source"`: where that seed came from (``SeedSource``: `"bundle"` or
/// `"download"`); and, once a ``ChannelUpdater`` has checked a channel,
/// `"channel"`: the channel's URL, the manifest's `ETag`/`Last-Modified` and the
/// version they describe, so that the next check is a conditional request.
/// Reseed changes only those values; other keys of the entry, other
/// stores' entries and every other key of the file are kept byte for byte.
/// Writes are atomic and durable (temp file, fsync, rename, directory fsync)
/// and serialised across processes by a lock file
/// (`.preferences.json.reseed-lock`). A file that is not a JSON object is moved
/// aside to `preferences.json.corrupt-<UTC time>`, never deleted.
public struct PreferencesFile: Sendable {
    /// The top-level key Reseed owns.
    public static let key = "reseed"
    /// The default file name inside the data directory.
    public static let defaultFileName = "preferences.json"
    /// The largest preferences file Reseed reads (16 MiB).
    public static let maximumFileSize = 16 << 20

    /// What the file holds for Reseed.
    public enum Contents: Sendable, Equatable {
        /// No file.
        case missing
        /// A JSON object; the recorded version of each store that has a well-formed entry.
        case valid(versions: [String: String])
        /// A file that is not a JSON object, and why.
        case corrupt(reason: String)
    }

    public let url: URL
    let fileSystem: FileSystem

    public init(url: URL) {
        self.init(url: url, fileSystem: FileSystem())
    }

    init(url: URL, fileSystem: FileSystem) {
        self.url = url
        self.fileSystem = fileSystem
    }

    var fileName: String { url.lastPathComponent }
    var lockName: String { ".\(fileName).reseed-lock" }

    /// What the file records for one store.
    struct Entry: Sendable, Equatable {
        /// The installed seed version, when the entry has a string `"version"`.
        var version: String?
        /// Where that seed came from, when the entry says (nil for entries written before Reseed recorded it).
        var source: SeedSource?
        /// The whole entry, for the keys other parts of Reseed keep there (a channel's validators).
        var node: JSONNode
    }

    /// Reads the file. Reading needs no lock: writers replace it atomically.
    ///
    /// - Throws: ``ReseedError`` (step `readPreferences`) when the file cannot be read or is over 16 MiB.
    public func read() throws(ReseedError) -> Contents {
        try readEntries().contents
    }

    /// Reads the file once: its contents, and each store's entry when it is a JSON object.
    func readEntries() throws(ReseedError) -> (contents: Contents, entries: [String: Entry]) {
        Self.parse(try readBytes())
    }

    /// The recorded version of the store `name`, or nil.
    public func recordedVersion(of name: String) throws(ReseedError) -> String? {
        if case .valid(let versions) = try read() { return versions[name] }
        return nil
    }

    /// Where the seed recorded for the store `name` came from: nil when nothing is recorded,
    /// ``SeedSource/bundle`` for an entry that does not say.
    public func recordedSource(of name: String) throws(ReseedError) -> SeedSource? {
        guard let entry = try readEntries().entries[name], entry.version != nil else { return nil }
        return entry.source ?? .bundle
    }

    func readBytes() throws(ReseedError) -> [UInt8]? {
        try readSmallFileIfPresent(url, limit: Self.maximumFileSize, step: .readPreferences) { size in
            ReseedError(.io, step: .readPreferences, path: url.path, errno: .fileTooLarge,
                        message: "preferences file is \(size) bytes, more than the \(Self.maximumFileSize)-byte limit")
        }
    }

    static func contents(of bytes: [UInt8]?) -> Contents {
        parse(bytes).contents
    }

    static func parse(_ bytes: [UInt8]?) -> (contents: Contents, entries: [String: Entry]) {
        guard let bytes else { return (.missing, [:]) }
        let root: JSONNode
        do {
            root = try JSONNode.parse(bytes)
        } catch {
            return (.corrupt(reason: "not valid JSON: \(error)"), [:])
        }
        guard case .object = root.value else { return (.corrupt(reason: "the JSON is \(root.kindName), not an object"), [:]) }
        var versions: [String: String] = [:]
        var entries: [String: Entry] = [:]
        if case .object(let stores)? = root[key]?.value {
            // A repeated store name: the last entry counts, as for every key (and as JSONEdit writes it).
            for store in stores {
                let version = store.value["version"]?.string
                versions[store.key] = version
                entries[store.key] = Entry(
                    version: version, source: store.value["source"]?.string.flatMap(SeedSource.init(rawValue:)), node: store.value)
            }
        }
        return (.valid(versions: versions), entries)
    }

    /// Records `version` and its `source` for the store `name`, keeping everything else in the file.
    ///
    /// A missing file is created. Under the preferences lock the file is read
    /// again, so a concurrent writer's change is never lost; a file found
    /// corrupt there is moved aside first and its new location returned.
    func record(version: String, source: SeedSource, for name: String, timeout: Duration, logger: Logger) throws(ReseedError) -> URL? {
        try record([("version", JSONNode.quote(version)), ("source", JSONNode.quote(source.rawValue))], for: name, timeout: timeout, logger: logger)
    }

    /// Sets keys of the store `name`'s entry to values given as JSON text, in one atomic write,
    /// keeping every other byte of the file; as ``record(version:source:for:timeout:logger:)`` does.
    func record(_ values: [(key: String, json: String)], for name: String, timeout: Duration, logger: Logger) throws(ReseedError) -> URL? {
        try withLock(timeout: timeout) { directory throws(ReseedError) in
            var movedAside: URL?
            var bytes = try readBytes()
            var root = bytes.flatMap { try? JSONNode.parse($0) }
            if bytes != nil, root.map({ if case .object = $0.value { false } else { true } }) ?? true {
                movedAside = try moveAsideLocked(directory, logger: logger)
                bytes = nil
                root = nil
            }
            let updated: [UInt8]
            if var edited = bytes, var parsed = root {
                for (index, value) in values.enumerated() {
                    edited = JSONEdit.set([Self.key, name, value.key], to: value.json, in: edited, root: parsed)
                    // Each splice moves the offsets after it: parse again before the next one.
                    if index < values.count - 1 {
                        parsed = try during(.recordVersion, path: url.path) { try JSONNode.parse(edited) }
                    }
                }
                updated = edited
            } else {
                let entry = values.map { JSONNode.quote($0.key) + ": " + $0.json }.joined(separator: ", ")
                updated = Array("{\n  \(JSONNode.quote(Self.key)): {\(JSONNode.quote(name)): {\(entry)}}\n}\n".utf8)
            }
            try during(.recordVersion, path: url.path) {
                try directory.removeTemporaryFiles(for: fileName)
                try directory.replaceAtomically(fileName, with: updated)
            }
            return movedAside
        }
    }

    /// Moves a corrupt file aside (never deleting it); returns where, or nil when it was no longer corrupt.
    func moveAsideIfCorrupt(timeout: Duration, logger: Logger) throws(ReseedError) -> URL? {
        try withLock(timeout: timeout) { directory throws(ReseedError) in
            guard case .corrupt = Self.contents(of: try readBytes()) else { return nil }
            return try moveAsideLocked(directory, logger: logger)
        }
    }

    private func moveAsideLocked(_ directory: Directory, logger: Logger) throws(ReseedError) -> URL {
        let stamp = Self.timestamp()
        for attempt in 1...1000 {
            let asideName = "\(fileName).corrupt-\(stamp)" + (attempt == 1 ? "" : "-\(attempt)")
            do {
                try directory.renameNoReplace(fileName, to: asideName)
                try directory.sync()
                let aside = directory.url.appendingPathComponent(asideName, isDirectory: false)
                logger.warning("preferences file was not a JSON object; moved aside", metadata: ["from": "\(url.path)", "to": "\(aside.path)"])
                return aside
            } catch let failure as FileSystemFailure where failure.errno == .fileExists {
                continue
            } catch {
                throw ReseedError.wrapping(error, step: .readPreferences, path: url.path)
            }
        }
        throw ReseedError(.io, step: .readPreferences, path: url.path, errno: .fileExists, message: "cannot find a free name to move the corrupt preferences aside")
    }

    private func withLock<T>(timeout: Duration, _ body: (Directory) throws(ReseedError) -> T) throws(ReseedError) -> T {
        let directoryURL = url.deletingLastPathComponent()
        let directory = try during(.prepareDirectory, path: directoryURL.path) {
            try fileSystem.openDirectory(directoryURL, create: true)
        }
        let lock = try StoreLock.acquire(lockName, in: directory, timeout: timeout,
                                         timeoutMessage: "another process held the preferences lock for longer than \(timeout)")
        defer { lock.release() }
        return try body(directory)
    }

    static func timestamp(_ date: Date = Date()) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return formatter.string(from: date)
    }
}
