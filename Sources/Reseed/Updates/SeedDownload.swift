import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ReseedSystem
import Synchronization
import SystemPackage

/// A file a channel manifest names (the seed, its compressed form, a delta), downloaded into the
/// data directory; a broken download resumes.
///
/// The partial file has a stable name, `.<name>.sqlite.reseed-download-<first 16 hex digits
/// of the SHA-256>`, so it survives between tries (an install's clean-up removes only
/// `.<name>.sqlite.reseed-tmp-*`). Beside it, `<partial>.etag` keeps the seed's strong `ETag`
/// (or strong `Last-Modified`) from the response that started it: a resumed request asks for the rest
/// with `Range` and `If-Range`, so a file that changed on the server comes back whole
/// (`200`) instead of being spliced; a server that cannot answer the range (`416`, or a `206` for
/// another range) is asked once more for the whole file. A transfer cut for its slowness
/// (``HTTPTransfer/MinimumRate``) keeps what arrived, like a broken one. Partial files of anything the current manifest does not
/// offer are removed first.
/// Never more than the manifest's size is written: a response that announces or sends
/// more is refused.
///
/// Neither file is written through a name someone else prepared: a partial file is resumed
/// only when it is a regular file with one link, owned by this process's user (`O_NOFOLLOW`,
/// then `fstat`); anything else under its name (a hard or symbolic link to another file, a
/// FIFO, another user's file) is removed and the file created afresh with `O_EXCL`. The
/// validator is read under the same conditions and always written to a new file (`O_EXCL`).
struct SeedDownload: Sendable {
    /// What a download did.
    struct Result: Sendable {
        /// The downloaded file's name in the data directory.
        var file: String
        /// Bytes received by this call.
        var received: Int64
        /// Where this call resumed a partial file, when it did.
        var resumedFrom: Int64?
    }

    /// What is downloaded: the store's name, and the file's size and SHA-256 as the signed manifest states them.
    struct Expected: Sendable {
        var store: String
        var size: Int64
        var sha256: String
        /// What the file is, as a sentence names it: "seed", "compressed seed", "delta".
        var kind: String
    }

    let manifest: Expected
    /// The file's URL in the channel.
    let url: URL
    let directory: Directory
    let transfer: HTTPTransfer
    let progress: (@Sendable (Int64, Int64) -> Void)?
    /// The SHA-256 of the channel's other files (the seed, its compressed form, the deltas): their
    /// partial downloads are kept, so that trying a delta first never throws away a half-downloaded seed.
    var keeping: Set<String> = []

    /// A download of `file` (the manifest's seed, its compressed form or a delta) of the store `store`.
    init(store: String, kind: String, size: Int64, sha256: String, url: URL, directory: Directory, transfer: HTTPTransfer,
         progress: (@Sendable (Int64, Int64) -> Void)?, keeping: Set<String> = []) {
        self.manifest = Expected(store: store, size: size, sha256: sha256, kind: kind)
        self.url = url
        self.directory = directory
        self.transfer = transfer
        self.progress = progress
        self.keeping = keeping
    }

    /// `.<name>.sqlite.reseed-download-`: the prefix of every partial download of the store.
    static func prefix(forStore name: String) -> String { StoreLayout(store: name).downloadPrefix }

    /// The partial file's name for a file whose SHA-256 is `sha256`.
    static func partialName(store: String, sha256: String) -> String { StoreLayout(store: store).downloadName(sha256: sha256) }

    var partialName: String { Self.partialName(store: manifest.store, sha256: manifest.sha256) }
    var validatorName: String { StoreLayout.validatorName(of: partialName) }
    private var partialPath: String { directory.path(partialName) }

    /// The bytes a partial file of a broken try holds (`lstat`, nothing opened): what ``run()`` will
    /// not download again. 0 when there is none, or one it would not resume (not a plain regular
    /// file, or longer than the file).
    var alreadyDownloaded: Int64 {
        guard let info = try? directory.status(partialName), info.kind == .regular, info.linkCount == 1,
              info.size <= manifest.size else { return 0 }
        return info.size
    }

