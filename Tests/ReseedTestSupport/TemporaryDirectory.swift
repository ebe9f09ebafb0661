import Foundation

/// A fresh directory under the system's temporary folder, removed when the value is released.
///
/// ```swift
/// let sandbox = try TemporaryDirectory()
/// let dataDirectory = sandbox.url.appendingPathComponent("data")
/// ```
public final class TemporaryDirectory: Sendable {
    /// The directory; it exists until this object is released.
    public let url: URL

    /// Creates the directory.
    ///
    /// - Parameter prefix: the start of its name, for telling test leftovers apart. Default "reseed".
    /// - Throws: the file system's error when it cannot be created.
    public init(prefix: String = "reseed") throws {
        let name = "\(prefix)-\(UUID().uuidString.prefix(8).lowercased())"
        url = FileManager.default.temporaryDirectory.appendingPathComponent(name, isDirectory: true).standardizedFileURL
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// `url/component`.
    public func appending(_ component: String) -> URL {
        url.appendingPathComponent(component)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }
}
