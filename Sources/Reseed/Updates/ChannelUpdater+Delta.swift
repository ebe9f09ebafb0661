import Foundation
import GRDB
import ReseedSystem

extension ChannelUpdater {
    /// A channel's delta, downloaded and decompressed into the data directory, ready for the install pipeline.
    struct DeltaFile: Sendable {
        /// The decompressed delta's name in the data directory, and its path.
        var name: String
        var path: String
        /// Removes the delta's download and the decompressed file.
        var removeFiles: @Sendable () -> Void
    }

    /// Downloads `delta` and decompresses it into the data directory, for the install pipeline to
    /// apply to a copy of the installed seed (``InstallPipeline/Source/delta(deltaPath:)``).
    ///
    /// The files it makes are named like partial downloads (`.<name>.sqlite.reseed-download-…`):
    /// a crash leaves them for the next update to remove, never for an install's clean-up, which
    /// could run in another process while this one works.
    ///
    /// `received` counts the delta's bytes this call downloaded, whether or not it then succeeds.
    ///
    /// - Throws: a disk too short for the delta's download, decompression and install (``DiskSpace``)
    ///   as the environment's failure, before anything is downloaded; any other failure as the source's
    ///   (any failure here leaves the store as it was, and the caller falls back to the full seed
    ///   after a failure of the source's).
    func fetchDelta(_ delta: ChannelManifest.Delta, of manifest: ChannelManifest, in context: Context, received: inout Int64)
        async throws(InstallPipeline.Failure) -> DeltaFile
    {
        let directory = context.directory
        let file = delta.file.smallest
        let download = SeedDownload(
            store: manifest.name, kind: "delta", size: file.size, sha256: file.sha256, url: channelURL.appendingPathComponent(file.file),
            directory: directory, transfer: configuration.transfer(), progress: downloadProgress,
            keeping: manifest.offeredSHA256)
        // Before any byte: a disk too short for the delta is shorter still for the full seed, so this
        // failure is not the source's (no fallback).
        try InstallPipeline.during(.environment) { () throws(ReseedError) in
            let installedSize = try DiskSpace.installedSize(of: StoreLayout(store: manifest.name).storeFileName, in: directory)
            try DiskSpace(purpose: "download and install \(manifest.name) \(manifest.version) from a delta", needed: DiskSpace.deltaUpdate(
                deltaSize: file.size, alreadyDownloaded: download.alreadyDownloaded, installedSize: installedSize)).check(in: directory)
        }
        let downloaded: SeedDownload.Result
        do {
            downloaded = try await download.run()
        } catch {
            throw InstallPipeline.Failure(error, origin: .source)
        }
        received += downloaded.received
        let deltaName = StoreLayout(store: manifest.name).deltaName(sha256: file.sha256)
        let removeFiles: @Sendable () -> Void = {
            download.removeFiles()
            for file in [deltaName] + StoreLayout.sidecars(of: deltaName) { _ = try? directory.remove(file) }
        }
        do {
            try await offload("reseed-delta") { () throws(InstallPipeline.Failure) in
                try InstallPipeline.during(.source) { () throws(ReseedError) in
                    try self.decompress(downloaded.file, encoding: file.encoding, into: deltaName, limit: manifest.size, in: directory)
                }
            }
        } catch {
            removeFiles()
            throw error
        }
        return DeltaFile(name: deltaName, path: directory.path(deltaName), removeFiles: removeFiles)
    }

    /// Decompresses the downloaded delta into a new file `name` (never through a name someone
    /// prepared: removed, then created with `O_EXCL`), at most `limit` bytes, through the file-system
    /// seam as the install's own decompression.
    private func decompress(_ compressed: String, encoding: String, into name: String, limit: Int64, in directory: Directory) throws(ReseedError) {
        let path = directory.path(name)
        guard let codec = Codecs.named(encoding) else {
            // The manifest's reader skips deltas in an encoding it does not know: only a bug gets here.
            throw ReseedError(.invalidManifest, step: .applyDelta, path: directory.path(compressed), message: "the delta is encoded as '\(encoding)', which this Reseed does not read")
        }
        try during(.applyDelta, path: path) {
            _ = try directory.remove(name)
            let output = try directory.createExclusive(name)
            let input = try FileSystem.openRegularFile(directory.path(compressed))
            _ = try directory.fileSystem.performCoding(.copy, path) { () throws(CodecFailure) in
                try codec.decompress(from: input, to: output, limit: limit, hashing: false, progress: nil)
            }
        }
    }
}

extension ChannelManifest {
    /// The SHA-256 of every file the manifest offers: the seed, its compressed forms, the deltas in each encoding.
    var offeredSHA256: Set<String> {
        Set([facts.sha256] + (compressed?.encodings ?? []).map(\.sha256) + deltas.flatMap(\.file.encodings).map(\.sha256))
    }
}