    /// Downloads what is missing of the seed and checks its size and SHA-256.
    ///
    /// - Throws: ``ReseedError``: ``ReseedError/Code/download`` or
    ///   ``ReseedError/Code/downloadTooSlow`` (step `download`) when the transfer fails, the
    ///   partial file then kept for the next try;
    ///   ``ReseedError/Code/verificationFailed`` when the whole file does not match the
    ///   manifest, the partial file then removed.
    func run() async throws(ReseedError) -> Result {
        try removeOtherVersions()
        // Shared with the sink and the verification's thread; closed when the last of them lets go.
        let file = SharedDescriptor(try openPartial())
        var have = try during(.download, path: partialPath) {
            try directory.fileSystem.reading("fstat", partialPath) { () throws(Errno) in try file.descriptor.status().size }
        }
        if have > manifest.size {
            try truncate(file)
            have = 0
        }
        var resumedFrom: Int64?
        var received: Int64 = 0
        // A second round, for the whole file, only when the server could not answer the partial
        // file's range: a 416, or a 206 for another range than the one asked for.
        for round in 1...2 where have < manifest.size {
            let sink = DownloadSink(file: file, directory: directory, name: partialName, start: have, size: manifest.size, url: url, progress: progress)
            var headers: [String: String] = [:]
            if have > 0 {
                headers["Range"] = "bytes=\(have)-"
                if let validator = readValidator() { headers["If-Range"] = validator }
            }
            do {
                _ = try await transfer.get(url, headers: headers, step: .download, onResponse: { response throws(ReseedError) in
                    try sink.begin(response)
                    if response.status == 200, let validator = Self.rangeValidator(response) {
                        writeValidator(validator)
                    }
                }, onData: { data throws(ReseedError) in try sink.write(data) })
            } catch {
                received += sink.received
                if sink.startsOver, round == 1 {
                    try truncate(file)
                    have = 0
                    continue
                }
                if sink.overflowed { removeFiles() }
                try? directory.sync(file.descriptor, name: partialName)
                var failure = error
                if error.code == .download || error.code == .downloadTooSlow, error.httpStatus == nil, !sink.overflowed, sink.offset > 0 {
                    failure.message += "; \(sink.offset) of \(manifest.size) bytes are kept and the next try resumes"
                }
                throw failure
            }
            received += sink.received
            have = sink.offset
            resumedFrom = sink.resumedFrom
            guard have == manifest.size else {
                throw ReseedError(.download, step: .download, url: url,
                                  message: "the server ended the file after \(have) of \(manifest.size) bytes; the next try resumes")
            }
        }
        // Hashing the whole seed (and the fsync before) on a thread of its own, not the app's few pool threads.
        try await offload("reseed-verify") { () throws(ReseedError) in try self.verify(file.descriptor) }
        return Result(file: partialName, received: received, resumedFrom: resumedFrom)
    }

    /// What `If-Range` may carry: a strong validator (RFC 9110 §13.1.5), a strong `ETag` or a strong date.
    static func rangeValidator(_ response: HTTPTransfer.Response) -> String? {
        if let etag = response.header("ETag"), !etag.hasPrefix("W/") { return etag }
        return response.strongLastModified
    }

    /// The size and SHA-256 of the whole file, read once; a file that does not match is removed.
    private func verify(_ file: borrowing OwnedDescriptor) throws(ReseedError) {
        let digest = try during(.verify, path: partialPath) {
            try directory.sync(file, name: partialName)
            return try directory.fileSystem.reading("read", partialPath) { () throws(Errno) in try FileCopier.hash(file) }
        }
        guard digest.bytes == manifest.size, digest.sha256 == manifest.sha256 else {
            removeFiles()
            throw ReseedError(.verificationFailed, step: .verify, path: partialPath, url: url, message:
                "the downloaded \(manifest.kind) is \(digest.bytes) bytes with SHA-256 \(digest.sha256); the signed channel manifest says \(manifest.size) bytes, \(manifest.sha256)")
        }
    }

