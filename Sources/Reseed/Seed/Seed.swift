import Foundation
import ReseedSystem

/// A seed on disk: its manifest and the database file the manifest names, beside it.
///
/// ```swift
/// let seed = try Seed(at: Bundle.main.url(forResource: "SeedData", withExtension: nil)!)
/// print(seed.manifest.version)
/// ```
public struct Seed: Sendable, Hashable {
    /// The manifest file.
    public var manifestURL: URL
    /// The manifest's content.
    public var manifest: SeedManifest
    /// The seed database: the manifest's `file`, in the manifest's folder.
    public var fileURL: URL { manifestURL.deletingLastPathComponent().appendingPathComponent(manifest.file, isDirectory: false) }

    /// Reads the seed at `url`: a manifest file, a folder holding exactly one `*.manifest.json`,
    /// or the seed file itself, `<name>.sqlite` (or `<name>.sqlite.gz`, compressed), whose
    /// `<name>.manifest.json` is beside it.
    ///
    /// - Throws: ``ReseedError`` ``ReseedError/Code/seedNotFound`` when nothing is
    ///   there, a folder holds no manifest or several, or a `.sqlite` or `.sqlite.gz` file has no
    ///   manifest naming it beside it; ``ReseedError/Code/invalidManifest`` for a bad manifest.
    public init(at url: URL) throws(ReseedError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw ReseedError(.seedNotFound, step: .readManifest, path: url.path, message: "no seed manifest or folder here")
        }
        let manifestURL: URL
        // Given the database file itself, the manifest beside it must name it.
        let fileName = url.lastPathComponent
        let seedSuffix = ([".sqlite"] + Codecs.all.map { ".sqlite" + $0.fileSuffix }).first { fileName.hasSuffix($0) && fileName.count > $0.count }
        let databaseFile = !isDirectory.boolValue && seedSuffix != nil ? fileName : nil
        if isDirectory.boolValue {
            let names = (try? FileSystem.directoryNames(url.path)) ?? []
            let manifests = names.filter { $0.hasSuffix(SeedManifest.fileSuffix) && !$0.hasPrefix(".") }.sorted()
            guard manifests.count == 1 else {
                throw ReseedError(
                    .seedNotFound, step: .readManifest, path: url.path,
                    message: manifests.isEmpty
                        ? "folder holds no *\(SeedManifest.fileSuffix)"
                        : "folder holds \(manifests.count) manifests (\(manifests.joined(separator: ", "))); name one")
            }
            manifestURL = url.appendingPathComponent(manifests[0], isDirectory: false)
        } else if let seedSuffix {
            let name = String(fileName.dropLast(seedSuffix.count))
            manifestURL = url.deletingLastPathComponent().appendingPathComponent(name + SeedManifest.fileSuffix, isDirectory: false)
            guard FileManager.default.fileExists(atPath: manifestURL.path) else {
                throw ReseedError(.seedNotFound, step: .readManifest, path: url.path, message: StoreHeader.fileIsNotADatabase(url.path)
                    ? "not a SQLite database (its first bytes are not the SQLite header), and no manifest \(manifestURL.lastPathComponent) is beside it"
                    : "this is a seed database; its manifest \(manifestURL.lastPathComponent) is not beside it")
            }
        } else {
            manifestURL = url
        }
        self.manifestURL = manifestURL.standardizedFileURL
        self.manifest = try SeedManifest.read(from: manifestURL)
        if let databaseFile, manifest.file != databaseFile {
            throw ReseedError(.seedNotFound, step: .readManifest, path: url.path,
                              message: "the manifest beside it, \(manifestURL.lastPathComponent), names another file: \(manifest.file)")
        }
    }

    /// A seed whose manifest has already been read.
    public init(manifestURL: URL, manifest: SeedManifest) {
        self.manifestURL = manifestURL
        self.manifest = manifest
    }
}

extension Seed {
    /// Opens the seed file for reading, refusing anything that is not a regular file (a FIFO, a device).
    ///
    /// - Throws: ``ReseedError`` at `step`: ``ReseedError/Code/seedNotFound`` when the file is
    ///   missing, ``ReseedError/Code/io`` otherwise, naming the file.
    package func openFile(at step: ReseedError.Step) throws(ReseedError) -> OwnedDescriptor {
        let path = fileURL.path
        do {
            return try FileSystem.openRegularFile(path)
        } catch {
            throw ReseedError(error.errno == .noSuchFileOrDirectory ? .seedNotFound : .io, step: step, path: path, errno: error.errno,
                              message: error.reason.map { "cannot use the seed: \($0)" } ?? "cannot open the seed")
        }
    }
}
