import Foundation
import GRDB
import Reseed
import ReseedSystem

/// Proves that a seed is exactly what its manifest, and optionally its `Migrations/`, say.
///
/// Checks the manifest against the file (size, SHA-256, header fields; of the decompressed
/// database, for a compressed seed), runs
/// `PRAGMA integrity_check` and `foreign_key_check` (and the FTS `integrity-check` and R-tree
/// `rtreecheck()` of each such table), compares the embedded
/// metadata with the manifest, recomputes the ``SeedContentHash`` and compares it with
/// the manifest's `contentHash` (a manifest without one gets a note, not a finding), and, given a migrations folder, compares the
/// steps recorded in the seed with the steps in the folder: each added,
/// missing or edited step is a finding. Checksums normalise line endings and a
/// BOM, so a checkout with CRLF endings is not "edited"; the build reads steps
/// normalised the same way, so such a checkout also builds the same seed: a step
/// passes exactly when it would build what the seed holds
/// (``MigrationStep/checksum(of:)``).
///
/// ```swift
/// let report = try SeedVerifier(seed: URL(fileURLWithPath: "SeedData")).verify(migrations: URL(fileURLWithPath: "Migrations"))
/// for finding in report.findings { print(finding) }
/// ```
public struct SeedVerifier: Sendable {
    /// One way the seed differs from what it should be.
    public struct Finding: Sendable, Hashable, Codable, CustomStringConvertible {
        public enum Kind: String, Sendable, Hashable, Codable {
            case sizeMismatch, checksumMismatch, headerMismatch, integrity, foreignKeys, metadataMismatch
            /// The content hash of the seed's schema and rows is not the manifest's `contentHash`.
            case contentHashMismatch
            /// A compressed seed file that does not decompress (a damaged or truncated gzip stream,
            /// or one that inflates past the manifest's size); nothing else could be checked.
            case compression
            /// A step in the folder that the seed was not built with.
            case stepAdded
            /// A step the seed was built with that the folder no longer has.
            case stepMissing
            /// A step whose content changed since the seed was built.
            case stepEdited
        }

        public var kind: Kind
        public var message: String
        /// The step concerned, for the step findings.
        public var step: String?

        public var description: String { message }
    }

    /// The findings; empty when the seed is sound and matches.
    public struct Report: Sendable, Codable {
        public var seed: String
        public var name: String
        public var version: String
        public var findings: [Finding]
        /// What is worth knowing but is no failure, such as a manifest written before content hashes.
        public var notes: [String] = []
        public var isClean: Bool { findings.isEmpty }
    }

    /// The seed: a manifest, or a folder holding one.
    public var seed: URL

    public init(seed: URL) {
        self.seed = seed
    }

