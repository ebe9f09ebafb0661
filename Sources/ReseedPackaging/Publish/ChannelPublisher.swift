import Foundation
import Reseed
import ReseedSystem
import SystemPackage

/// Publishes a seed to a channel folder, for any static HTTP host to serve (`reseed publish`).
///
/// In this order, so that a client reading the folder at any instant never meets a
/// manifest whose files are missing:
/// 1. the seed is copied in as `<name>-<version>.sqlite` (decompressed, for a compressed seed;
///    temp file, SHA-256 checked against the seed's manifest in the same pass, fsync, rename,
///    folder fsync); a file already there under that name must hold the same bytes, since a
///    client may be downloading it; its content hash is computed (and must be the manifest's, when it states one);
/// 1b. the seed is gzip-compressed as `<name>-<version>.sqlite.gz` (level 9, one thread: the
///    same seed always gives the same bytes) and, where liblzma is (Linux), xz-compressed beside it as
///    `.sqlite.xz` (listed as the gzip's alternative: apps that read xz take the smaller), and for each of the last ``deltas`` releases the
///    channel offered (read from the `channel.json` being replaced, and its list of deltas) whose
///    seed file is still in the folder, a row-level delta from it is built, checked by applying it,
///    and compressed as `<name>-<version>.from-<earlier>.delta.gz` (and `.delta.xz`, as the seed) (format 2
///    across a schema change); a delta that cannot express the change, or whose gzip weighs more than half
///    the gzip seed, is not published; a delta between seeds that differ only in Reseed's metadata also
///    lists the values that change (``ChannelManifest/MetadataOnly``), which apps of this Reseed apply
///    without downloading the file;
/// 2. the signature `channel.json.sig` is replaced atomically (temp file, fsync, rename, folder fsync)
///    by two lines: the new manifest's signature, then the old manifest's;
/// 3. then `channel.json` the same way;
/// 4. then the signature file again, with the new manifest's line alone.
///
/// So a publish killed at any moment leaves a pair that verifies: the old manifest or the new one,
/// each with its own signature among the lines (an app of this Reseed tries each line; an app
/// older than channel trust reads one line, and reads the pair once more when they do not match).
/// Publishing the same seed again changes no seed or delta file: it re-signs the manifest with a
/// new `issued` (now) and `expires` (``validFor`` from now). When the folder has a `keys.json`, the
/// signing key must be listed in it and unexpired, and so must `keys.json` itself (see
/// ``ChannelKeysEditor``); the manifest then names that `keys.json` (its version and SHA-256) and the
/// channel's name it states, which devices check: publish again after each change of `keys.json`. Older seed files are left in place
/// for clients still downloading them; remove them when no client can need them.
/// Publishes into one folder are serialised by the empty lock file `.channel.reseed-lock`
/// there, which clients never read (no need to upload it).
///
/// ```swift
/// let publisher = ChannelPublisher(channel: URL(filePath: "site/triage"), privateKey: try ChannelPrivateKey(contentsOf: keyFile))
/// let published = try publisher.publish(try Seed(at: URL(filePath: "SeedData")))
/// print(published.manifest.file)   // triage-2.1.0.sqlite
/// ```
public struct ChannelPublisher: Sendable {
    /// What a publish wrote.
    public struct Result: Sendable {
        /// The manifest now in the channel.
        public var manifest: ChannelManifest
        /// The seed file in the channel folder.
        public var seedURL: URL
        /// `channel.json` in the channel folder.
        public var manifestURL: URL
        /// False when the channel already held this seed file, byte for byte.
        public var copied: Bool
        /// The compressed seed in the channel folder.
        public var compressedURL: URL
        /// The earlier versions for which no delta was published, with the reason.
        public var skippedDeltas: [(fromVersion: String, reason: String)] = []
        /// What each published delta carries, by the version it starts from, in the order of the manifest's deltas.
        public var deltaContents: [(fromVersion: String, built: SeedDeltaBuilder.Built)] = []
    }

