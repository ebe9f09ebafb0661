import Foundation
import GRDB
import Reseed
import SystemPackage

/// The one error type of `ReseedPackaging`: what failed, in which file, at which line.
///
/// ```swift
/// do {
///     try SeedBuilder(migrations: migrations, output: seedData, name: "triage", version: "2.0.0").build()
/// } catch {
///     print(error)   // Migrations/0003_injury.csv:14: record has 3 fields, the header has 4
/// }
/// ```
public struct PackagingError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// A stable identifier of the kind of failure.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A file in `Migrations/` whose name is not `NNNN_description.sql|csv|json`.
        public static let invalidStepName = Code(rawValue: "invalidStepName")
        /// Two steps with the same number.
        public static let duplicateStepNumber = Code(rawValue: "duplicateStepNumber")
        /// A data step whose table does not exist.
        public static let unknownTable = Code(rawValue: "unknownTable")
        /// A CSV header name or JSON key that is not a column of the table.
        public static let unknownColumn = Code(rawValue: "unknownColumn")
        /// A SQL statement SQLite refused.
        public static let sqlFailed = Code(rawValue: "sqlFailed")
        /// A row SQLite refused while loading a data step.
        public static let rowRejected = Code(rawValue: "rowRejected")
        /// `PRAGMA foreign_key_check` found violations after a step.
        public static let foreignKeyViolation = Code(rawValue: "foreignKeyViolation")
        /// A CSV file that does not follow RFC 4180, or a record with the wrong number of fields.
        public static let invalidCSV = Code(rawValue: "invalidCSV")
        /// A JSON step that does not parse or is not an array of objects.
        public static let invalidJSON = Code(rawValue: "invalidJSON")
        /// `PRAGMA integrity_check` did not say "ok".
        public static let integrityCheckFailed = Code(rawValue: "integrityCheckFailed")
        /// A seed name, version or option that cannot work.
        public static let invalidArgument = Code(rawValue: "invalidArgument")
        /// A file could not be read or written.
        public static let io = Code(rawValue: "io")
        /// Another build kept the output folder for longer than the lock timeout.
        public static let busy = Code(rawValue: "busy")
        /// SQLite failed outside any one step.
        public static let database = Code(rawValue: "database")
    }

    public var code: Code
    /// The file concerned (a step, a seed, a folder).
    public var path: String?
    /// The 1-based line in ``path``, when one is known.
    public var line: Int?
    public var message: String
    /// The underlying SQLite error.
    public var databaseError: DatabaseError?
    /// The underlying system error.
    public var errno: Errno?

    public init(_ code: Code, path: String? = nil, line: Int? = nil, message: String,
                databaseError: DatabaseError? = nil, errno: Errno? = nil) {
        self.code = code
        self.path = path
        self.line = line
        self.message = message
        self.databaseError = databaseError
        self.errno = errno
    }

    /// `path:line: message`, the form editors and CI logs link to.
    public var description: String {
        var text = ""
        if let path { text += path + (line.map { ":\($0)" } ?? "") + ": " }
        text += message
        if let errno { text += " [errno \(errno.rawValue): \(errno.description)]" }
        return text
    }

    public var errorDescription: String? { description }

    static func wrapping(_ error: any Error, path: String?, line: Int? = nil) -> PackagingError {
        switch error {
        case let error as PackagingError: error
        case let error as DatabaseError:
            PackagingError(.database, path: path, line: line, message: error.message ?? "\(error)", databaseError: error)
        case let error as ReseedError:
            PackagingError(.io, path: error.path ?? path, line: line, message: error.message, errno: error.errno)
        default:
            PackagingError(.io, path: path, line: line, message: "\(error)")
        }
    }
}
