import Foundation
import SystemPackage

/// The one shape of an error a user reads: `where: what failed[: why][; what to do]`, on one line.
///
/// `ReseedError`, `PackagingError` and the `reseed` command's own errors all render through it,
/// so every message reads the same way and none shows a type's debug description:
///
/// ```
/// /data/App.manifest.json: cannot open: no such file or directory; check the path
/// ```
package struct ErrorSentence: Sendable, CustomStringConvertible {
    /// The file (with `:line` when known), URL or option concerned; nil when there is none.
    package var location: String?
    /// What failed, such as "cannot open" or "not a seed manifest".
    package var what: String
    /// Why, such as the system's "no such file or directory".
    package var why: String?
    /// What the user can do about it, such as "check the path".
    package var advice: String?

    package init(location: String?, what: String, why: String? = nil, advice: String? = nil) {
        self.location = location
        self.what = what
        self.why = why
        self.advice = advice
    }

    /// The sentence, with any line break in a part written as a space so it stays one line.
    package var description: String {
        var text = location.map { "\($0): " } ?? ""
        text += what
        if let why, !why.isEmpty { text += ": " + why }
        if let advice, !advice.isEmpty { text += "; " + advice }
        return String(text.map { $0.isNewline ? " " : $0 })
    }
}

extension Errno {
    /// What `strerror(3)` says, starting lowercase so it reads inside a sentence: "no such file or directory".
    package var phrase: String { inSentence(description) }

    /// What a user can do about this failure; nil when there is nothing general to say.
    package var advice: String? {
        switch self {
        case .noSuchFileOrDirectory: "check the path"
        case .notDirectory: "check the path: a part of it is a file, not a folder"
        case .isDirectory: "name a file, not a folder"
        case .permissionDenied, .notPermitted: "check its permissions"
        case .readOnlyFileSystem: "choose a location that can be written"
        case .noSpace, .diskQuotaExceeded: "free some space, then try again"
        case .fileExists: "remove it or choose another name"
        case .tooManyOpenFiles, .noMemory: "close other programs, then try again"
        default: nil
        }
    }
}

/// The `errno` a failed file operation carries: an `Errno`, a ``FileSystemFailure``'s, the POSIX
/// error Foundation's file calls keep (as the error, or under `NSUnderlyingErrorKey`), or the one a
/// Foundation file error code stands for; nil otherwise.
package func systemErrno(of error: any Error) -> Errno? {
    if let errno = error as? Errno { return errno }
    if let failure = error as? FileSystemFailure { return failure.errno }
    let nsError = error as NSError
    // On Linux the underlying error is a `POSIXError` value, which `as? NSError` does not match.
    let posix = nsError.domain == NSPOSIXErrorDomain ? nsError : (nsError.userInfo[NSUnderlyingErrorKey] as? any Error).map { $0 as NSError }
    if let posix, posix.domain == NSPOSIXErrorDomain, let code = Int32(exactly: posix.code) { return Errno(rawValue: code) }
    guard nsError.domain == NSCocoaErrorDomain else { return nil }
    switch CocoaError.Code(rawValue: nsError.code) {
    case .fileNoSuchFile, .fileReadNoSuchFile: return .noSuchFileOrDirectory
    case .fileReadNoPermission, .fileWriteNoPermission: return .permissionDenied
    case .fileWriteOutOfSpace: return .noSpace
    case .fileWriteVolumeReadOnly: return .readOnlyFileSystem
    case .fileWriteFileExists: return .fileExists
    default: return nil
    }
}

/// What an error from outside Reseed's own types says, as the `what` of an ``ErrorSentence``:
/// the context of a `DecodingError`, a ``FileSystemFailure``'s summary, a Foundation error's own
/// text without its "The operation could not be completed." preamble; nil when only its `errno`
/// (see ``systemErrno(of:)``) has anything to say.
package func plainDescription(of error: any Error) -> String? {
    switch error {
    case let failure as FileSystemFailure:
        return failure.summary
    case is Errno:
        return nil
    case let error as DecodingError:
        switch error {
        case .dataCorrupted(let context), .keyNotFound(_, let context), .typeMismatch(_, let context), .valueNotFound(_, let context):
            return codingText(context.codingPath, context.debugDescription)
        @unknown default:
            return "the data cannot be decoded"
        }
    case let error as EncodingError:
        switch error {
        case .invalidValue(_, let context): return codingText(context.codingPath, context.debugDescription)
        @unknown default: return "the data cannot be encoded"
        }
    default:
        if systemErrno(of: error) != nil { return nil }
        let nsError = error as NSError
        if nsError.domain == NSCocoaErrorDomain || nsError.domain == NSPOSIXErrorDomain {
            let text = nsError.localizedDescription
            let generic = "The operation could not be completed."
            let rest = text.hasPrefix(generic) ? text.dropFirst(generic.count).trimmingCharacters(in: .whitespaces) : text
            return rest.isEmpty ? "the file operation failed" : inSentence(rest)
        }
        return String(describing: error)
    }
}

/// The message and `errno` of an error that says `what` failed because of `error`: the `errno`
/// when it has one (the sentence then gives its phrase), else `what: ` and its plain description.
///
/// ```swift
/// failure("cannot read the step", CocoaError(.fileReadNoSuchFile))   // ("cannot read the step", ENOENT)
/// ```
package func failure(_ what: String, _ error: any Error) -> (message: String, errno: Errno?) {
    let errno = systemErrno(of: error)
    let detail = errno == nil ? plainDescription(of: error).map { ": " + $0 } ?? "" : ""
    return (what + detail, errno)
}

/// `field.subfield: what the decoder said`, lowercase and without a final period.
private func codingText(_ codingPath: [any CodingKey], _ debugDescription: String) -> String {
    let path = codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    let text = inSentence(debugDescription)
    return path.isEmpty ? text : "\(path): \(text)"
}

/// `text` as a part of a sentence: its first letter lowercase, no final period
/// ("Couldn't connect to server." → "couldn't connect to server").
package func inSentence(_ text: some StringProtocol) -> String {
    var text = text.prefix(1).lowercased() + text.dropFirst()
    if text.hasSuffix(".") { text.removeLast() }
    return text
}
