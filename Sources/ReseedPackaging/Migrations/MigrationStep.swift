import Crypto
import Foundation
import Reseed
import ReseedSystem

/// One file of `Migrations/`: `NNNN_description.sql|csv|json`.
///
/// `.sql` runs SQL; `.csv` and `.json` load rows into the table named by the
/// description (`0003_injury.csv` → table `injury`).
public struct MigrationStep: Sendable, Hashable {
    /// How a step changes the database.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case sql, csv, json
    }

    /// The number that orders the steps (`3` for `0003_injury.csv`).
    public var number: Int
    /// The part between the number and the extension (`injury`).
    public var description: String
    public var kind: Kind
    public var url: URL

    /// The step's identity as recorded in a seed: its file name.
    public var id: String { url.lastPathComponent }
    /// The table a data step loads into.
    public var table: String { description }

    /// Parses a file name; nil when it is not a step name (see ``MigrationsFolder`` for what is rejected).
    public init?(url: URL) {
        let name = url.lastPathComponent
        guard let underscore = name.firstIndex(of: "_"), let dot = name.lastIndex(of: "."), underscore < dot else { return nil }
        let digits = name[..<underscore]
        let description = name[name.index(after: underscore)..<dot]
        guard digits.count >= 4, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(digits),
              !description.isEmpty, description.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }),
              let kind = Kind(rawValue: String(name[name.index(after: dot)...]))
        else { return nil }
        self.number = number
        self.description = String(description)
        self.kind = kind
        self.url = url
    }

    /// SHA-256 (lowercase hex) of ``normalized(_:)`` content: any UTF-8 BOM at the start removed,
    /// CRLF and lone CR made LF, so a checkout with other line endings gives the same checksum.
    ///
    /// The checksum covers exactly what a build reads of the step, because the build reads the
    /// step as normalised too (a decision, rather than a checksum of the raw bytes: a checkout with
    /// Git's `core.autocrlf` must keep its released checksums *and* build the same seed):
    /// `.sql` and `.json` steps run as ``normalized(_:)`` gives them, so a line break in an SQL string
    /// literal, in a `CREATE` statement's text kept in `sqlite_schema`, or in a JSON step's nested
    /// value kept as text, is LF on every checkout; a `.csv` step is parsed in place with every
    /// line end read as LF, inside quoted fields too. Two steps with the same checksum therefore build
    /// the same bytes, and `reseed verify` passes a step only when it would build the seed it checks.
    /// A CR can still reach a seed, written as data: `char(13)` in SQL, `"\r"` in JSON.
    public static func checksum(of content: some ContiguousBytes) -> String {
        var hasher = SHA256()
        var normalizer = LineEndNormalizer()
        content.withUnsafeBytes { normalizer.feed($0) { hasher.update(bufferPointer: $0) } }
        normalizer.finish { hasher.update(bufferPointer: $0) }
        return lowercaseHex(hasher.finalize())
    }

    /// The content as a build reads it and ``checksum(of:)`` hashes it: a UTF-8 BOM at the start
    /// removed, each CRLF and each lone CR made LF, every other byte as it is.
    ///
    /// ```swift
    /// MigrationStep.normalized(Array("\u{FEFF}a\r\nb\rc\n".utf8)) == Array("a\nb\nc\n".utf8)   // true
    /// ```
    public static func normalized(_ content: some ContiguousBytes) -> [UInt8] {
        var out: [UInt8] = []
        var normalizer = LineEndNormalizer()
        content.withUnsafeBytes { bytes in
            out.reserveCapacity(bytes.count)
            normalizer.feed(bytes) { out.append(contentsOf: $0) }
        }
        normalizer.finish { out.append(contentsOf: $0) }
        return out
    }

    /// ``checksum(of:)`` of the step's file, read a chunk at a time: memory stays small whatever the
    /// file's size (a build that rejects a step after 64 MiB does not hash it from a mapping of all of it).
    ///
    /// - Throws: ``PackagingError/Code/io`` (step ``PackagingError/Step/readMigrations``) naming the file
    ///   when it cannot be read or is not a regular file (a FIFO or `/dev/zero` would never end).
    public func checksum() throws(PackagingError) -> String {
        let file = try open()
        var hasher = SHA256()
        var normalizer = LineEndNormalizer()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = try read(file, into: buffer)
            if count == 0 { break }
            normalizer.feed(UnsafeRawBufferPointer(rebasing: buffer[0..<count])) { hasher.update(bufferPointer: $0) }
        }
        normalizer.finish { hasher.update(bufferPointer: $0) }
        return lowercaseHex(hasher.finalize())
    }

    /// Reads the step's file.
    ///
    /// - Throws: ``PackagingError/Code/io`` (step ``PackagingError/Step/readMigrations``) naming the file
    ///   when it cannot be read or is not a regular file.
    public func contents() throws(PackagingError) -> Data {
        _ = try open()
        do {
            return try Data(contentsOf: url, options: .alwaysMapped)
        } catch {
            throw PackagingError.io("cannot read the step", step: .readMigrations, path: url.path, error: error)
        }
    }

    /// Opens the step's file for reading; a link is followed, but what it names must be a regular file.
    ///
    /// - Throws: ``PackagingError/Code/io`` naming the file.
    func open() throws(PackagingError) -> OwnedDescriptor {
        do {
            return try FileSystem.openRegularFile(url.path)
        } catch {
            throw PackagingError.io("cannot read the step", step: .readMigrations, path: url.path, error: error)
        }
    }

    /// Reads up to the buffer's size from the step's open file `file`; 0 at its end.
    ///
    /// - Throws: ``PackagingError/Code/io`` naming the file.
    func read(_ file: borrowing OwnedDescriptor, into buffer: UnsafeMutableRawBufferPointer) throws(PackagingError) -> Int {
        do {
            return try file.read(into: buffer)
        } catch {
            throw PackagingError.io("cannot read the step", step: .readMigrations, path: url.path, error: error)
        }
    }
}

/// `bytes` as lowercase hexadecimal, two digits a byte.
func lowercaseHex(_ bytes: some Sequence<UInt8>) -> String {
    let digits: [UInt8] = Array("0123456789abcdef".utf8)
    var hex: [UInt8] = []
    hex.reserveCapacity(64)
    for byte in bytes {
        hex.append(digits[Int(byte >> 4)])
        hex.append(digits[Int(byte & 0x0F)])
    }
    return String(decoding: hex, as: UTF8.self)
}
