import Crypto
import Foundation
import Reseed

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

    /// SHA-256 (lowercase hex) of the content with any UTF-8 BOM removed and CRLF or CR line endings made LF,
    /// so a checkout with other line endings gives the same checksum.
    public static func checksum(of content: some ContiguousBytes) -> String {
        var hasher = SHA256()
        content.withUnsafeBytes { bytes in
            var start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
            // Hash runs between carriage returns whole; each CR, or CRLF, hashes as one LF.
            while let cr = bytes[start...].firstIndex(of: 0x0D) {
                hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: bytes[start..<cr]))
                hasher.update(data: [0x0A])
                start = cr + 1 < bytes.count && bytes[cr + 1] == 0x0A ? cr + 2 : cr + 1
            }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: bytes[start...]))
        }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }

    /// Reads the step's file.
    public func contents() throws(PackagingError) -> Data {
        do {
            return try Data(contentsOf: url, options: .alwaysMapped)
        } catch {
            throw PackagingError(.io, path: url.path, message: "cannot read the step: \(error.localizedDescription)")
        }
    }
}