    /// The channel folder, created when missing.
    public var channel: URL
    /// The key that signs the manifest.
    public var privateKey: ChannelPrivateKey
    /// How many earlier versions get a delta to the new seed, newest first. Default 5; 0 publishes none.
    public var deltas = 5
    /// Whether a seed whose version is not newer than the one the channel offers (by ``SeedVersion``'s
    /// order, the one devices install by) may replace it. Default false: such a publish is refused, since
    /// it would roll the channel back. Devices still refuse a lower version unless the release they have
    /// was signed by a key since removed (see ``ChannelKeysEditor``) or their updater allows downgrades.
    public var allowsDowngrade = false
    /// Whether the seed is also published compressed, gzip and (on Linux) xz (clients then download the smallest they read). Default true;
    /// a seed of data that does not compress (images, say) gains nothing from it.
    public var compresses = true
    /// How long the manifest stays valid: its `expires` is the publish time plus this, and apps
    /// refuse it after that (re-sign on a schedule well inside it). Default 30 days.
    public var validFor: Duration = .seconds(30 * 86_400)
    /// The manifest's expiry, when set, instead of ``validFor`` from now: two publishes of the same
    /// seeds with the same key and expiry write the same bytes. Default nil.
    public var expires: Date?
    /// The manifest's `issued` time, when set, instead of the publish time. Default nil.
    public var issued: Date?
    /// How long to wait for another publish into the same folder. Default 60 seconds.
    public var lockTimeout: Duration = .seconds(60)
    /// The seam every file action goes through (tests observe the order of the actions with it).
    package var fileSystem = FileSystem()

    /// A publisher into the folder `channel`, signing with `privateKey`.
    public init(channel: URL, privateKey: ChannelPrivateKey) {
        self.channel = channel
        self.privateKey = privateKey
    }

    /// Copies `seed` into the channel and makes it the one the channel offers.
    ///
    /// - Throws: ``PackagingError`` (step ``PackagingError/Step/publish``, or the step of the delta or
    ///   signature that failed): ``PackagingError/Code/seedNotFound`` when the seed file is missing;
    ///   ``PackagingError/Code/verificationFailed`` when the seed file does not match its own manifest;
    ///   ``PackagingError/Code/invalidArgument`` when the channel holds another file under the seed's
    ///   name; ``PackagingError/Code/io``; ``PackagingError/Code/busy`` when another publish kept the
    ///   channel past ``lockTimeout``; ``PackagingError/Code/invalidArgument`` when the folder's `keys.json`
    ///   does not list the signing key, or it has expired; ``PackagingError/Code/invalidArgument`` when ``deltas`` is
    ///   negative, or the seed's version is not newer than the one the channel offers and ``allowsDowngrade`` is false.
    ///   The channel then still offers what it offered before.
    @discardableResult
    public func publish(_ seed: Seed) throws(PackagingError) -> Result {
        guard deltas >= 0 else {
            throw PackagingError(.invalidArgument, step: .publish, path: channel.path, message: "the number of deltas is \(deltas); it counts earlier releases, so it is 0 or more")
        }
        let (directory, lock) = try Self.lock(channel, fileSystem: fileSystem, timeout: lockTimeout)
        defer { lock.release() }
        let now = Date()
        let listed = try checkListed(in: directory, at: now)

        let file = ChannelManifest.seedFileName(name: seed.manifest.name, version: seed.manifest.version)
        var manifest = ChannelManifest(seed: seed.manifest, file: file)
        let current = currentManifest(in: directory)
        try checkNewer(manifest, than: current, in: directory)
        let earlier = previousReleases(of: manifest, after: current)
        let compressedFile = file + Codecs.written.fileSuffix
        try packaging(.publish, path: channel.path) {
            let names = [file, ChannelManifest.signatureFileName, ChannelManifest.fileName] + ([compressedFile] + earlier.map(\.deltaFile)).flatMap(Self.encodedNames)
            try directory.removeTemporaryFiles { leftover in names.contains { StoreLayout.isTemporary(leftover, of: $0) } }
        }
        let copied = try copySeed(seed, as: file, into: directory)
        (manifest.contentHash, manifest.incrementalContentHash) = try checkContentHash(of: file, seed: seed, in: directory)
        if compresses { manifest.compressed = try publishEncoded(of: directory.path(file), as: compressedFile, in: directory) }
        var skipped: [(fromVersion: String, reason: String)] = []
        var contents: [(fromVersion: String, built: SeedDeltaBuilder.Built)] = []
        for release in earlier.prefix(deltas) {
            switch try publishDelta(from: release, to: manifest, in: directory) {
            case .success(let (delta, built)):
                manifest.deltas.append(try withMetadataOnly(delta, built: built, from: release, to: manifest, in: directory))
                contents.append((release.version, built))
            case .failure(let reason): skipped.append((release.version, reason.message))
            }
        }
        manifest.expires = expires ?? now.addingTimeInterval(validFor.inSeconds)
        manifest.issued = issued ?? now
        // The channel's name and the keys.json this manifest is published under, which devices check it against.
        manifest.channel = listed?.channelName
        manifest.keys = listed.map { ChannelManifest.KeysReference(version: $0.version, sha256: $0.sha256) }
        let bytes = manifest.encoded()
        let line = try privateKey.signature(for: bytes).base64EncodedString() + "\n"
        let previous = previousSignatureLines(in: directory, verifiedBy: [privateKey.publicKey] + (listed?.keys.map(\.publicKey) ?? []))
        try packaging(.publish, path: directory.path(ChannelManifest.fileName)) {
            let signatures = ChannelManifest.signatureFileName
            try directory.replaceAtomically(signatures, with: Array((line + previous.joined()).utf8), through: StoreLayout.temporaryName(of: signatures))
            try directory.replaceAtomically(ChannelManifest.fileName, with: Array(bytes), through: StoreLayout.temporaryName(of: ChannelManifest.fileName))
            if !previous.isEmpty { try directory.replaceAtomically(signatures, with: Array(line.utf8), through: StoreLayout.temporaryName(of: signatures)) }
        }
        return Result(
            manifest: manifest, seedURL: URL(fileURLWithPath: directory.path(file), isDirectory: false),
            manifestURL: URL(fileURLWithPath: directory.path(ChannelManifest.fileName), isDirectory: false), copied: copied,
            compressedURL: URL(fileURLWithPath: directory.path(compressedFile), isDirectory: false), skippedDeltas: skipped, deltaContents: contents)
    }