    /// Runs every check and collects every finding (it does not stop at the first).
    ///
    /// - Throws: ``PackagingError`` (step ``PackagingError/Step/verify``) only when the seed cannot
    ///   be examined at all (no manifest, unreadable file).
    public func verify(migrations: URL? = nil) throws(PackagingError) -> Report {
        let located: Seed
        do {
            located = try Seed(at: seed)
        } catch {
            throw PackagingError.wrapping(error, step: .verify, path: seed.path)
        }
        let manifest = located.manifest
        var findings: [Finding] = []
        func add(_ kind: Finding.Kind, _ message: String, step: String? = nil) {
            findings.append(Finding(kind: kind, message: message, step: step))
        }
        // A compressed seed is checked as the database it decompresses to, in a temporary copy;
        // a size or SHA-256 that differs from the manifest's is a finding below, not a failure here.
        let file: Seed.DatabaseFile
        do {
            file = try located.databaseFile(checking: false)
        } catch where error.code == .verificationFailed {
            add(.compression, "\(manifest.file) does not decompress: \(error.message)")
            return Report(seed: located.fileURL.path, name: manifest.name, version: manifest.version, findings: findings)
        } catch {
            throw PackagingError.wrapping(error, step: .verify, path: located.fileURL.path)
        }
        let path = file.path

        let facts = try packaging(.verify, path: path) { try FileFacts(path: path) }
        if facts.size != manifest.size { add(.sizeMismatch, "\(manifest.file) is \(facts.size) bytes, the manifest says \(manifest.size)") }
        if facts.sha256 != manifest.sha256 { add(.checksumMismatch, "\(manifest.file) has SHA-256 \(facts.sha256), the manifest says \(manifest.sha256)") }
        if let header = facts.header {
            if header.pageSize != manifest.pageSize || header.userVersion != manifest.userVersion || header.applicationID != manifest.applicationID {
                add(.headerMismatch, "header page size/user_version/application_id are \(header.pageSize)/\(header.userVersion)/\(header.applicationID), the manifest says \(manifest.pageSize)/\(manifest.userVersion)/\(manifest.applicationID)")
            }
            if !header.isRollbackJournal { add(.headerMismatch, "\(manifest.file) is in WAL mode; a seed must use a rollback journal") }
        } else {
            add(.headerMismatch, "\(manifest.file) does not start with a SQLite header")
        }

        let (embedded, unregistered) = try inspect(path: path, add: add)
        if let embedded {
            if embedded.name != manifest.name || embedded.version != manifest.version {
                add(.metadataMismatch, "the seed says it is '\(embedded.name)' \(embedded.version), the manifest says '\(manifest.name)' \(manifest.version)")
            }
            if embedded.steps != manifest.steps {
                add(.metadataMismatch, "the steps recorded in the seed differ from the manifest's")
            }
        } else {
            add(.metadataMismatch, "the seed has no \(SeedMetadata.tableName) table with a name and version")
        }

        var notes: [String] = []
        if !unregistered.isEmpty {
            let one = unregistered.count == 1
            notes.append("""
                \(unregistered.joined(separator: " and ")) \(one ? "is" : "are") not registered in gpkg_contents, so GDAL lists \
                \(one ? "it" : "them") as \(one ? "a layer" : "layers") of this GeoPackage (a seed built by an earlier Reseed): \
                run reseed package to build it with the registration
                """)
        }
        let stated = [("content hash", manifest.contentHash), ("incremental content hash", manifest.incrementalContentHash)]
        if let (name, expected) = stated.first(where: { $0.1 != nil }), let expected {
            do {
                // The incremental hash only when the manifest states one: it costs a pass of ChaCha20 over every row.
                let computed: [String?]
                if manifest.incrementalContentHash == nil {
                    computed = [try SeedContentHash.compute(path: path), nil]
                } else {
                    let both = try SeedContentHash.computeWithIncremental(path: path)
                    computed = [both.contentHash, both.incremental.hash]
                }
                // One finding: changed content changes both hashes.
                for ((name, stated), actual) in zip(stated, computed) {
                    if let stated, let actual, stated != actual {
                        add(.contentHashMismatch, "\(manifest.file) has \(name) \(actual), the manifest says \(stated)")
                        break
                    }
                }
            } catch {
                // Unreadable content cannot match: a finding, and the other checks still run. The
                // cause without the path and advice of the error's own sentence: the finding is one sentence.
                add(.contentHashMismatch, "the \(name) of \(manifest.file) cannot be computed, so it is not the manifest's \(expected): "
                    + ([error.message] + [error.cause].compactMap { $0 }).joined(separator: ": "))
            }
        }
        if manifest.contentHash == nil {
            notes.append("no content hash: the manifest predates contentHash (run reseed package to record it)")
        }

        if let migrations {
            let folder = try MigrationsFolder(at: migrations)
            let current = try folder.recordedSteps()
            let built = embedded?.steps ?? manifest.steps
            let builtByID = Dictionary(built.map { ($0.id, $0.checksum) }, uniquingKeysWith: { first, _ in first })
            let currentIDs = Set(current.map(\.id))
            for step in current {
                if let checksum = builtByID[step.id] {
                    if checksum != step.checksum {
                        add(.stepEdited, "step \(step.id) was edited after the seed was built (a released step must not change; add a new step)", step: step.id)
                    }
                } else {
                    add(.stepAdded, "step \(step.id) is not in the seed (run reseed package)", step: step.id)
                }
            }
            for step in built where !currentIDs.contains(step.id) {
                add(.stepMissing, "step \(step.id) built the seed but is no longer in \(migrations.path)", step: step.id)
            }
        }
        return Report(seed: located.fileURL.path, name: manifest.name, version: manifest.version, findings: findings, notes: notes)
    }

    /// FTS `integrity-check` and R-tree `rtreecheck()` of every such table. The FTS check is an
    /// `INSERT` that writes nothing; it runs on a connection that may write, in a transaction
    /// rolled back, so the file is left byte for byte as it was.
    private func virtualTableProblems(path: String) throws -> [String] {
        var configuration = Configuration()
        configuration.label = "reseed.verify"
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        var problems: [String] = []
        try queue.inTransaction(.deferred) { db in
            problems = try VirtualTableCheck.problems(db)
            return .rollback
        }
        return problems
    }

    /// The embedded metadata (nil when unreadable), and Reseed's tables a GeoPackage seed leaves
    /// unregistered (see ``GeoPackageRegistration/unregistered(_:)``).
    private func inspect(path: String, add: (Finding.Kind, String, String?) -> Void) throws(PackagingError) -> (SeedMetadata?, [String]) {
        var configuration = Configuration()
        configuration.readonly = true
        return try packaging(.verify, path: path) {
            do {
                let queue = try DatabaseQueue(path: path, configuration: configuration)
                defer { try? queue.close() }
                let (metadata, unregistered, hasVirtualTables) = try queue.read { db in
                    let integrity = try String.fetchAll(db, sql: "PRAGMA integrity_check")
                    if integrity != ["ok"] { add(.integrity, "integrity_check: \(integrity.prefix(5).joined(separator: "; "))", nil) }
                    let violations = try Row.fetchAll(db, sql: "PRAGMA foreign_key_check")
                    if !violations.isEmpty { add(.foreignKeys, "\(violations.count) foreign key violation(s)", nil) }
                    let virtual = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM pragma_table_list WHERE schema = 'main' AND type = 'virtual')") ?? false
                    return (try SeedMetadata.read(db), try GeoPackageRegistration.unregistered(db), virtual)
                }
                if hasVirtualTables {
                    do {
                        for problem in try virtualTableProblems(path: path) { add(.integrity, "the index of \(problem)", nil) }
                    } catch let error as DatabaseError {
                        add(.integrity, """
                            the FTS and R-tree indexes could not be checked (\(error.message ?? "\(error.resultCode)")): \
                            their check needs a connection that may write, though it writes nothing
                            """, nil)
                    }
                }
                return (metadata, unregistered)
            } catch let error as DatabaseError {
                // A damaged seed is a finding, not a reason to stop looking.
                add(.integrity, "SQLite cannot read the seed: \(error.message ?? "\(error.resultCode)")", nil)
                return (nil, [])
            }
        }
    }
}
