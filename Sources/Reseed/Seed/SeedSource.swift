/// Where the seed installed in a store came from, as recorded in the preferences beside its version.
///
/// A store installed by the ``Launcher`` holds the bundled seed; one installed by a
/// ``ChannelUpdater`` or a ``LiveStore/replace(with:)`` holds a download. The source
/// decides what a later launch does with a bundled seed of another version: it replaces a
/// downloaded seed only when it is newer by ``SeedVersion``'s order (an app update that ships
/// fresher data) or the downloaded store is unusable; it replaces a bundled seed whenever
/// the versions differ.
///
/// ```json
/// {"reseed": {"triage": {"version": "2.1.0", "source": "download"}}}
/// ```
///
/// An entry without `"source"` (written before Reseed recorded it) counts as ``bundle``.
public enum SeedSource: String, Sendable, Hashable, Codable, CaseIterable {
    /// The seed shipped in the app's bundle, installed by a launch.
    case bundle
    /// A seed that arrived while the app ran: downloaded from a channel, or handed to ``LiveStore/replace(with:)``.
    case download
}