    /// Step 1; returns false when the same bytes were already published under `file`.
    private func copySeed(_ seed: Seed, as file: String, into directory: Directory) throws(PackagingError) -> Bool {
        let target = directory.path(file)
        if try packaging(.publish, path: target, { try directory.status(file) }) != nil {
            let facts = try packaging(.publish, path: target) { try FileFacts(path: target) }
            guard facts.size == seed.manifest.size, facts.sha256 == seed.manifest.sha256 else {
                throw PackagingError(.invalidArgument, step: .publish, path: target,
                                     message: "the channel already holds \(file) with other bytes; a published file never changes (publish a new version)")
            }
            return false
        }
        // The runtime names the seed's own failures (a missing file, a stream that does not
        // decompress) at its step `copy`; `packaging` makes them the publish's.
        let source = try packaging(.publish, path: seed.fileURL.path) { try seed.openFile(at: .copy) }
        _ = try packaging(.publish, path: target) {
            try directory.writeDurably(file, through: StoreLayout.temporaryName(of: file), write: { destination, temporary in
                // A compressed seed is published decompressed: the database its manifest describes.
                try during(.copy, path: seed.fileURL.path) {
                    try directory.fileSystem.performCoding(.copy, directory.path(temporary)) { () throws(CodecFailure) in
                        try seed.copyDatabase(from: source, to: destination, hashing: true)
                    }
                }
            }, check: { copied, _ in
                guard copied.bytes == seed.manifest.size, copied.sha256 == seed.manifest.sha256 else {
                    throw PackagingError(.verificationFailed, step: .publish, path: seed.fileURL.path, message:
                        "the seed is \(copied.bytes) bytes with SHA-256 \(copied.sha256 ?? "?"); its manifest says \(seed.manifest.size) bytes, \(seed.manifest.sha256)")
                }
            })
        }
        return true
    }
}
