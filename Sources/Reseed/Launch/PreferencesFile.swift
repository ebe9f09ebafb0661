import Foundation
import Logging
import ReseedSystem
import SystemPackage

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
/// aside to `preferences.json.corrupt-<UTC time>`, never deleted; a valid JSON
/// object is never moved aside, however deeply the app nests its own values.
///
/// A symbolic link in the file's place is written through: the file it points to
/// is replaced atomically beside itself, keeping its mode, and the link stays (a
/// dangling link is an error naming it). A file over ``maximumFileSize`` is the
/// app's and is left untouched: Reseed reads no version from it
/// (``Contents/tooLarge(bytes:)``), records none into it, and the launcher decides
/// from the version embedded in the store.
/// Anything else in its place (a FIFO, a directory, a device) is an error that says
/// "not a regular file"; nothing waits on it.
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
        /// A file over ``PreferencesFile/maximumFileSize``: left as it is, read and written by nobody but the app.
        case tooLarge(bytes: Int64)
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
    /// The names beside the file: its lock, its temp files, a corrupt file moved aside.
    var layout: PreferencesLayout { PreferencesLayout(fileName: fileName) }

    /// Reads the file. Reading needs no lock: writers replace it atomically.
    ///
    /// - Throws: ``ReseedError`` (step `readPreferences`) when the file cannot be read or is not a regular file.
    public func read() throws(ReseedError) -> Contents {
        try readEntries().contents
    }

    /// Reads the file once: its contents, and each store's entry when it is a JSON object.
    func readEntries() throws(ReseedError) -> (contents: Contents, entries: [String: Entry]) {
        switch try readBytes() {
        case .bytes(let bytes): Self.parse(bytes)
        case .tooLarge(let size): (.tooLarge(bytes: size), [:])
        }
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

    /// The file's bytes (nil when there is none), or its size when it is over the limit.
    enum Read { case bytes([UInt8]?), tooLarge(Int64) }

    func readBytes() throws(ReseedError) -> Read {
        var oversize: Int64?
        do {
            return .bytes(try readSmallFileIfPresent(url, limit: Self.maximumFileSize, step: .readPreferences) { size in
                oversize = size
                return ReseedError(.io, step: .readPreferences, path: url.path, errno: .fileTooLarge,
                                   message: "preferences file is \(size) bytes, more than the \(Self.maximumFileSize)-byte limit")
            })
        } catch {
            if let oversize { return .tooLarge(oversize) }
            throw error
        }
    }

    static func contents(of bytes: [UInt8]?) -> Contents {
        parse(bytes).contents
    }

    /// How deep the file is kept as a tree: Reseed's own key needs 3 levels; the app's values
    /// below this are checked without recursion and kept whole (``JSONNode/Value/opaque``).
    static let treeDepth = 8

    static func parse(_ bytes: [UInt8]?) -> (contents: Contents, entries: [String: Entry]) {
        guard let bytes else { return (.missing, [:]) }
        let root: JSONNode
        do {
            root = try JSONNode.parse(bytes, opaqueBeyond: treeDepth)
        } catch {
            return (.corrupt(reason: "not valid JSON: \(error)"), [:])
        }
        guard case .object = root.value else { return (.corrupt(reason: "the JSON is \(root.kindName), not an object"), [:]) }
        var versions: [String: String] = [:]
        var entries: [String: Entry] = [:]
        if case .object(let stores)? = root[key]?.value {
            // A repeated store name: the last entry counts, as for every key (and as JSONEdit writes it).
            for store in stores {
                let entry = Entry(node: store.value)
                versions[store.key] = entry.version
                entries[store.key] = entry
            }
        }
        return (.valid(versions: versions), entries)
    }

    /// Records `version` and its `source` for the store `name`, keeping everything else in the file.
    ///
    /// A missing file is created. Under the preferences lock the file is read
    /// again, so a concurrent writer's change is never lost; a file found
    /// corrupt there is moved aside first and its new location returned. A file
    /// over the size limit is left untouched and nothing is recorded (logged as a warning).
    func record(version: String, source: SeedSource, for name: String, timeout: Duration, logger: Logger) throws(ReseedError) -> URL? {
        try record([.version(version), .source(source)], for: name, timeout: timeout, logger: logger)
    }

    /// Sets fields of the store `name`'s entry, in one atomic write, keeping every other byte of
    /// the file; as ``record(version:source:for:timeout:logger:)`` does.
    ///
    /// Each field of `clearing` the entry has with a value other than null is set to null in the
    /// same write (decided under the lock, from the bytes being edited).
    func record(
        _ changes: [Change], for name: String, clearing: [Entry.Field] = [], timeout: Duration, logger: Logger
    ) throws(ReseedError) -> URL? {
        let values = changes.map { (key: $0.field.rawValue, json: $0.json) }
        return try withLock(timeout: timeout) { target throws(ReseedError) -> URL? in
            var movedAside: URL?
            guard case .bytes(var bytes) = try readBytes() else {
                logger.warning("preferences file is over the size limit; left as it is, nothing recorded",
                               metadata: ["path": "\(url.path)", "limit": "\(Self.maximumFileSize)"])
                return nil
            }
            var root = bytes.flatMap { try? JSONNode.parse($0, opaqueBeyond: Self.treeDepth) }
            if bytes != nil, root.map({ if case .object = $0.value { false } else { true } }) ?? true {
                movedAside = try moveAsideLocked(target, logger: logger)
                bytes = nil
                root = nil
            }
            var values = values
            if let entry = root?[Self.key]?[name] {
                for field in clearing where entry[field.rawValue].map({ $0.value != .null }) ?? false { values.append((field.rawValue, "null")) }
            }
            let updated: [UInt8]
            if var edited = bytes, var parsed = root {
                for (index, value) in values.enumerated() {
                    edited = JSONEdit.set([Self.key, name, value.key], to: value.json, in: edited, root: parsed)
                    // Each splice moves the offsets after it: parse again before the next one.
                    if index < values.count - 1 {
                        parsed = try during(.recordVersion, path: url.path) { try JSONNode.parse(edited, opaqueBeyond: Self.treeDepth) }
                    }
                }
                updated = edited
            } else {
                let entry = values.map { JSONNode.quote($0.key) + ": " + $0.json }.joined(separator: ", ")
                updated = Array("{\n  \(JSONNode.quote(Self.key)): {\(JSONNode.quote(name)): {\(entry)}}\n}\n".utf8)
            }
            try during(.recordVersion, path: target.path) {
                try target.directory.removeTemporaryFiles { StoreLayout.isTemporary($0, of: target.name) }
                try target.directory.replaceAtomically(target.name, with: updated, through: StoreLayout.temporaryName(of: target.name))
            }
            return movedAside
        }
    }

    /// Moves a corrupt file aside (never deleting it); returns where, or nil when it was no longer corrupt.
    func moveAsideIfCorrupt(timeout: Duration, logger: Logger) throws(ReseedError) -> URL? {
        try withLock(timeout: timeout) { target throws(ReseedError) in
            guard case .bytes(let bytes) = try readBytes(), case .corrupt = Self.contents(of: bytes) else { return nil }
            return try moveAsideLocked(target, logger: logger)
        }
    }

    private func moveAsideLocked(_ target: Target, logger: Logger) throws(ReseedError) -> URL {
        let stamp = Self.timestamp()
        for attempt in 1...1000 {
            let asideName = PreferencesLayout(fileName: target.name).corruptName(stamp: stamp, attempt: attempt)
            do {
                try target.directory.renameNoReplace(target.name, to: asideName)
                try target.directory.sync()
                let aside = target.directory.url.appendingPathComponent(asideName, isDirectory: false)
                logger.warning("preferences file was not a JSON object; moved aside", metadata: ["from": "\(target.path)", "to": "\(aside.path)"])
                return aside
            } catch let failure as FileSystemFailure where failure.errno == .fileExists {
                continue
            } catch {
                throw ReseedError.wrapping(error, step: .readPreferences, path: target.path)
            }
        }
        throw ReseedError(.io, step: .readPreferences, path: target.path, errno: .fileExists, message: "cannot find a free name to move the corrupt preferences aside")
    }

    /// The file writes replace: the preferences file itself, or the file a symbolic link in its place points to.
    struct Target {
        let directory: Directory
        let name: String
        var path: String { directory.path(name) }
    }

    /// Runs `body` holding the preferences lock (always beside ``url``, link or not) with the file to write.
    private func withLock<T>(timeout: Duration, _ body: (Target) throws(ReseedError) -> T) throws(ReseedError) -> T {
        let directoryURL = url.deletingLastPathComponent()
        let directory = try during(.prepareDirectory, path: directoryURL.path) {
            try fileSystem.openDirectory(directoryURL, create: true)
        }
        let lock = try StoreLock.acquire(layout.lock, in: directory, timeout: timeout,
                                         timeoutMessage: "another process held the preferences lock for longer than \(timeout)")
        defer { lock.release() }
        return try body(try target(in: directory))
    }

    /// Follows a symbolic link in the file's place to the file it names (through every link of a
    /// chain), so that a write replaces that file beside itself and the link keeps pointing at it.
    private func target(in directory: Directory) throws(ReseedError) -> Target {
        let info = try during(.recordVersion, path: url.path) { try directory.status(fileName) }
        guard let info, info.kind == .symbolicLink else { return Target(directory: directory, name: fileName) }
        let resolved: String
        do {
            resolved = try FileSystem.resolvingSymbolicLinks(url.path)
        } catch {
            throw ReseedError(.io, step: .recordVersion, path: url.path, errno: error,
                              message: "the preferences file is a symbolic link whose target cannot be reached")
        }
        let targetURL = URL(fileURLWithPath: resolved, isDirectory: false)
        let targetDirectory = try during(.recordVersion, path: resolved) {
            try fileSystem.openDirectory(targetURL.deletingLastPathComponent(), create: false)
        }
        return Target(directory: targetDirectory, name: targetURL.lastPathComponent)
    }

    static func timestamp(_ date: Date = Date()) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return formatter.string(from: date)
    }
}
