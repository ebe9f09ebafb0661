import Foundation
import GRDB
import Reseed
import ReseedSystem
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
        /// A database `reseed init --from` cannot turn into steps exactly (a virtual table, say).
        public static let notImportable = Code(rawValue: "notImportable")
        /// A file or folder that would be overwritten (`reseed init`'s `reseed.json`, `Migrations/`).
        public static let alreadyExists = Code(rawValue: "alreadyExists")

        /// What a user can do about a failure of this kind, when one thing fits every case.
        var advice: String? {
            switch self {
            case .invalidStepName: "name each step NNNN_description.sql, .csv or .json"
            case .duplicateStepNumber: "give each step a number of its own"
            case .busy: "try again once the other build has finished"
            default: nil
            }
        }
    }

    /// The most bytes a message keeps (``maxMessageBytes``, 1 KiB): an error quotes its input,
    /// and an input can be a gigabyte long.
    public static let maxMessageBytes = 1024

    public var code: Code
    /// The file concerned (a step, a seed, a folder).
    public var path: String?
    /// The 1-based line in ``path``, when one is known.
    public var line: Int?
    /// What went wrong; at most ``maxMessageBytes`` (the middle of a longer one is cut out).
    public var message: String
    /// The underlying SQLite error.
    public var databaseError: DatabaseError?
    /// The underlying system error.
    public var errno: Errno?
    /// What the user can do about it ("check the path"): the advice given to the initializer, else
    /// that of ``errno``, else that of ``code``; nil when none fits.
    public var advice: String? {
        get { givenAdvice ?? errno?.advice ?? code.advice }
        set { givenAdvice = newValue }
    }
    private var givenAdvice: String?

    /// An error of `code`; `message` says what failed, `path` and `line` where.
    ///
    /// ```swift
    /// throw PackagingError(.invalidStepName, path: file.path, message: "not a step name")
    /// ```
    public init(_ code: Code, path: String? = nil, line: Int? = nil, message: String,
                databaseError: DatabaseError? = nil, errno: Errno? = nil, advice: String? = nil) {
        self.code = code
        self.path = path
        self.line = line
        self.message = excerpt(message, limit: Self.maxMessageBytes, escaping: false)
        self.databaseError = databaseError
        self.errno = errno
        self.givenAdvice = advice
    }

    /// `path:line: message: why; what to do`, the form editors and CI logs link to:
    /// "Migrations/0003_injury.csv:14: record has 3 fields, the header has 4".
    public var description: String {
        ErrorSentence(location: path.map { $0 + (line.map { ":\($0)" } ?? "") }, what: message, why: errno?.phrase,
                      advice: advice).description
    }

    public var errorDescription: String? { description }

    /// An ``Code/io`` error: `what` failed on `path` because of `error` (its `errno`, or its own words when it has none).
    static func io(_ what: String, path: String, error: any Error) -> PackagingError {
        let (message, errno) = failure(what, error)
        return PackagingError(.io, path: path, message: message, errno: errno)
    }

    static func wrapping(_ error: any Error, path: String?, line: Int? = nil) -> PackagingError {
        switch error {
        case let error as PackagingError: error
        case let error as DatabaseError:
            // Not `"\(error)"`, which quotes the whole SQL.
            PackagingError(.database, path: path, line: line, message: error.message ?? "SQLite error \(error.resultCode)", databaseError: error)
        case let error as ReseedError:
            PackagingError(.io, path: error.path ?? path, line: line, message: error.message, databaseError: error.databaseError,
                           errno: error.errno, advice: error.advice)
        case let failure as FileSystemFailure:
            PackagingError(.io, path: failure.path, line: line, message: failure.summary, errno: failure.errno)
        default:
            PackagingError(.io, path: path, line: line, message: failure("the file operation failed", error).message, errno: systemErrno(of: error))
        }
    }
}

/// At most about `limit` bytes of `text`: its start and its end around `…[N bytes]…` when it is longer,
/// cut between characters. What an error quotes of a step's input, so that a gigabyte-long field or
/// token makes a message of a few hundred bytes. With `escaping`, control characters are written
/// `\n`, `\r`, `\t` or `\u{…}`, so the quote stays on the message's one line.
func excerpt(_ text: String, limit: Int = 200, escaping: Bool = true) -> String {
    let utf8 = text.utf8
    func escaped(_ part: Substring.UTF8View) -> String {
        let part = String(Substring(part))
        guard escaping else { return part }
        var out = ""
        for scalar in part.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F: out += "\\u{\(String(scalar.value, radix: 16))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
    guard utf8.count > limit else { return escaped(utf8[...]) }
    // UTF-8 continuation bytes are 0b10xxxxxx: a cut moves off them to a character's start.
    func isContinuation(_ index: String.Index) -> Bool { index < utf8.endIndex && utf8[index] & 0xC0 == 0x80 }
    var headEnd = utf8.index(utf8.startIndex, offsetBy: limit * 3 / 4)
    while headEnd > utf8.startIndex, isContinuation(headEnd) { utf8.formIndex(before: &headEnd) }
    var tailStart = utf8.index(utf8.endIndex, offsetBy: -(limit / 4))
    while isContinuation(tailStart) { utf8.formIndex(after: &tailStart) }
    return escaped(utf8[..<headEnd]) + "…[\(utf8.count) bytes]…" + escaped(utf8[tailStart...])
}
