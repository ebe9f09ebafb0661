import Foundation
import Reseed
import ReseedSystem

extension ChannelPublisher {
    /// An earlier release the channel offered, which may get a delta to the new seed.
    struct EarlierRelease {
        var version: String
        /// Its content hash, when the channel stated it.
        var contentHash: String?
        /// Its seed file in the channel folder.
        var file: String
        /// The name of the delta from it to the seed being published.
        var deltaFile: String
    }

    /// A delta not published, and why.
    struct Skipped: Error {
        var message: String
    }

    /// The manifest the folder's `channel.json` offers now; nil when there is none, or one that does not parse.
    func currentManifest(in directory: Directory) -> ChannelManifest? {
        let path = directory.path(ChannelManifest.fileName)
        guard let file = try? FileSystem.openRegularFile(path),
              let bytes = try? file.read(count: ChannelManifest.maximumFileSize + 1, at: 0),
              bytes.count <= ChannelManifest.maximumFileSize else { return nil }
        return try? ChannelManifest.decode(bytes, source: path)
    }

    /// Refuses to publish `manifest` over the `current` one of the same store unless its version is newer
    /// (``SeedVersion/isNewer(than:)``, the order devices install by) or ``allowsDowngrade``: a lower
    /// version would roll the channel back, and devices that have the current one refuse it.
    func checkNewer(_ manifest: ChannelManifest, than current: ChannelManifest?, in directory: Directory) throws(PackagingError) {
        guard let current, current.name == manifest.name, current.version != manifest.version, !allowsDowngrade else { return }
        let new = SeedVersion(manifest.version), offered = SeedVersion(current.version)
        guard !new.isNewer(than: offered) else { return }
        let why = new.isOrdered && offered.isOrdered
            ? "\(new) is not newer, so publishing it would roll the channel back (devices that have \(offered) refuse it)"
            : "\(new) cannot be ordered against it: a version is \(SeedVersion.grammar)"
        throw PackagingError(.invalidArgument, step: .publish, path: directory.path(ChannelManifest.fileName), message:
            "the channel offers \(current.name) \(offered); \(why)",
            advice: "publish a higher version, or allow the downgrade on purpose (reseed publish --allow-downgrade)")
    }

    /// The releases `previous` (the current `channel.json`) offered (its seed, then the starting points
    /// of its deltas), newest first, without the version being published. A folder without a manifest,
    /// or with one that does not parse, has none: the publish then offers no delta.
    func previousReleases(of manifest: ChannelManifest, after previous: ChannelManifest?) -> [EarlierRelease] {
        guard let previous, previous.name == manifest.name else { return [] }
        let candidates = [(previous.version, previous.contentHash)] + previous.deltas.map { ($0.fromVersion, Optional($0.fromContentHash)) }
        var seen: Set<String> = [manifest.version]
        return candidates.compactMap { version, contentHash in
            guard seen.insert(version).inserted else { return nil }
            return EarlierRelease(
                version: version, contentHash: contentHash, file: ChannelManifest.seedFileName(name: manifest.name, version: version),
                deltaFile: ChannelManifest.deltaFileName(name: manifest.name, version: manifest.version, fromVersion: version))
        }
    }

    /// The content hash and the incremental content hash of the published seed file; each must be
    /// the one its manifest states, if any.
    func checkContentHash(of file: String, seed: Seed, in directory: Directory) throws(PackagingError) -> (contentHash: String, incremental: String) {
        let path = directory.path(file)
        let computed = try packaging(.publish, path: path) { try SeedContentHash.computeWithIncremental(path: path) }
        for (name, stated, actual) in [("content hash", seed.manifest.contentHash, computed.contentHash),
                                       ("incremental content hash", seed.manifest.incrementalContentHash, computed.incremental.hash)] {
            if let stated, stated != actual {
                throw PackagingError(.verificationFailed, step: .publish, path: seed.fileURL.path,
                                     message: "the seed's \(name) is \(actual); its manifest says \(stated)")
            }
        }
        return (computed.contentHash, computed.incremental.hash)
    }

