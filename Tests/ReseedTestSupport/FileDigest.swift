import Foundation
import ReseedSystem

/// Lowercase hex SHA-256 of the file at `url`'s bytes, as `sha256sum` prints it: for checking that
/// a file (the installed seed) was not written at all, not merely that it still holds the same rows.
///
/// - Throws: ``FileSystemFailure`` when the file cannot be opened or read.
public func fileSHA256(_ url: URL) throws -> String {
    try FileFacts(path: url.path).sha256
}