    /// Removes every partial download of the store `store` and the files made from them (after an
    /// install: a delta that failed on the way may have left its own).
    static func removeAll(store: String, in directory: Directory) {
        let prefix = Self.prefix(forStore: store)
        for name in (try? directory.names()) ?? [] where name.hasPrefix(prefix) { _ = try? directory.remove(name) }
    }

    /// Removes the partial file and its validator (after an install, or when they are worthless).
    func removeFiles() {
        _ = try? directory.remove(partialName)
        _ = try? directory.remove(validatorName)
    }

    private func removeOtherVersions() throws(ReseedError) {
        let prefix = Self.prefix(forStore: manifest.store)
        let kept = Set(keeping.map { Self.partialName(store: manifest.store, sha256: $0) } + [partialName])
        try during(.cleanUp, path: directory.url.path) {
            for name in try directory.names() where name.hasPrefix(prefix) {
                let partial = StoreLayout.download(validatedBy: name) ?? name
                if !kept.contains(partial) { try directory.remove(name) }
            }
        }
    }

    private func truncate(_ file: SharedDescriptor) throws(ReseedError) {
        try during(.download, path: partialPath) {
            try directory.truncate(file.descriptor, name: partialName)
        }
        _ = try? directory.remove(validatorName)
    }

    /// The partial file, resumed when it is our own regular file, else created afresh (`O_EXCL`).
    private func openPartial() throws(ReseedError) -> OwnedDescriptor {
        try during(.download, path: partialPath) {
            if let file = ownFile(partialName, access: .readWrite) { return file }
            _ = try directory.remove(partialName)
            return try directory.createExclusive(partialName)
        }
    }

    /// Opens `name` (never following a link) when it is a regular file with exactly one link,
    /// owned by this process's user; nil otherwise, and when it cannot be opened at all.
    private func ownFile(_ name: String, access: FileDescriptor.AccessMode) -> OwnedDescriptor? {
        // O_NONBLOCK: a FIFO under this name must not block the open; it is refused just below.
        guard let file = try? directory.open(name, access, options: [.noFollow, .nonBlocking]) else { return nil }
        guard let info = try? file.status(), info.kind == .regular, info.linkCount == 1, info.isOwnedByEffectiveUser else {
            return nil
        }
        return file
    }

    /// The validator kept beside the partial file, when it is our own file and one plausible header value.
    private func readValidator() -> String? {
        guard let file = ownFile(validatorName, access: .readOnly) else { return nil }
        guard let bytes = try? file.read(count: 1024, at: 0), !bytes.isEmpty,
              bytes.allSatisfy({ (0x20...0x7E).contains($0) }) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The validator is advisory (a wrong one only makes the server send the whole file again),
    /// so it is written without the ceremony of an atomic replace; but always into a new file
    /// (the old name removed, then `O_EXCL`), never through a link someone left under its name.
    private func writeValidator(_ validator: String) {
        _ = try? directory.remove(validatorName)
        guard let file = try? directory.createExclusive(validatorName) else { return }
        _ = try? directory.write(Array(validator.utf8), to: file, name: validatorName)
    }
}

/// Writes one response's body into the partial file at the right offset, within the manifest's size,
/// through the directory's file-system seam.
private final class DownloadSink: Sendable {
    private struct State {
        var offset: Int64
        var received: Int64 = 0
        var overflowed = false
        var resumedFrom: Int64?
        var startsOver = false
    }

    private let file: SharedDescriptor
    private let directory: Directory
    /// The partial file's name in `directory`.
    private let name: String
    private let start: Int64
    private let size: Int64
    private let url: URL
    private let progress: (@Sendable (Int64, Int64) -> Void)?
    private let state: Mutex<State>

