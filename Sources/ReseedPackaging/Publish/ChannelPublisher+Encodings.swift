import Foundation
import Reseed
import ReseedSystem

extension ChannelPublisher {
    /// The codecs of ``SeedManifest/Compression/published``, ``Codecs/written`` first.
    static var codecs: [any Codec] { SeedManifest.Compression.published.map(\.codec) }

    /// The names of a channel file in every encoding a publish writes: `name` (the ``Codecs/written``
    /// codec's, ending in its suffix) with that suffix swapped for each codec's in ``codecs``.
    static func encodedNames(of name: String) -> [String] {
        let base = name.hasSuffix(Codecs.written.fileSuffix) ? String(name.dropLast(Codecs.written.fileSuffix.count)) : name
        return Self.codecs.map { base + $0.fileSuffix }
    }

    /// Compresses the file at `sourcePath` into the channel with every codec of ``codecs``
    /// (see ``publishCompressed(of:as:with:in:replacing:limit:)``): `name` with ``Codecs/written``, the
    /// file older apps read, listing the others (`.xz` beside `.gz`) as its ``ChannelManifest/File/alternatives``,
    /// which apps that read them download when smaller.
    ///
    /// Returns nil, writing nothing, when the written codec's file is over `limit` bytes (the other
    /// encodings have no limit: the app takes the smallest, so a larger one costs only its upload).
    func publishEncoded(of sourcePath: String, as name: String, in directory: Directory, replacing: Bool = false, limit: Int64 = .max)
        throws(PackagingError) -> ChannelManifest.File?
    {
        let names = Self.encodedNames(of: name)
        guard var file = try publishCompressed(of: sourcePath, as: names[0], with: Self.codecs[0], in: directory, replacing: replacing, limit: limit) else {
            return nil
        }
        for (codec, name) in zip(Self.codecs, names).dropFirst() {
            if let alternative = try publishCompressed(of: sourcePath, as: name, with: codec, in: directory, replacing: replacing) {
                file.alternatives.append(alternative)
            }
        }
        return file
    }
}
