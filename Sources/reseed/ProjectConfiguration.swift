import Foundation
import Reseed

/// `reseed.json` at the repository root: the defaults of `reseed package` and `reseed launch`.
///
/// ```json
/// {
///   "name": "triage",
///   "version": "2.0.0",
///   "migrations": "Migrations",
///   "output": "SeedData",
///   "dataDirectory": ".reseed-data"
/// }
/// ```
/// Every key is optional; relative paths are relative to the file's folder.
/// Command-line flags win over the file.
struct ProjectConfiguration {
    static let fileName = "reseed.json"

    var name: String?
    var version: String?
    var migrations: URL?
    var output: URL?
    var dataDirectory: URL?
    /// Where the file was found, nil when there is none.
    var url: URL?

    /// Reads `reseed.json` from the current folder; an empty configuration when absent.
    static func load(from folder: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)) throws -> ProjectConfiguration {
        let url = folder.appendingPathComponent(fileName)
        guard let data = FileManager.default.contents(atPath: url.path) else { return ProjectConfiguration() }
        let root: JSONNode
        do {
            root = try JSONNode.parse(Array(data), maxDepth: 8)
        } catch {
            throw ConfigurationError(path: url.path, message: "not valid JSON: \(error)")
        }
        guard case .object(let members) = root.value else {
            throw ConfigurationError(path: url.path, message: "expected a JSON object")
        }
        let known: Set<String> = ["name", "version", "migrations", "output", "dataDirectory"]
        if let unknown = members.first(where: { !known.contains($0.key) }) {
            throw ConfigurationError(path: url.path, message: "unknown key \"\(unknown.key)\" (known: \(known.sorted().joined(separator: ", ")))")
        }
        func string(_ key: String) throws -> String? {
            guard let node = root[key] else { return nil }
            guard let text = node.string else { throw ConfigurationError(path: url.path, message: "\"\(key)\" must be a string") }
            return text
        }
        func path(_ key: String) throws -> URL? {
            try string(key).map { URL(fileURLWithPath: $0, relativeTo: folder).standardizedFileURL }
        }
        return ProjectConfiguration(
            name: try string("name"), version: try string("version"), migrations: try path("migrations"),
            output: try path("output"), dataDirectory: try path("dataDirectory"), url: url)
    }
}

struct ConfigurationError: Error, CustomStringConvertible {
    var path: String
    var message: String
    var description: String { "\(path): \(message)" }
}

/// Resolves a command-line path against the current folder.
func fileURL(_ path: String) -> URL {
    URL(fileURLWithPath: path).standardizedFileURL
}
