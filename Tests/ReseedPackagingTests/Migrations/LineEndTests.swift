import Crypto
import Foundation
import GRDB
import Reseed
import ReseedTesting
import ReseedTestSupport
import Testing
@testable import ReseedPackaging

/// The same steps give the same seed on every checkout (LF, CRLF as Git's `core.autocrlf` writes
/// them, or CR), and the step checksum, which ignores line ends, covers exactly what the build reads:
/// `verify` passes a folder only when its steps build the seed it checks.
@Suite struct LineEndTests {
    /// Steps where a line end could reach the seed: SQL text kept in `sqlite_schema` (a table, a
    /// trigger), a line break in an SQL string literal, in a quoted CSV field, and between the tokens
    /// of a JSON step's nested value (kept as text). The `"\r"` escaped in JSON is data and stays.
    static let steps = [
        "0001_schema.sql": """
            CREATE TABLE note (
                id INTEGER PRIMARY KEY,
                body TEXT,
                meta TEXT
            );
            CREATE TRIGGER note_body AFTER INSERT ON note
            BEGIN
                UPDATE note SET body = body WHERE id = NEW.id;
            END;
            INSERT INTO note (id, body) VALUES (1, 'two
            lines');

            """,
        "0002_note.csv": "id,body\n2,\"a quoted\nline break\"\n3,plain\n",
        "0003_note.json": """
            [
              {"id": 4, "body": "escaped\\r\\nstays", "meta": {
                "k": [1,
                      2]
              }}
            ]

            """,
    ]

    /// The steps with every LF written as `lineEnd`, and a BOM before each file when asked.
    static func checkout(_ lineEnd: String, bom: Bool = false) -> [String: String] {
        steps.mapValues { (bom ? "\u{FEFF}" : "") + $0.replacingOccurrences(of: "\n", with: lineEnd) }
    }

    @Test(arguments: [("\r\n", false), ("\r", false), ("\r\n", true)])
    func stepsWithOtherLineEndsBuildTheSameBytes(lineEnd: String, bom: Bool) throws {
        let lf = try MigrationsSandbox(Self.steps)
        let other = try MigrationsSandbox(Self.checkout(lineEnd, bom: bom))
        let built = try lf.build()
        let rebuilt = try other.build()
        #expect(try Data(contentsOf: rebuilt.seedURL) == Data(contentsOf: built.seedURL))
        #expect(rebuilt.manifest == built.manifest)
        let bodies = try lf.read(built) { try String.fetchAll($0, sql: "SELECT body FROM note ORDER BY id") }
        #expect(bodies == ["two\nlines", "a quoted\nline break", "plain", "escaped\r\nstays"])
        let meta = try lf.read(built) { try String.fetchOne($0, sql: "SELECT meta FROM note WHERE id = 4") }
        #expect(meta == "{\n    \"k\": [1,\n          2]\n  }")
        let schema = try lf.read(built) { try String.fetchAll($0, sql: "SELECT sql FROM sqlite_schema WHERE name LIKE 'note%' ORDER BY name") }
        #expect(schema.allSatisfy { $0.contains("\n") && !$0.contains("\r") })
    }

    /// `reseed verify SEED --migrations CRLF-FOLDER` passes, and rightly: the folder builds that seed.
    @Test func verifyPassesAnotherCheckoutThatBuildsTheSameSeed() throws {
        let lf = try MigrationsSandbox(Self.steps)
        let built = try lf.build()
        let crlf = try MigrationsSandbox(Self.checkout("\r\n"))
        #expect(try SeedVerifier(seed: built.manifestURL).verify(migrations: crlf.migrations).isClean)
        #expect(try crlf.build().manifest.sha256 == built.manifest.sha256)
    }

    /// Released checksums stay what they were: SHA-256 of the LF form, in lowercase hex.
    @Test func checksumOfOtherLineEndsIsTheSHA256OfTheLFForm() {
        let lf = "770423513bd0765c18e500000baec91976bcd8267a245437b32572665c6ac370"   // sha256sum of "a\n\nb\n"
        #expect(MigrationStep.checksum(of: Array("a\n\nb\n".utf8)) == lf)
        #expect(MigrationStep.checksum(of: Array("\u{FEFF}a\r\n\rb\r\n".utf8)) == lf)
    }

    /// Whatever bytes a step holds, its checksum is the SHA-256 of what the build reads of it
    /// (``MigrationStep/normalized(_:)``), read whole or in pieces; so equal checksums mean equal
    /// input to every step.
    @Test(.timeLimit(.minutes(10)))
    func checksumIsTheSHA256OfWhatTheBuildReads() {
        var rng = SplitMix64(seed: 0x5EED_0E01)
        var failures = FuzzFailures()
        let alphabet: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A, 0xEF, 0xBB, 0xBF, UInt8(ascii: "a"), UInt8(ascii: "\"")]
        for _ in 0..<10_000 {
            let bytes = (0..<rng.draw(0..<40)).map { _ in rng.draw(alphabet) }
            let normalized = MigrationStep.normalized(bytes)
            let hash = lowercaseHex(SHA256.hash(data: normalized))
            failures.check(MigrationStep.checksum(of: bytes) == hash, "checksum is not the hash of the normalised bytes: \(FuzzFailures.shown(bytes))")
            failures.check(!normalized.contains(0x0D), "a CR survived: \(FuzzFailures.shown(bytes))")
            // Fed in pieces, as a file is read: the same bytes whatever the cuts.
            var normalizer = LineEndNormalizer()
            var pieces: [UInt8] = []
            var start = 0
            while start < bytes.count {
                let end = min(bytes.count, start + rng.draw(0..<5))
                bytes[start..<end].withUnsafeBytes { normalizer.feed($0) { pieces += $0 } }
                start = end
            }
            normalizer.finish { pieces += $0 }
            failures.check(pieces == normalized, "fed in pieces, \(pieces) instead of \(normalized): \(FuzzFailures.shown(bytes))")
        }
        #expect(failures.count == 0, "\(failures.summary)")
    }
}

extension LineEndTests {
    /// The file is hashed as read a chunk at a time, across chunk boundaries (a CR ending one
    /// 1 MiB chunk, its LF starting the next), as the bytes are hashed whole.
    @Test func checksumOfTheFileIsTheChecksumOfItsBytes() throws {
        let sandbox = try MigrationsSandbox()
        var bytes: [UInt8] = [0xEF, 0xBB, 0xBF] + Array(repeating: UInt8(ascii: "a"), count: (1 << 20) - 4) + [0x0D, 0x0A, 0x0D]
        bytes += Array("b\r\n".utf8)
        let url = sandbox.migrations.appendingPathComponent("0001_big.sql")
        try Data(bytes).write(to: url)
        let step = try #require(MigrationStep(url: url))
        #expect(try step.checksum() == MigrationStep.checksum(of: bytes))
        #expect(try step.checksum() == MigrationStep.checksum(of: Array(repeating: UInt8(ascii: "a"), count: (1 << 20) - 4) + Array("\n\nb\n".utf8)))
    }
}
