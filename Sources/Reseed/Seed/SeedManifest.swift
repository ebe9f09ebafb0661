import Foundation
import ReseedSystem

/// The manifest that travels beside a seed database: what the seed is, and how to check it.
///
/// Written by `ReseedPackaging` (`reseed package`), read by the launcher. It
/// holds no timestamps, so a rebuild of the same steps gives the same bytes.
///
/// ```json
/// {
///   "format": 1,
///   "name": "triage",
///   "version": "2.0.0",
///   "file": "triage.sqlite",
///   "size": 32768,
///   "sha256": "9f86d0…",
///   "userVersion": 5,
///   "applicationID": 1381188932,
///   "pageSize": 4096,
///   "steps": [{"id": "0001_schema.sql", "checksum": "2c26b4…"}],
///   "contentHash": "5d41a8…"
/// }
/// ```
///
/// `contentHash` (``contentHash``) is optional: manifests written before it existed still
/// read, as format 1, and a reader that does not know it ignores it. So is
/// `incrementalContentHash` (``incrementalContentHash``), which came later: a manifest that
/// `reseed publish` writes into a channel states it, one that `reseed package` writes does not.
///
/// `compression` (``compression``) is optional too: `"gzip"` when `file` (such as
/// `triage.sqlite.gz`) holds the seed compressed (`reseed package --compress`); `size` and
/// `sha256` are then still those of the database, which the install checks after decompressing.
/// Any other value is refused.
@dynamicMemberLookup
public struct SeedManifest: Sendable, Hashable {
    /// The manifest format this version of Reseed reads and writes.
    public static let currentFormat = 1
    /// The largest manifest file Reseed reads: a manifest is small, a huge one is a mistake or an attack.
    public static let maximumFileSize = 1 << 20
    /// The largest seed size Reseed accepts (1 TiB).
    public static let maximumSeedSize: Int64 = 1 << 40
    /// The file name suffix of a manifest: `<name>.manifest.json`.
    public static let fileSuffix = ".manifest.json"

    /// One migration step that built the seed.
    public struct Step: Sendable, Hashable {
        /// The step's file name, such as `0001_schema.sql`.
        public var id: String
        /// Lowercase hex SHA-256 of the step's content, line endings normalised and any BOM removed.
        public var checksum: String

        public init(id: String, checksum: String) {
            self.id = id
            self.checksum = checksum
        }
    }

    /// The manifest format the file was written in.
    public var format: Int
    /// The seed's name, version, file, size, SHA-256 and header values, read as the manifest's own
    /// (`manifest.version`).
    public var facts: SeedFacts
    /// The migration steps that built the seed, in order.
    public var steps: [Step]
    /// The seed's ``SeedContentHash``: SHA-256 of its schema and rows, 64 lowercase hex digits;
    /// nil in a manifest written before `reseed package` recorded it.
    public var contentHash: String?
    /// The seed's ``IncrementalContentHash/hash``: 64 lowercase hex digits. A row-level delta's
    /// result is checked against it without reading the whole seed. `reseed publish` states it in a
    /// channel's manifest; `reseed package` leaves it out (nil), as manifests written before it
    /// existed do: a delta only ever comes from a channel, and the row set costs the build a
    /// quarter of its time (see <doc:ContentHash>).
    public var incrementalContentHash: String?
    /// How ``SeedFacts/file`` is compressed; nil (the default) when it is the database itself.
    public var compression: Compression?

    public init(
        format: Int = SeedManifest.currentFormat, facts: SeedFacts, steps: [Step], contentHash: String? = nil, compression: Compression? = nil,
        incrementalContentHash: String? = nil
    ) {
        self.format = format
        self.facts = facts
        self.steps = steps
        self.contentHash = contentHash
        self.compression = compression
        self.incrementalContentHash = incrementalContentHash
    }

    /// A field of ``facts`` as the manifest's own: `manifest.version` is `manifest.facts.version`.
    public subscript<Value>(dynamicMember field: WritableKeyPath<SeedFacts, Value>) -> Value {
        get { facts[keyPath: field] }
        set { facts[keyPath: field] = newValue }
    }

    /// The store file name in the data directory: `<name>.sqlite`.
    public var storeFileName: String { StoreLayout.fileName(ofStore: facts.name) }

    /// The manifest file name for this seed: `<name>.manifest.json`.
    public var manifestFileName: String { facts.name + Self.fileSuffix }
}

extension SeedManifest {
    /// Reads and checks a manifest file.
    ///
    /// - Throws: ``ReseedError`` with code ``ReseedError/Code/invalidManifest``
    ///   naming the manifest and the field, for a file over 1 MiB, JSON that
    ///   does not parse, a missing or mistyped field, an unknown format, a file
    ///   name that is not a plain name, or an absurd size; ``ReseedError/Code/io``
    ///   when it cannot be read.
    public static func read(from url: URL) throws(ReseedError) -> SeedManifest {
        let bytes = try readSmallFile(url, limit: maximumFileSize, step: .readManifest) { size in
            ReseedError(.invalidManifest, step: .readManifest, path: url.path,
                        message: "manifest is \(size) bytes, more than the \(maximumFileSize)-byte limit")
        }
        return try decode(bytes, path: url.path)
    }

