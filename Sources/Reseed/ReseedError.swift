import Foundation
import GRDB
import ReseedSystem
import SystemPackage

/// The one error type of the `Reseed` library.
///
/// Every failure says which ``Step`` failed, on which path, and keeps the
/// underlying `Errno` or GRDB `DatabaseError` as a value. ``code`` is stable:
/// match on it rather than on the message.
///
/// ```swift
/// do {
///     let (database, outcome) = try launcher.launch()
/// } catch let error as ReseedError where error.code == .storeBusy {
///     // another process keeps the old store open: retry later
/// }
/// ```
public struct ReseedError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// A stable identifier of the kind of failure.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Another launcher kept the store's lock past the timeout.
        public static let lockTimeout = Code(rawValue: "lockTimeout")
        /// Another connection or process kept the old store open past the timeout.
        public static let storeBusy = Code(rawValue: "storeBusy")
        /// The manifest is missing, unreadable, too large, or has a bad field.
        public static let invalidManifest = Code(rawValue: "invalidManifest")
        /// The seed does not match its manifest (size, header, embedded metadata, SHA-256).
        public static let verificationFailed = Code(rawValue: "verificationFailed")
        /// A seed location that is neither a manifest nor a folder holding exactly one.
        public static let seedNotFound = Code(rawValue: "seedNotFound")
        /// A system call on the user's files failed; see ``ReseedError/errno``.
        public static let io = Code(rawValue: "io")
        /// SQLite failed; see ``ReseedError/databaseError``.
        public static let database = Code(rawValue: "database")
        /// An argument or configuration value that cannot work.
        public static let invalidArgument = Code(rawValue: "invalidArgument")
        /// A transfer from a channel failed: no answer within the timeout, a connection lost,
        /// an HTTP status that is not a success (see ``ReseedError/httpStatus``), or a server
        /// that sent more bytes than announced. Worth retrying later; a seed download resumes.
        public static let download = Code(rawValue: "download")
        /// A transfer from a channel averaged fewer bytes a second than the minimum over its window
        /// (``ChannelUpdater/Configuration/lowSpeedLimit`` over ``ChannelUpdater/Configuration/lowSpeedTime``),
        /// and was cut: a server, or a network, too slow to finish in reasonable time. Worth
        /// retrying later; what arrived of a seed is kept and the next try resumes.
        public static let downloadTooSlow = Code(rawValue: "downloadTooSlow")
        /// A channel manifest's signature does not verify with the app's public key: the
        /// manifest or its signature was changed, or another key signed it.
        public static let signature = Code(rawValue: "signature")
        /// A correctly signed channel manifest that this app must not install: it is larger than
        /// the limit, for another store, needs a newer Reseed, or is not newer than the installed seed.
        public static let channelRefused = Code(rawValue: "channelRefused")
        /// The user store cannot be used with this seed: a user table has the name of a seed
        /// table (it would hide the seed's rows), or a ``SeedReference`` names a table or column
        /// that does not exist.
        public static let userStoreConflict = Code(rawValue: "userStoreConflict")
        /// A file that is not a row-level delta this Reseed reads: not a delta at all, an unknown
        /// format, a header field missing or malformed, a delta table missing or of the wrong shape.
        public static let invalidDelta = Code(rawValue: "invalidDelta")
        /// A well-formed delta that does not fit the store it is applied to: it names a table the
        /// store lacks, deletes or updates a row the store does not have, or inserts a row it has.
        public static let deltaMismatch = Code(rawValue: "deltaMismatch")
        /// The data directory's filesystem has less free space than an install or an update needs
        /// (see *Reliability*, "Disk space"): found before anything is downloaded or copied, so
        /// nothing was written and the store is as it was. The message says both figures.
        public static let insufficientSpace = Code(rawValue: "insufficientSpace")
        /// A correctly signed `channel.json` whose `expires` time (plus the clock-skew allowance) has
        /// passed: the host serves an old manifest, or the publisher stopped re-signing. The message
        /// says when it expired; the store is as it was.
        public static let channelExpired = Code(rawValue: "channelExpired")
        /// `channel.json` is signed by a channel key the channel's root removed (`keys.json`'s
        /// `revoked`): the key may have leaked, so nothing it signed is installed.
        public static let channelKeyRevoked = Code(rawValue: "channelKeyRevoked")
        /// `channel.json` is signed by a channel key whose expiry in `keys.json` (plus the clock-skew
        /// allowance) has passed.
        public static let channelKeyExpired = Code(rawValue: "channelKeyExpired")

        /// What a user can do about a failure of this kind at `step`, when one thing fits every case.
        func advice(at step: Step) -> String? {
            switch self {
            case .lockTimeout, .storeBusy: "try again once the other process has finished with the store"
            case .invalidManifest where step == .checkKeys: "the channel's root key holder must write keys.json again (reseed keys)"
            case .invalidManifest: "fix the manifest, or build the seed again with reseed package"
            case .seedNotFound: "give the seed's manifest (*.manifest.json) or the folder that holds it"
            case .download: "check the channel's URL and the network, then try again"
            case .downloadTooSlow: "try again later or on a better network"
            case .signature: "check that the public key is the one made with the channel's private key"
            case .insufficientSpace: "free some space on that device, then try again"
            case .channelExpired where step == .checkKeys: "the channel's root key holder must re-sign keys.json (reseed keys --valid-for), or the host serves an old copy"
            case .channelExpired: "the publisher must re-sign the channel (reseed publish), or the host serves an old copy"
            case .channelKeyRevoked, .channelKeyExpired: "the publisher must publish again with a channel key listed in keys.json"
            default: nil
            }
        }
    }

    /// The step of the work that failed, in the order the launcher takes them.
    public enum Step: String, Sendable, Hashable, CaseIterable {
        case prepareDirectory, readManifest, lock, adoptLegacyStore, readPreferences, inspectStore, copy, verify
        case checkStoreNotInUse, removeSidecars, replace, recordVersion, open, cleanUp
        /// Updating from a channel: fetching `channel.json` and its signature, checking them, downloading the seed.
        case fetchManifest, checkSignature, checkManifest, download
        /// Reading a channel's public key (``ChannelPublicKey``).
        case readKey
        /// A user store (see ``Launcher/UserStore``): copying the user's tables out of a single-file
        /// store, opening it with the seed attached, running the app's migrator, checking it against the seed.
        case importUserTables, openUserStore, migrateUserStore, checkUserStore
        /// Applying a channel's row-level delta (see `SeedDelta`): decompressing it, copying the
        /// installed seed, applying the delta to the copy.
        case applyDelta
        /// Comparing what an install or an update will write with the data directory's free space.
        case checkSpace
        /// Reading and checking a channel's `keys.json` (see ``ChannelKeys``).
        case checkKeys
    }

    public var code: Code
    public var step: Step
    /// The file or directory concerned.
    public var path: String?
    /// The manifest field concerned, for ``Code/invalidManifest``.
    public var field: String?
    /// The underlying system error.
    public var errno: Errno?
    /// The underlying SQLite error.
    public var databaseError: DatabaseError?
    /// The URL concerned, for a failure talking to a channel.
    public var url: URL?
    /// The HTTP status the server answered, when it was not the expected one.
    public var httpStatus: Int?
    /// What went wrong, in one sentence.
    public var message: String
    /// What the user can do about it ("check the path"): the advice given to the initializer, else
    /// that of ``errno``, else that of ``code``; nil when none fits.
    public var advice: String? {
        get { givenAdvice ?? errno?.advice ?? code.advice(at: step) }
        set { givenAdvice = newValue }
    }
    private var givenAdvice: String?

    /// An error of `code` during `step`; everything else is optional.
    ///
    /// ```swift
    /// throw ReseedError(.seedNotFound, step: .readManifest, path: url.path, message: "no seed manifest or folder here")
    /// ```
    public init(
        _ code: Code, step: Step, path: String? = nil, field: String? = nil,
        errno: Errno? = nil, databaseError: DatabaseError? = nil, url: URL? = nil, httpStatus: Int? = nil, message: String,
        advice: String? = nil
    ) {
        self.code = code
        self.step = step
        self.path = path
        self.field = field
        self.errno = errno
        self.databaseError = databaseError
        self.url = url
        self.httpStatus = httpStatus
        self.message = message
        self.givenAdvice = advice
    }

    /// One sentence a user reads: where (the path or URL), what failed (the message), why (the
    /// system's or SQLite's words) and what to do: "/data/App.sqlite: cannot open the seed: no such
    /// file or directory; check the path".
    public var description: String {
        var location = path ?? url?.absoluteString
        if let path, let url { location = "\(path) (from \(url.absoluteString))" }
        return ErrorSentence(location: location, what: message, why: cause, advice: advice).description
    }

    /// Why, in the system's or SQLite's words ("no such file or directory", "database disk image is
    /// malformed"), or nil when neither says.
    public var cause: String? {
        let causes = [errno?.phrase, databaseError.map { $0.message ?? "SQLite error \($0.resultCode.rawValue)" }].compactMap { $0 }
        return causes.isEmpty ? nil : causes.joined(separator: ": ")
    }

    public var errorDescription: String? { description }
}

