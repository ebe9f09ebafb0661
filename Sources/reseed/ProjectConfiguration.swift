import Foundation
import Reseed
import ReseedSystem
import SystemPackage

/// `reseed.json` at the repository root: the defaults of `reseed package` and `reseed launch`.
///
/// ```json
/// {
///   "name": "triage",
///   "version": "2.0.0",
///   "migrations": "Migrations",
///   "output": "SeedData",
///   "dataDirectory": ".reseed-data",
///   "userStore": "triage-user",
///   "userTables": ["incident"],
///   "userReferences": ["incident.category_id->injury_category.id"],
///   "userMigrations": "UserMigrations",
///   "userVersion": 7,
///   "applicationID": 0,
///   "analyze": false
/// }
/// ```
/// Every key is optional; relative paths are relative to the file's folder. `userVersion` and
/// `applicationID` set the seed's header values (else it keeps what its steps left); `analyze`
/// ends the build with `ANALYZE` (else the statistics the steps carry are kept).
/// Command-line flags win over the file.
struct ProjectConfiguration {
    static let fileName = "reseed.json"
    /// The largest `reseed.json` read (64 KiB): the file is a few short strings.
    static let maximumSize = 64 << 10

    var name: String?
    var version: String?
    var migrations: URL?
    var output: URL?
    var dataDirectory: URL?
    /// The user store's name (see ``UserStoreOptions``).
    var userStore: String?
    /// Tables carried out of a single-file store into the user store; nil when the key is absent.
    var userTables: [String]?
    /// User columns that point at seed keys; nil when the key is absent.
    var userReferences: [SeedReference]?
    /// The folder of the user store's `*.sql` migrations.
    var userMigrations: URL?
    /// The seed's `user_version` and `application_id` (see `SeedBuilder`); nil keeps the steps' own.
    var userVersion: Int32?
    var applicationID: Int32?
    /// Whether `package` ends with `ANALYZE`.
    var analyze = false
    /// Where the file was found, nil when there is none.
    var url: URL?