    /// Checks and decodes manifest bytes; `path` names the manifest in errors.
    public static func decode(_ bytes: [UInt8], path: String) throws(ReseedError) -> SeedManifest {
        let root: JSONNode
        do {
            root = try JSONNode.parse(bytes, maxDepth: 16)
        } catch {
            // Given something else than a manifest (a database, a text file), say what it is.
            let advice = "give the seed's manifest (*\(fileSuffix)) or the folder that holds it"
            if StoreHeader.hasMagic(bytes) {
                throw ReseedError(.invalidManifest, step: .readManifest, path: path, message: "not a seed manifest but a SQLite database", advice: advice)
            }
            if !path.hasSuffix(fileSuffix) {
                throw ReseedError(.invalidManifest, step: .readManifest, path: path, message: "not a seed manifest: not valid JSON (\(error))", advice: advice)
            }
            throw ReseedError(.invalidManifest, step: .readManifest, path: path, message: "manifest is not valid JSON: \(error)")
        }
        var fields = ManifestFields(root: root, path: path)
        guard case .object = root.value else { throw fields.invalid(nil, "manifest is \(root.kindName), not a JSON object") }

        let format = try fields.integer("format", in: 1...Int64(Int32.max))
        guard format == Int64(currentFormat) else {
            throw fields.invalid("format", "unknown manifest format \(format); this Reseed reads format \(currentFormat)")
        }
        let facts = try fields.seedFacts()
        let steps = try fields.steps()
        let contentHash = try fields.optionalSHA256("contentHash")
        let incrementalContentHash = try fields.optionalSHA256("incrementalContentHash")
        var compression: Compression?
        if fields.root["compression"] != nil {
            let text = try fields.string("compression")
            guard let known = Compression(rawValue: text) else {
                let known = Compression.allCases.map { JSONNode.quote($0.rawValue) }.joined(separator: ", ")
                throw fields.invalid("compression", "unknown compression \(JSONNode.quote(text)); this Reseed reads \(known)")
            }
            compression = known
        }
        return SeedManifest(format: Int(format), facts: facts, steps: steps, contentHash: contentHash, compression: compression,
                            incrementalContentHash: incrementalContentHash)
    }

    /// The longest store name, in UTF-8 bytes (128).
    public static let maximumNameBytes = 128
    /// The longest seed version, in UTF-8 bytes (64).
    ///
    /// With a name of ``maximumNameBytes`` the longest file name Reseed derives from the two,
    /// a channel's temporary copy `.<name>-<version>.sqlite.reseed-tmp-<16 hex>`, is 229
    /// bytes: under the 255 that file systems allow.
    public static let maximumVersionBytes = 64

    /// A store name usable as a file name on every platform: 1-128 ASCII letters, digits,
    /// `.`, `_` or `-`, not starting with `.`, and not containing `.reseed-`, `.invalid-` or
    /// `.corrupt-` (the forms of Reseed's own files).
    /// What ``isValidStoreName(_:)`` asks, as the end of a sentence that names the store.
    public static let storeNameRule = "must be 1-128 letters, digits, '.', '_' or '-', not starting with '.' and not containing '.reseed-', '.invalid-' or '.corrupt-' (the forms of Reseed's own files)"

    public static func isValidStoreName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= maximumNameBytes && !name.hasPrefix(".") && StoreLayout.reservedForm(of: name) == nil
            && name.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            }
    }

    /// Why `version` cannot be a seed version, or nil when it can.
    ///
    /// A version is 1-64 bytes of UTF-8 (``maximumVersionBytes``; bytes, not characters, so a
    /// digit with thousands of combining marks is too long) of letters, marks, numbers,
    /// punctuation and symbols: no control character (DEL and U+0085 included), no format
    /// character, no space or line or paragraph separator (U+2028), nothing unassigned.
    ///
    /// ```swift
    /// SeedManifest.versionProblem("2.1.0-beta.1") // nil
    /// SeedManifest.versionProblem("2\u{2028}0")  // "version contains U+2028, a separator character"
    /// ```
    public static func versionProblem(_ version: String) -> String? {
        if version.isEmpty { return "version is empty" }
        let bytes = version.utf8.count
        if bytes > maximumVersionBytes { return "version is \(bytes) bytes of UTF-8, more than \(maximumVersionBytes)" }
        for scalar in version.unicodeScalars {
            let kind: String? = switch scalar.properties.generalCategory {
            case .control: "a control character"
            case .format: "a format character"
            case .spaceSeparator, .lineSeparator, .paragraphSeparator: "a separator character"
            case .surrogate, .privateUse, .unassigned: "not an assigned character"
            default: nil
            }
            if let kind { return "version contains U+\(String(scalar.value, radix: 16, uppercase: true).leftPadded(to: 4)), \(kind)" }
        }
        return nil
    }

    /// A name of a file in a folder: not empty, not `.`/`..`, no separator or NUL.
    static func isPlainFileName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && name.utf8.count <= 255
            && !name.utf8.contains { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "\\") || $0 == 0 }
    }

    static func isSHA256(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }
}