    init(file: SharedDescriptor, directory: Directory, name: String, start: Int64, size: Int64, url: URL, progress: (@Sendable (Int64, Int64) -> Void)?) {
        self.file = file
        self.directory = directory
        self.name = name
        self.start = start
        self.size = size
        self.url = url
        self.progress = progress
        self.state = Mutex(State(offset: start))
    }

    var offset: Int64 { state.withLock { $0.offset } }
    var received: Int64 { state.withLock { $0.received } }
    var overflowed: Bool { state.withLock { $0.overflowed } }
    /// The offset the server resumed from (a `206`), when it did.
    var resumedFrom: Int64? { state.withLock { $0.resumedFrom } }
    /// True when the server could not answer the range asked for (a `416`, or a `206` whose
    /// `Content-Range` is another range): the partial file is worth nothing to this server.
    var startsOver: Bool { state.withLock { $0.startsOver } }

    private func refuse(_ message: String, status: Int? = nil) -> ReseedError {
        ReseedError(.download, step: .download, url: url, httpStatus: status, message: message)
    }

    /// Checks the status and headers: the whole file (200), the rest asked for (206), or a failure.
    func begin(_ response: HTTPTransfer.Response) throws(ReseedError) {
        let length = response.contentLength
        switch response.status {
        case 200:
            if let length, length != size {
                throw refuse("the server says the seed is \(length) bytes; the signed channel manifest says \(size)")
            }
            do {
                try directory.truncate(file.descriptor, name: name)
            } catch {
                throw ReseedError(.io, step: .download, path: directory.path(name), errno: (error as? FileSystemFailure)?.errno,
                                  message: "cannot truncate the partial download")
            }
            state.withLock { $0.offset = 0 }
        case 206:
            let range = response.header("Content-Range") ?? ""
            guard let first = Self.firstByte(range, total: size), first == start else {
                state.withLock { $0.startsOver = true }
                throw refuse("the server answered the range from byte \(start) with Content-Range '\(range)'")
            }
            if let length, start + length > size {
                throw refuse("the server would send \(length) bytes from byte \(start); the seed is \(size) bytes")
            }
            state.withLock { $0.resumedFrom = start }
        case 416:
            state.withLock { $0.startsOver = true }
            throw refuse("the server cannot send the partial download's rest (HTTP 416)", status: 416)
        default:
            throw refuse("HTTP \(response.status) \(HTTPURLResponse.localizedString(forStatusCode: response.status))", status: response.status)
        }
    }

    /// Appends one piece; refuses a piece that would take the file past the manifest's size.
    func write(_ data: Data) throws(ReseedError) {
        let offset = state.withLock { $0.offset }
        guard offset + Int64(data.count) <= size else {
            state.withLock { $0.overflowed = true }
            throw refuse("the server sent more than the \(size) bytes the signed channel manifest says; stopped")
        }
        do {
            try data.withUnsafeBytes { buffer in try directory.write(buffer, to: file.descriptor, at: offset, name: name) }
        } catch {
            throw ReseedError(.io, step: .download, path: directory.path(name), errno: (error as? FileSystemFailure)?.errno,
                              message: "cannot write the download")
        }
        let done = state.withLock { state in
            state.offset += Int64(data.count)
            state.received += Int64(data.count)
            return state.offset
        }
        progress?(done, size)
    }

    /// The first byte of `bytes <first>-<last>/<total>`, when the total is `total` or `*`.
    static func firstByte(_ contentRange: String, total: Int64) -> Int64? {
        let text = contentRange.trimmingCharacters(in: .whitespaces)
        guard text.hasPrefix("bytes ") else { return nil }
        let parts = text.dropFirst(6).split(separator: "/", maxSplits: 1)
        guard parts.count == 2, parts[1] == "*" || Int64(parts[1]) == total else { return nil }
        let bounds = parts[0].split(separator: "-", maxSplits: 1)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]), last == total - 1 else { return nil }
        return first
    }
}