    /// Builds the delta from `release` to the seed `manifest` describes, checks it and publishes it
    /// compressed; or says why not.
    func publishDelta(from release: EarlierRelease, to manifest: ChannelManifest, in directory: Directory)
        throws(PackagingError) -> Swift.Result<(ChannelManifest.Delta, SeedDeltaBuilder.Built), Skipped>
    {
        guard let info = try? directory.status(release.file), info.kind == .regular else {
            return .failure(Skipped(message: "its seed file \(release.file) is no longer in the channel folder"))
        }
        let raw = StoreLayout.temporaryName(of: release.deltaFile)
        defer {
            for file in [raw] + StoreLayout.sidecars(of: raw) { _ = try? directory.remove(file) }
        }
        let outcome = try SeedDeltaBuilder.build(
            from: directory.path(release.file), to: directory.path(manifest.file), into: directory.path(raw),
            newContentHash: manifest.contentHash, newIncrementalContentHash: manifest.incrementalContentHash)
        let summary: SeedDeltaBuilder.Built
        switch outcome {
        case .notExpressible(let reason): return .failure(Skipped(message: reason))
        case .built(let built): summary = built
        }
        if let stated = release.contentHash, stated != summary.fromContentHash {
            return .failure(Skipped(message: "\(release.file) has content hash \(summary.fromContentHash), the channel said \(stated)"))
        }
        let full = manifest.compressed?.size ?? manifest.size
        // Checked before the file takes its name: a delta too heavy to publish never replaces one the live channel.json names.
        guard let file = try publishEncoded(of: directory.path(raw), as: release.deltaFile, in: directory, replacing: true, limit: full / 2) else {
            return .failure(Skipped(message: "the delta weighs more than half the \(manifest.compressed == nil ? "" : "compressed ")seed's \(full) bytes"))
        }
        return .success((ChannelManifest.Delta(fromVersion: release.version, fromContentHash: summary.fromContentHash, file: file), summary))
    }

    /// Compresses the file at `sourcePath` with `codec` into the channel file `name` (temp file, fsync, rename, folder
    /// fsync), unless the folder holds it already with the same bytes. When `name` exists with other
    /// bytes: an error (a client may be downloading it: a published file never changes), unless
    /// `replacing` (a delta, which only this publish's manifest will name; a client downloading the
    /// old one finds its SHA-256 wrong and falls back to the full seed).
    /// Returns nil, writing nothing under `name`, when the compressed file is over `limit` bytes.
    func publishCompressed(of sourcePath: String, as name: String, with codec: any Codec, in directory: Directory, replacing: Bool = false, limit: Int64 = .max)
        throws(PackagingError) -> ChannelManifest.File?
    {
        let temporary = StoreLayout.temporaryName(of: name)
        defer { _ = try? directory.remove(temporary) }
        let target = directory.path(name)
        let written = try packaging(.publish, path: target) { () throws -> FileFacts in
            let source = try FileSystem.openRegularFile(sourcePath)
            try directory.writeTemporary(temporary, write: { destination in
                _ = try codec.compress(from: source, to: destination)
            }, check: { _ in })
            return try FileFacts(path: directory.path(temporary))
        }
        guard written.size <= limit else { return nil }
        if try packaging(.publish, path: target, { try directory.status(name) }) != nil {
            let existing = try packaging(.publish, path: target) { try FileFacts(path: target) }
            if existing.sha256 == written.sha256 {
                return ChannelManifest.File(encoding: codec.name, file: name, size: existing.size, sha256: existing.sha256)
            }
            guard replacing else {
                throw PackagingError(.invalidArgument, step: .publish, path: target,
                                     message: "the channel already holds \(name) with other bytes; a published file never changes (publish a new version)")
            }
        }
        try packaging(.publish, path: target) {
            try directory.rename(temporary, to: name)
            try directory.sync()
        }
        return ChannelManifest.File(encoding: codec.name, file: name, size: written.size, sha256: written.sha256)
    }
}