/// Field-by-field reading of a manifest's JSON, each failure naming the manifest and the field.
struct ManifestFields {
    let root: JSONNode
    let path: String
    /// The step failures name.
    var step: ReseedError.Step = .readManifest
    /// Where `root` stands in the file, put before every field a failure names: `signed.keys[0].`.
    var prefix = ""

    /// The fields every manifest of a seed has (``SeedFacts``), checked: name, version, file, page size,
    /// size, SHA-256, `user_version`, `application_id`.
    func seedFacts() throws(ReseedError) -> SeedFacts {
        let name = try string("name")
        guard SeedManifest.isValidStoreName(name) else {
            throw invalid("name", "store name \(JSONNode.quote(name)) \(SeedManifest.storeNameRule)")
        }
        let version = try string("version")
        if let problem = SeedManifest.versionProblem(version) {
            throw invalid("version", problem + " (a version is 1-\(SeedManifest.maximumVersionBytes) bytes of printable characters)")
        }
        let file = try string("file")
        guard SeedManifest.isPlainFileName(file) else {
            throw invalid("file", "file \(JSONNode.quote(file)) is not a plain file name (no '/', '\\', NUL, '.' or '..')")
        }
        let pageSize = try integer("pageSize", in: 512...65536)
        guard pageSize & (pageSize - 1) == 0 else { throw invalid("pageSize", "page size \(pageSize) is not a power of two") }
        let size = try integer("size", in: 0...Int64.max)
        guard size >= pageSize, size <= SeedManifest.maximumSeedSize, size % pageSize == 0 else {
            throw invalid("size", "size \(size) is not a whole number of \(pageSize)-byte pages between one page and 1 TiB")
        }
        let sha256 = try string("sha256")
        guard SeedManifest.isSHA256(sha256) else { throw invalid("sha256", "sha256 must be 64 lowercase hex digits") }
        let userVersion = try integer("userVersion", in: Int64(Int32.min)...Int64(Int32.max))
        let applicationID = try integer("applicationID", in: Int64(Int32.min)...Int64(Int32.max))
        return SeedFacts(
            name: name, version: version, file: file, size: size, sha256: sha256,
            userVersion: Int32(userVersion), applicationID: Int32(applicationID), pageSize: Int(pageSize))
    }

    func invalid(_ field: String?, _ message: String) -> ReseedError {
        let field = field.map { prefix + $0 }
        return ReseedError(.invalidManifest, step: step, path: path, field: field,
                           message: field.map { "field \"\($0)\": \(message)" } ?? message)
    }

    func node(_ field: String) throws(ReseedError) -> JSONNode {
        guard let node = root[field] else { throw invalid(field, "missing") }
        return node
    }

    func string(_ field: String) throws(ReseedError) -> String {
        let node = try node(field)
        guard let text = node.string else { throw invalid(field, "expected a string, found \(node.kindName)") }
        return text
    }

    func integer(_ field: String, in range: ClosedRange<Int64>) throws(ReseedError) -> Int64 {
        let node = try node(field)
        guard case .number(let text) = node.value else { throw invalid(field, "expected an integer, found \(node.kindName)") }
        guard let value = Int64(text) else { throw invalid(field, "\(text) is not an integer in range") }
        guard range.contains(value) else { throw invalid(field, "\(value) is outside \(range.lowerBound)...\(range.upperBound)") }
        return value
    }

    /// The 64 lowercase hex digits at `field`, or nil when the field is absent.
    func optionalSHA256(_ field: String) throws(ReseedError) -> String? {
        guard root[field] != nil else { return nil }
        let text = try string(field)
        guard SeedManifest.isSHA256(text) else { throw invalid(field, "\(field) must be 64 lowercase hex digits") }
        return text
    }

    /// The time at `field`, an RFC 3339 UTC text such as `2026-12-25T00:00:00Z`.
    func date(_ field: String) throws(ReseedError) -> Date {
        let text = try string(field)
        guard let date = RFC3339.date(text) else {
            throw invalid(field, "\(JSONNode.quote(text)) is not a time in the form 2026-12-25T00:00:00Z (RFC 3339, UTC)")
        }
        return date
    }

    mutating func steps() throws(ReseedError) -> [SeedManifest.Step] {
        let node = try node("steps")
        guard case .array(let elements) = node.value else { throw invalid("steps", "expected an array, found \(node.kindName)") }
        var steps: [SeedManifest.Step] = []
        for (index, element) in elements.enumerated() {
            let field = "steps[\(index)]"
            guard let id = element["id"]?.string, SeedManifest.isPlainFileName(id) else {
                throw invalid(field, "expected an object with a plain file name in \"id\"")
            }
            guard let checksum = element["checksum"]?.string, SeedManifest.isSHA256(checksum) else {
                throw invalid(field, "expected 64 lowercase hex digits in \"checksum\"")
            }
            steps.append(SeedManifest.Step(id: id, checksum: checksum))
        }
        return steps
    }
}

extension String {
    /// The string with zeros before it up to `width` characters.
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