    /// Reads `reseed.json` from the current folder; an empty configuration when absent.
    ///
    /// - Throws: ``ConfigurationError`` naming the file, and the key when one is wrong: not a
    ///   regular file, over ``maximumSize``, not JSON, not an object, an unknown key, a value
    ///   that is not a string.
    static func load(from folder: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)) throws(ConfigurationError) -> ProjectConfiguration {
        let url = folder.appendingPathComponent(fileName)
        guard let data = try contents(of: url) else { return ProjectConfiguration() }
        let file: File
        do {
            file = try JSONDecoder().decode(File.self, from: data)
        } catch {
            throw ConfigurationError(path: url.path, message: File.message(for: error, in: data))
        }
        func path(_ text: String?) -> URL? {
            text.map { URL(fileURLWithPath: $0, relativeTo: folder).standardizedFileURL }
        }
        var references: [SeedReference]?
        if let texts = file.userReferences {
            do throws(ReseedError) {
                references = try texts.map { text throws(ReseedError) in try SeedReference(parsing: text) }
            } catch {
                throw ConfigurationError(path: url.path, message: "\"userReferences\": \(error.message)")
            }
        }
        return ProjectConfiguration(
            name: file.name, version: file.version, migrations: path(file.migrations),
            output: path(file.output), dataDirectory: path(file.dataDirectory), userStore: file.userStore,
            userTables: file.userTables, userReferences: references, userMigrations: path(file.userMigrations),
            userVersion: file.userVersion, applicationID: file.applicationID, analyze: file.analyze ?? false, url: url)
    }

    /// The file's bytes; nil when there is no file (a dangling link counts as none).
    ///
    /// Read as the library reads its manifest and preferences (`readSmallFileIfPresent`): a folder,
    /// a FIFO or a device is refused without a read that could block or never end, and no more
    /// than ``maximumSize`` + 1 bytes are read.
    private static func contents(of url: URL) throws(ConfigurationError) -> Data? {
        do {
            let tooLarge = ReseedError(.invalidArgument, step: .readManifest, path: url.path, message: "over \(maximumSize) bytes: not a configuration file")
            return try readSmallFileIfPresent(url, limit: maximumSize, step: .readManifest) { _ in tooLarge }.map { Data($0) }
        } catch {
            throw ConfigurationError(path: url.path, message: error.message, errno: error.errno)
        }
    }

    /// The keys of the file as written; paths still relative to its folder.
    private struct File: Decodable {
        enum CodingKeys: String, CodingKey, CaseIterable {
            case name, version, migrations, output, dataDirectory
            case userStore, userTables, userReferences, userMigrations
            case userVersion, applicationID, analyze

            /// What the key's value must be, for the message when it is not.
            var expected: String {
                switch self {
                case .userTables, .userReferences: "an array of strings"
                case .userVersion, .applicationID: "a whole number from -2147483648 to 2147483647"
                case .analyze: "true or false"
                default: "a string"
                }
            }
        }

        /// Any key of the object, to find one that is not a ``CodingKeys`` case.
        struct AnyKey: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        /// A key `JSONDecoder` would otherwise ignore: most likely a misspelt one.
        struct UnknownKey: Error {
            var key: String
        }

        var name: String?
        var version: String?
        var migrations: String?
        var output: String?
        var dataDirectory: String?
        var userStore: String?
        var userTables: [String]?
        var userReferences: [String]?
        var userMigrations: String?
        var userVersion: Int32?
        var applicationID: Int32?
        var analyze: Bool?

        init(from decoder: any Decoder) throws {
            if let unknown = try decoder.container(keyedBy: AnyKey.self).allKeys.first(where: { CodingKeys(stringValue: $0.stringValue) == nil }) {
                throw UnknownKey(key: unknown.stringValue)
            }
            let container = try decoder.container(keyedBy: CodingKeys.self)
            // Present means a string: `null` is refused as a number or an object is.
            func string(_ key: CodingKeys) throws -> String? {
                container.contains(key) ? try container.decode(String.self, forKey: key) : nil
            }
            name = try string(.name)
            version = try string(.version)
            migrations = try string(.migrations)
            output = try string(.output)
            dataDirectory = try string(.dataDirectory)
            userStore = try string(.userStore)
            userMigrations = try string(.userMigrations)
            func strings(_ key: CodingKeys) throws -> [String]? {
                container.contains(key) ? try container.decode([String].self, forKey: key) : nil
            }
            userTables = try strings(.userTables)
            userReferences = try strings(.userReferences)
            // Read as a number, then checked: Foundation's Int32 decoding reports an out-of-range
            // value as invalid JSON without naming the key.
            func int32(_ key: CodingKeys) throws -> Int32? {
                guard container.contains(key) else { return nil }
                let number = try container.decode(Double.self, forKey: key)
                guard let value = Int32(exactly: number) else {
                    throw DecodingError.typeMismatch(Int32.self, .init(codingPath: [key], debugDescription: "\(number) is not a 32-bit whole number"))
                }
                return value
            }
            userVersion = try int32(.userVersion)
            applicationID = try int32(.applicationID)
            analyze = container.contains(.analyze) ? try container.decode(Bool.self, forKey: .analyze) : nil
        }

        /// What is wrong with the file, by the error `JSONDecoder` threw: the key when there is one.
        static func message(for error: any Error, in data: Data) -> String {
            let key: String?
            switch error {
            case let error as UnknownKey:
                let known = CodingKeys.allCases.map(\.stringValue).sorted().joined(separator: ", ")
                return "unknown key \"\(error.key)\" (known: \(known))"
            case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
                key = context.codingPath.first?.stringValue
            case DecodingError.dataCorrupted(let context) where !context.codingPath.isEmpty:
                // Valid JSON whose value does not fit the key (a number beyond Int32).
                key = context.codingPath.first?.stringValue
            case DecodingError.dataCorrupted(let context):
                // JSONDecoder does not say where (on Linux); Reseed's own parser gives the line and column.
                do throws(JSONSyntaxError) {
                    _ = try JSONNode.parse(Array(data))
                } catch {
                    return "not valid JSON: \(error)"
                }
                return "not valid JSON: \(context.debugDescription)"
            default:
                return plainDescription(of: error) ?? "cannot be read"
            }
            guard let key else { return "expected a JSON object" }
            return "\"\(key)\" must be \(CodingKeys(stringValue: key)?.expected ?? "a string")"
        }
    }
}

/// `reseed.json` cannot be used; the message names the file and, when one is wrong, the key.
struct ConfigurationError: Error, CustomStringConvertible {
    var path: String
    var message: String
    /// The system's error, when the file could not be read.
    var errno: Errno? = nil

    /// "reseed.json: "name": expected a string; fix reseed.json or pass the value as an option".
    var description: String {
        ErrorSentence(location: path, what: message, why: errno?.phrase,
                      advice: errno?.advice ?? "fix \((path as NSString).lastPathComponent), or give the value as an option").description
    }
}

/// Resolves a command-line path against the current folder.
func fileURL(_ path: String) -> URL {
    URL(fileURLWithPath: path).standardizedFileURL
}
