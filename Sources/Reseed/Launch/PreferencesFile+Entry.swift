import ReseedSystem

extension PreferencesFile {
    /// One store's entry under `"reseed"`, with every field Reseed keeps typed.
    ///
    /// ```json
    /// {"reseed": {"triage": {"version": "2.0.0", "source": "bundle", "userStore": "triage-user",
    ///   "contentHash": "…", "userStoreChecked": "…", "channel": {"url": "…", "etag": "…", "version": "2.0.0"}}}}
    /// ```
    /// A field that is absent, null or malformed reads as nil. Fields Reseed does not know stay in
    /// ``node`` and are written back byte for byte: ``record(_:for:clearing:timeout:logger:)``
    /// edits only the fields it sets.
    struct Entry: Sendable, Equatable {
        /// The fields Reseed keeps, by their key in the entry.
        enum Field: String, Sendable, CaseIterable {
            case version, source, userStore, contentHash, incrementalContentHash, storeFingerprint, fingerprintedContentHash, userStoreChecked, channel, strandedIn
        }

        /// The installed seed version.
        var version: String?
        /// Where that seed came from (nil for entries written before Reseed recorded it).
        var source: SeedSource?
        /// The user store the seed was installed or kept for (see ``Launcher/UserStore``): set, the
        /// store file holds no user tables. Nil for a single-file store.
        var userStore: String?
        /// The installed seed's ``SeedContentHash`` (64 lowercase hex digits), where a channel's
        /// row-level delta may start from.
        var contentHash: String?
        /// The installed seed's ``IncrementalContentHash``, recorded when it was installed.
        var incrementalContentHash: String?
        /// The fingerprint of the store file and its `-wal` right after that install
        /// (``StoreWAL/fingerprint(store:wal:)``): while they still have it, nobody wrote to the
        /// store, and a delta may check its result incrementally.
        var storeFingerprint: String?
        /// The content hash of the seed an install put in the store when ``storeFingerprint`` was
        /// recorded: while the file and its `-wal` keep that fingerprint, they hold exactly that seed,
        /// and a delta starting from it may be checked from the rows it changed with the row set the
        /// signed delta carries. Absent when the fingerprint is of a file found in place (restored or
        /// copied: it may have been written), and in entries written before it existed.
        var fingerprintedContentHash: String?
        /// The fingerprint of the user store's last complete check (see ``UserStoreSchema``).
        var userStoreChecked: String?
        /// What the last check of a channel returned, for a conditional request next time.
        var channel: ChannelValidators?
        /// The user's tables left in a single-file store kept aside, which a later release that
        /// declares them carries into the user store.
        var strandedIn: StrandedTables?
        /// The whole entry as read.
        var node: JSONNode

        init(node: JSONNode) {
            self.node = node
            version = node[Field.version.rawValue]?.string
            source = node[Field.source.rawValue]?.string.flatMap(SeedSource.init(rawValue:))
            userStore = node[Field.userStore.rawValue]?.string
            contentHash = node[Field.contentHash.rawValue]?.string.flatMap { SeedManifest.isSHA256($0) ? $0 : nil }
            incrementalContentHash = node[Field.incrementalContentHash.rawValue]?.string.flatMap { SeedManifest.isSHA256($0) ? $0 : nil }
            storeFingerprint = node[Field.storeFingerprint.rawValue]?.string
            fingerprintedContentHash = node[Field.fingerprintedContentHash.rawValue]?.string.flatMap { SeedManifest.isSHA256($0) ? $0 : nil }
            userStoreChecked = node[Field.userStoreChecked.rawValue]?.string
            channel = node[Field.channel.rawValue].flatMap(ChannelValidators.init(node:))
            strandedIn = node[Field.strandedIn.rawValue].flatMap(StrandedTables.init(node:))
        }
    }

    /// Tables of the user's left in a store file kept aside (`"strandedIn"`):
    /// `{"file": "triage.sqlite.invalid-…", "tables": ["incident"]}`.
    struct StrandedTables: Sendable, Equatable {
        /// The kept file's name in the data directory.
        var file: String
        /// The tables as that file names them.
        var tables: [String]

        /// Reads the object; nil when malformed (a file that is not a plain name, a table that is not a string).
        init?(node: JSONNode) {
            guard let file = node["file"]?.string, SeedManifest.isPlainFileName(file),
                  case .array(let items)? = node["tables"]?.value else { return nil }
            let tables = items.compactMap(\.string)
            guard tables.count == items.count, !tables.isEmpty else { return nil }
            self.init(file: file, tables: tables)
        }

        init(file: String, tables: [String]) {
            self.file = file
            self.tables = tables
        }

        /// The object as JSON text.
        var json: String {
            "{\"file\": \(JSONNode.quote(file)), \"tables\": [" + tables.map(JSONNode.quote).joined(separator: ", ") + "]}"
        }
    }

    /// A field of a store's entry set to a new value, by ``record(_:for:clearing:timeout:logger:)``.
    enum Change: Sendable, Equatable {
        case version(String)
        case source(SeedSource)
        case userStore(String)
        case contentHash(String)
        case incrementalContentHash(String)
        case storeFingerprint(String)
        case fingerprintedContentHash(String)
        case userStoreChecked(String)
        case channel(ChannelValidators)
        case strandedIn(StrandedTables)

        /// The field it sets.
        var field: Entry.Field {
            switch self {
            case .version: .version
            case .source: .source
            case .userStore: .userStore
            case .contentHash: .contentHash
            case .incrementalContentHash: .incrementalContentHash
            case .storeFingerprint: .storeFingerprint
            case .fingerprintedContentHash: .fingerprintedContentHash
            case .userStoreChecked: .userStoreChecked
            case .channel: .channel
            case .strandedIn: .strandedIn
            }
        }

        /// The new value as JSON text.
        var json: String {
            switch self {
            case .version(let text), .userStore(let text), .contentHash(let text), .incrementalContentHash(let text),
                 .storeFingerprint(let text), .fingerprintedContentHash(let text), .userStoreChecked(let text): JSONNode.quote(text)
            case .source(let source): JSONNode.quote(source.rawValue)
            case .channel(let validators): validators.json
            case .strandedIn(let stranded): stranded.json
            }
        }
    }
}
