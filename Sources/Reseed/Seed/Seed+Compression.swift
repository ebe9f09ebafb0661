import Foundation
import ReseedSystem
import SystemPackage

extension Seed {
    /// Whether the seed file is compressed (the manifest's `compression`): it then holds the
    /// database as gzip, and the manifest's size and SHA-256 are those of the database.
    public var isCompressed: Bool { manifest.compression != nil }

    /// Copies the seed database from `source` (the seed file, opened by ``openFile(at:)``) into
    /// `destination`, decompressing it when the seed is compressed.
    ///
    /// At most one byte more than the manifest's size is copied: a longer uncompressed file shows
    /// as `bytes > size`, and a compressed one that inflates past the size (a gzip bomb) stops
    /// with ``CodecFailure/tooLong(limit:)``. A compressed seed is always hashed: the
    /// decompression reads every byte anyway, and gzip's CRC-32 proves only that the stream is
    /// whole, not that it is the seed the manifest describes.
    ///
    /// - Parameters:
    ///   - hashing: whether to compute the SHA-256 of the database (always, when compressed).
    ///   - progress: called with the database bytes written so far.
    /// - Throws: ``CodecFailure``: ``CodecFailure/io(_:)`` for a failed system call, the others
    ///   for a compressed file that does not decompress (a verdict on the seed's bytes).
    package func copyDatabase(
        from source: borrowing OwnedDescriptor, to destination: borrowing OwnedDescriptor, hashing: Bool,
        progress: (@Sendable (Int64) -> Void)? = nil
    ) throws(CodecFailure) -> FileCopier.Result {
        switch manifest.compression {
        case nil:
            do {
                return try FileCopier(hashing: hashing, limit: manifest.size + 1, progress: progress).copy(from: source, to: destination)
            } catch {
                throw .io(error)
            }
        case let compression?:
            return try compression.codec.decompress(from: source, to: destination, limit: manifest.size, hashing: true, progress: progress)
        }
    }

    /// Runs `body` with the path of a database file holding this seed: the seed file itself when
    /// it is not compressed, else a decompressed copy, removed when `body` returns or throws
    /// (see ``databaseFile(temporaryDirectory:checking:step:)``).
    ///
    /// ```swift
    /// let tables = try seed.withDatabaseFile { path throws(ReseedError) in try tableNames(at: path) }
    /// ```
    /// - Throws: what ``databaseFile(temporaryDirectory:checking:step:)`` throws, or what `body` threw.
    func withDatabaseFile<T>(
        temporaryDirectory: URL? = nil, checking: Bool = true, step: ReseedError.Step = .verify,
        _ body: (String) throws(ReseedError) -> T
    ) throws(ReseedError) -> T {
        let file = try databaseFile(temporaryDirectory: temporaryDirectory, checking: checking, step: step)
        return try body(file.path)
    }

    /// A database file holding this seed, for SQLite to open: the seed file itself when it is not
    /// compressed, else a decompressed copy that the returned value removes when it ends.
    ///
    /// The copy is made in `temporaryDirectory` (default the system's temporary folder) under a
    /// fresh `.<name>.sqlite.reseed-tmp-*` name, created exclusively, never fsynced (nothing
    /// keeps it). It is always hashed; when `checking`, its size and SHA-256 must be the
    /// manifest's. An uncompressed seed file is handed over as it is, unchecked, as before.
    ///
    /// - Parameters:
    ///   - checking: whether the decompressed copy must match the manifest's size and SHA-256
    ///     (`reseed verify` looks at a mismatch itself). Default true.
    ///   - step: the step errors name. Default ``ReseedError/Step/verify``.
    /// - Throws: ``ReseedError``: ``ReseedError/Code/verificationFailed`` naming the seed file
    ///   when the compressed file does not decompress or (when `checking`) does not match the
    ///   manifest; ``ReseedError/Code/seedNotFound`` when it is missing; ``ReseedError/Code/io``.
    package func databaseFile(temporaryDirectory: URL? = nil, checking: Bool = true, step: ReseedError.Step = .verify) throws(ReseedError) -> DatabaseFile {
        guard isCompressed else { return DatabaseFile(path: fileURL.path) }
        let folder = temporaryDirectory ?? FileManager.default.temporaryDirectory
        let directory = try during(step, path: folder.path) { try FileSystem().openDirectory(folder, create: false) }
        let source = try openFile(at: step)
        let name = StoreLayout.temporaryName(of: manifest.storeFileName)
        let file = try during(step, path: fileURL.path) { () throws -> DatabaseFile in
            let created = try directory.createExclusive(name)
            // From here on the value owns the name, and removes it however this ends.
            var file = DatabaseFile(path: directory.path(name), copied: nil, temporary: (directory, name))
            file.copied = try directory.fileSystem.performCoding(.copy, file.path) { () throws(CodecFailure) in
                try copyDatabase(from: source, to: created, hashing: true)
            }
            do throws(Errno) {
                try created.close()
            } catch {
                throw FileSystemFailure(operation: "close", path: file.path, errno: error)
            }
            return file
        }
        if checking, let copied = file.copied, copied.bytes != manifest.size || copied.sha256 != manifest.sha256 {
            throw ReseedError(.verificationFailed, step: step, path: fileURL.path, message:
                "the compressed seed decompresses to \(copied.bytes) bytes with SHA-256 \(copied.sha256 ?? "?"); the manifest says \(manifest.size) bytes, \(manifest.sha256)")
        }
        return file
    }

    /// A database file holding a seed (see ``Seed/databaseFile(temporaryDirectory:checking:step:)``):
    /// a decompressed copy is removed when this value ends.
    package struct DatabaseFile: ~Copyable {
        /// The file's path.
        package let path: String
        /// What the decompression wrote (size, SHA-256); nil for an uncompressed seed, opened as it is.
        package fileprivate(set) var copied: FileCopier.Result?
        fileprivate let temporary: (directory: Directory, name: String)?

        /// The database file at `path`, used as it is and never removed.
        package init(path: String) {
            self.init(path: path, copied: nil, temporary: nil)
        }

        fileprivate init(path: String, copied: FileCopier.Result?, temporary: (directory: Directory, name: String)?) {
            self.path = path
            self.copied = copied
            self.temporary = temporary
        }

        deinit {
            if let temporary { _ = try? temporary.directory.remove(temporary.name) }
        }
    }
}

extension CodecFailure {
    /// The failure as a ``ReseedError`` at `step` about `path` (the compressed seed file):
    /// ``ReseedError/Code/verificationFailed`` for a stream that does not decompress or
    /// decompresses to too much, ``ReseedError/Code/io`` for a failed system call or zlib.
    func reseedError(step: ReseedError.Step, path: String?) -> ReseedError {
        switch self {
        case .io(let errno):
            ReseedError(.io, step: step, path: path, errno: errno, message: "reading or writing the seed failed")
        case .invalid, .tooLong:
            ReseedError(.verificationFailed, step: step, path: path, message: "the compressed seed is refused: \(self)")
        case .library:
            ReseedError(.io, step: step, path: path, message: "decompressing the seed failed: \(self)")
        }
    }
}
