/// What a seed is and how to check its file: the fields the seed manifest (``SeedManifest``)
/// and the channel manifest (``ChannelManifest``) both state, in the order both write them.
///
/// Each manifest embeds one as `facts` and reads its fields as its own:
/// `manifest.version` is `manifest.facts.version`.
///
/// ```swift
/// let facts = try Seed(at: URL(filePath: "SeedData")).manifest.facts
/// print(facts.name, facts.version, facts.sha256)
/// ```
public struct SeedFacts: Sendable, Hashable {
    /// The store name; the live store is `<name>.sqlite` in the data directory.
    public var name: String
    /// The seed version (ordered when it is SemVer or dotted numbers; see ``SeedVersion``).
    public var version: String
    /// The seed's file name, beside the manifest or in the channel folder: a plain name, never a path.
    public var file: String
    /// The seed's size in bytes; a download never reads more.
    public var size: Int64
    /// Lowercase hex SHA-256 of the seed file.
    public var sha256: String
    /// The seed's `PRAGMA user_version`.
    public var userVersion: Int32
    /// The seed's `PRAGMA application_id`.
    public var applicationID: Int32
    /// The seed's page size in bytes.
    public var pageSize: Int

    public init(
        name: String, version: String, file: String, size: Int64, sha256: String,
        userVersion: Int32, applicationID: Int32, pageSize: Int
    ) {
        self.name = name
        self.version = version
        self.file = file
        self.size = size
        self.sha256 = sha256
        self.userVersion = userVersion
        self.applicationID = applicationID
        self.pageSize = pageSize
    }
}
