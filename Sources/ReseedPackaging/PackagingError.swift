import Foundation
import GRDB
import Reseed
import ReseedSystem
import SystemPackage

/// The one error type of `ReseedPackaging`: what failed, during which ``Step``, in which file, at which line.
///
/// The packaging work (building, verifying, comparing, deltas, `reseed init`, keys, publishing)
/// throws only this type. A failure of the `Reseed` library met on the way (a ``ReseedError``, a system or SQLite error) becomes one, keeping its
/// path, `Errno` and `DatabaseError` as values. ``code`` is stable: match on it rather than on the message.
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
        /// Another build kept the output folder, or another publish the channel folder, for longer than the lock timeout.
        public static let busy = Code(rawValue: "busy")
        /// SQLite failed outside any one step.
        public static let database = Code(rawValue: "database")
        /// A database `reseed init --from` cannot turn into steps exactly (a virtual table, say).
        public static let notImportable = Code(rawValue: "notImportable")
        /// A file or folder that would be overwritten (`reseed init`'s `reseed.json`, `Migrations/`).
        public static let alreadyExists = Code(rawValue: "alreadyExists")
        /// A seed location that is neither a manifest nor a folder holding exactly one, or a seed file that is missing.
        public static let seedNotFound = Code(rawValue: "seedNotFound")
        /// A seed manifest that is unreadable, too large, or has a bad field.
        public static let invalidManifest = Code(rawValue: "invalidManifest")
        /// A seed that does not match its manifest (size, SHA-256, content hash), or a compressed
        /// seed that does not decompress.
        public static let verificationFailed = Code(rawValue: "verificationFailed")

        /// The code of a failure of the `Reseed` library: the same name (``io``, ``database``,
        /// ``invalidArgument``, ``seedNotFound``, ``invalidManifest``, ``verificationFailed``), except
        /// that a lock held too long (`lockTimeout`, `storeBusy`) is ``busy``.
        init(_ code: ReseedError.Code) {
            switch code {
            case .lockTimeout, .storeBusy: self = .busy
            default: self.init(rawValue: code.rawValue)
            }
        }

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

    /// The step of the work that failed.
    public enum Step: String, Sendable, Hashable, CaseIterable {
        /// Reading `Migrations/`: listing its steps, reading a step's file, computing its checksum.
        case readMigrations
        /// Building a seed from its steps (``SeedBuilder``, `reseed package`): running each step,
        /// the checks after it, and writing the seed and its manifest into the output folder.
        case build
        /// Checking a built seed (``SeedVerifier``, `reseed verify`).
        case verify
        /// Comparing two seeds (``SeedDiff``, `reseed diff`).
        case diff
        /// Building a row-level delta from one seed to another and checking it (``SeedDeltaBuilder``).
        case buildDelta
        /// Turning an existing database into a project (``ProjectImporter``, `reseed init --from`).
        case importDatabase
        /// Reading a channel's private key (``ChannelPrivateKey/init(contentsOf:)``).
        case readKey
        /// Writing a new key pair (``ChannelPrivateKey/generate(privateKeyFile:publicKeyFile:)``, `reseed keygen`).
        case writeKey
        /// Signing a channel manifest (``ChannelPrivateKey/signature(for:)``).
        case sign
        /// Copying a seed into a channel folder and replacing its signed `channel.json` (``ChannelPublisher``, `reseed publish`).
        case publish
    }

    /// The most bytes a message keeps (``maxMessageBytes``, 1 KiB): an error quotes its input,
    /// and an input can be a gigabyte long.
    public static let maxMessageBytes = 1024

    public var code: Code
    /// The step of the work that failed; a failure met inside another step's work names the inner
    /// one (a delta that cannot be built during a publish says ``Step/buildDelta``).
    public var step: Step
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

    /// An error of `code` during `step`; `message` says what failed, `path` and `line` where.
    ///
    /// ```swift
    /// throw PackagingError(.invalidStepName, step: .readMigrations, path: file.path, message: "not a step name")
    /// ```
    public init(_ code: Code, step: Step, path: String? = nil, line: Int? = nil, message: String,
                databaseError: DatabaseError? = nil, errno: Errno? = nil, advice: String? = nil) {
        self.code = code
        self.step = step
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

    /// An ``Code/io`` error during `step`: `what` failed on `path` because of `error` (its `errno`, or its own words when it has none).
    static func io(_ what: String, step: Step, path: String, error: any Error) -> PackagingError {
        let (message, errno) = failure(what, error)
        return PackagingError(.io, step: step, path: path, message: message, errno: errno)
    }

    /// The `Reseed` library's `error`, met during `step`: its code (see ``Code/init(_:)``), path,
    /// `Errno`, `DatabaseError` and advice, and the sentence it prints (SQLite's words are part of the message).
    init(_ error: ReseedError, step: Step, path: String? = nil, line: Int? = nil) {
        let sqlite = error.databaseError.map { ": " + ($0.message ?? "SQLite error \($0.resultCode.rawValue)") } ?? ""
        self.init(Code(error.code), step: step, path: error.path ?? path, line: line, message: error.message + sqlite,
                  databaseError: error.databaseError, errno: error.errno, advice: error.advice)
    }

    /// Any error thrown during `step` as a ``PackagingError``; one that already is one passes through, naming its own step.
    static func wrapping(_ error: any Error, step: Step, path: String?, line: Int? = nil) -> PackagingError {
        switch error {
        case let error as PackagingError: error
        case let error as DatabaseError:
            // Not `"\(error)"`, which quotes the whole SQL.
            PackagingError(.database, step: step, path: path, line: line, message: error.message ?? "SQLite error \(error.resultCode)", databaseError: error)
        case let error as ReseedError:
            PackagingError(error, step: step, path: path, line: line)
        case let failure as FileSystemFailure:
            PackagingError(.io, step: step, path: failure.path, line: line, message: failure.summary, errno: failure.errno)
        case CodecFailure.io(let errno):
            PackagingError(.io, step: step, path: path, line: line, message: "the file operation failed", errno: errno)
        default:
            PackagingError(.io, step: step, path: path, line: line, message: failure("the file operation failed", error).message, errno: systemErrno(of: error))
        }
    }
}

/// Runs `body` as `step`: whatever it throws comes out as a ``PackagingError`` about `path`
/// (one that already is one keeps its own step and path).
func packaging<T: ~Copyable>(_ step: PackagingError.Step, path: String?, line: Int? = nil, _ body: () throws -> T) throws(PackagingError) -> T {
    do {
        return try body()
    } catch {
        throw PackagingError.wrapping(error, step: step, path: path, line: line)
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
