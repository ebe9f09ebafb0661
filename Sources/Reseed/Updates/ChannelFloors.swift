import Foundation
import ReseedSystem

/// What a device has verified of a channel and never unlearns: kept beside the store, in the data
/// directory, as `.<store>.sqlite.reseed-trust.json`, so that a lost or rewritten preferences file
/// does not erase it.
///
/// Written durably (temp file, fsync, rename, folder fsync) under the update's lock, as soon as
/// `keys.json` and `channel.json` verify and before anything is downloaded (TUF's client workflow:
/// every role's version is persisted the moment it verifies). A later update refuses what goes
/// below it, whatever became of the download.
///
/// ```json
/// {"url": "https://cdn.example.com/triage/", "pinned": ["9b7d…"], "keysVersion": 3, "threshold": 1, "channel": "production",
///  "manifestVersion": "3.0.0", "manifestFormat": 3, "manifestSignedBy": "5f0c…", "roots": ["q8f1…="]}
/// ```
///
/// The floors belong to the channel the app's pinned root keys anchor, whatever URL serves it: a
/// mirror at another address gets the same floors. An app that pins other roots (none of the
/// recorded pinned or rotated ones) starts from none.
struct ChannelFloors: Sendable, Equatable {
    /// The largest file read.
    static let maximumFileSize = 64 << 10

    /// The URL of the last check (what it was learnt from; not a key).
    var url: String
    /// The ids of the keys the app pinned when the floors were written.
    var pinned: [String] = []
    /// The highest `keys.json` version verified.
    var keysVersion: Int64?
    /// The root threshold of the last `keys.json` verified: a new one needs that many of ``roots``.
    var threshold: Int?
    /// The root keys a `keys.json` rotated to (empty: the pinned ones).
    var roots: [ChannelPublicKey] = []
    /// The channel's name, as the first verified `keys.json` that named it said.
    var channelName: String?
    /// The highest manifest version verified (``SeedVersion``'s order), and the key that signed it:
    /// once root removes that key, the floor no longer holds.
    var manifestVersion: String?
    var manifestSignedBy: String?
    /// The highest manifest format verified.
    var manifestFormat: Int?

    /// The file's name beside the store `name`.
    static func fileName(ofStore name: String) -> String { StoreLayout(store: name).trustFloors }

    /// Reads the floors kept for the store `name` in `directory`, for an app that pins `pinned` and
    /// checks `url`; empty floors when there is no file, or it is another channel's (none of its pinned
    /// or rotated root keys is pinned now). A file that is not the floors' (it was edited) has none
    /// either, and the next verified check writes it again.
    static func read(store name: String, url: String, pinned: [ChannelPublicKey], in directory: Directory) -> ChannelFloors {
        let pinnedIDs = pinned.map(\.keyID)
        let empty = ChannelFloors(url: url, pinned: pinnedIDs)
        let path = directory.path(fileName(ofStore: name))
        guard let bytes = try? readSmallFileIfPresent(URL(fileURLWithPath: path, isDirectory: false), limit: maximumFileSize, step: .checkKeys,
                                                      tooLarge: { _ in ReseedError(.io, step: .checkKeys, path: path, message: "too large") }),
              let node = try? JSONNode.parse(bytes, maxDepth: 4) else { return empty }
        func integer(_ name: String) -> Int64? {
            if case .number(let text)? = node[name]?.value { return Int64(text) }
            return nil
        }
        func strings(_ name: String) -> [String] {
            guard case .array(let items)? = node[name]?.value else { return [] }
            return items.compactMap(\.string)
        }
        let roots = strings("roots").compactMap { try? ChannelPublicKey(base64: $0) }
        guard !Set(strings("pinned") + roots.map(\.keyID)).isDisjoint(with: pinnedIDs) else { return empty }
        var floors = empty
        floors.keysVersion = integer("keysVersion")
        floors.threshold = integer("threshold").map { Int(clamping: $0) }
        floors.roots = roots
        floors.channelName = node["channel"]?.string
        floors.manifestVersion = node["manifestVersion"]?.string
        floors.manifestSignedBy = node["manifestSignedBy"]?.string
        floors.manifestFormat = integer("manifestFormat").map { Int(clamping: $0) }
        return floors
    }

    /// The file's text.
    var json: String {
        var members = ["\"url\": " + JSONNode.quote(url), "\"pinned\": [" + pinned.map(JSONNode.quote).joined(separator: ", ") + "]"]
        if let keysVersion { members.append("\"keysVersion\": \(keysVersion)") }
        if let threshold { members.append("\"threshold\": \(threshold)") }
        if !roots.isEmpty { members.append("\"roots\": [" + roots.map { JSONNode.quote($0.base64) }.joined(separator: ", ") + "]") }
        if let channelName { members.append("\"channel\": " + JSONNode.quote(channelName)) }
        if let manifestVersion { members.append("\"manifestVersion\": " + JSONNode.quote(manifestVersion)) }
        if let manifestSignedBy { members.append("\"manifestSignedBy\": " + JSONNode.quote(manifestSignedBy)) }
        if let manifestFormat { members.append("\"manifestFormat\": \(manifestFormat)") }
        return "{" + members.joined(separator: ", ") + "}\n"
    }

    /// Writes the floors durably beside the store `name`, replacing what a killed write left.
    func write(store name: String, in directory: Directory) throws(ReseedError) {
        let file = Self.fileName(ofStore: name)
        try during(.checkKeys, path: directory.path(file)) {
            try directory.removeTemporaryFiles { StoreLayout.isTemporary($0, of: file) }
            try directory.replaceAtomically(file, with: Array(json.utf8), through: StoreLayout.temporaryName(of: file))
        }
    }

    /// These floors raised by a verified `keys.json`.
    func raised(by keys: ChannelKeys) -> ChannelFloors {
        var floors = self
        floors.keysVersion = max(keys.version, keysVersion ?? 0)
        floors.threshold = keys.threshold
        if !keys.roots.isEmpty { floors.roots = keys.roots }
        if floors.channelName == nil { floors.channelName = keys.channelName }
        return floors
    }

    /// These floors raised by a verified manifest signed by `signer`, which the decision did not refuse;
    /// `keys` says whether the signer of the current floor was removed (the floor then drops to this one).
    func raised(by manifest: ChannelManifest, signer: String, keys: ChannelKeys?) -> ChannelFloors {
        var floors = self
        floors.manifestFormat = max(manifest.format, manifestFormat ?? 0)
        if floors.channelName == nil { floors.channelName = manifest.channel }
        let lost = manifestSignedBy.map { keys?.isRevoked($0) == true } ?? true
        if lost || manifestVersion.map({ SeedVersion(manifest.version).isNewer(than: SeedVersion($0)) }) ?? true {
            floors.manifestVersion = manifest.version
            floors.manifestSignedBy = signer
        }
        return floors
    }

    /// The manifest version floor, unless root removed the key that signed it.
    func manifestFloor(keys: ChannelKeys?) -> String? {
        guard let manifestVersion, !(manifestSignedBy.map { keys?.isRevoked($0) == true } ?? false) else { return nil }
        return manifestVersion
    }
}
