import Foundation

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

    /// Reads the seed at `url`: a manifest file, or a folder holding exactly one `*.manifest.json`.
    ///
    /// - Throws: ``ReseedError`` ``ReseedError/Code/seedNotFound`` when nothing is
    ///   there or a folder holds no manifest or several;
    ///   ``ReseedError/Code/invalidManifest`` for a bad manifest.
    public init(at url: URL) throws(ReseedError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw ReseedError(.seedNotFound, step: .readManifest, path: url.path, message: "no seed manifest or folder here")
        }
        let manifestURL: URL
        if isDirectory.boolValue {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
            let manifests = names.filter { $0.hasSuffix(SeedManifest.fileSuffix) && !$0.hasPrefix(".") }.sorted()
            guard manifests.count == 1 else {
                throw ReseedError(
                    .seedNotFound, step: .readManifest, path: url.path,
                    message: manifests.isEmpty
                        ? "folder holds no *\(SeedManifest.fileSuffix)"
                        : "folder holds \(manifests.count) manifests (\(manifests.joined(separator: ", "))); name one")
            }
            manifestURL = url.appendingPathComponent(manifests[0], isDirectory: false)
        } else {
            manifestURL = url
        }
        self.manifestURL = manifestURL.standardizedFileURL
        self.manifest = try SeedManifest.read(from: manifestURL)
    }

    /// A seed whose manifest has already been read.
    public init(manifestURL: URL, manifest: SeedManifest) {
        self.manifestURL = manifestURL
        self.manifest = manifest
    }
}