extension ReseedError {
    /// Converts any error thrown while doing `step` into a ``ReseedError`` that names it.
    static func wrapping(_ error: any Error, step: Step, path: String? = nil) -> ReseedError {
        switch error {
        case let error as ReseedError:
            return error
        case let failure as FileSystemFailure:
            return ReseedError(.io, step: step, path: failure.path, errno: failure.errno, message: failure.summary)
        case let error as Errno:
            return ReseedError(.io, step: step, path: path, errno: error, message: "the file operation failed")
        case let failure as CodecFailure:
            // Only compressed seeds are decoded: `path` names the seed file.
            return failure.reseedError(step: step, path: path)
        case let error as DatabaseError:
            return ReseedError(.database, step: step, path: path, databaseError: error, message: "SQLite failed")
        default:
            let (message, errno) = failure("the file operation failed", error)
            return ReseedError(.io, step: step, path: path, errno: errno, message: message)
        }
    }
}

/// Runs `body` as `step`: any error it throws comes out as a ``ReseedError`` naming the step.
package func during<T: ~Copyable>(_ step: ReseedError.Step, path: String? = nil, _ body: () throws -> T) throws(ReseedError) -> T {
    do {
        return try body()
    } catch {
        throw ReseedError.wrapping(error, step: step, path: path)
    }
}
