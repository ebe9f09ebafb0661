#if canImport(Glibc)
import Glibc
#endif
import Foundation
import ReseedTesting
import ReseedTestSupport
import Testing

/// What the CLI reads and writes as JSON: `reseed.json` errors name the file and the key; `--json`
/// objects are one line with every key, sorted, `null` for none.
@Suite struct JSONShapeTests {
    @Test(arguments: [
        ("{\"name\": \"x\", \"outptu\": \"SeedData\"}",
         "unknown key \"outptu\" (known: analyze, applicationID, dataDirectory, migrations, name, output, userMigrations, userReferences, userStore, userTables, userVersion, version)"),
        ("{\"name\": 3}", "\"name\" must be a string"),
        ("{\"userTables\": \"incident\"}", "\"userTables\" must be an array of strings"),
        ("{\"userTables\": [\"incident\", 2]}", "\"userTables\" must be an array of strings"),
        ("{\"userStore\": [\"u\"]}", "\"userStore\" must be a string"),
        ("{\"userVersion\": \"7\"}", "\"userVersion\" must be a whole number from -2147483648 to 2147483647"),
        ("{\"userVersion\": 1.5}", "\"userVersion\" must be a whole number from -2147483648 to 2147483647"),
        ("{\"applicationID\": 3000000000}", "\"applicationID\" must be a whole number from -2147483648 to 2147483647"),
        ("{\"analyze\": 1}", "\"analyze\" must be true or false"),
        ("{\"userReferences\": [\"incident.level_id\"]}",
         "\"userReferences\": reference 'incident.level_id' is not 'table.column->seedTable.seedColumn'"),
        ("{\"userReferences\": [\"incident->triage_level.id\"]}",
         "\"userReferences\": reference 'incident -> triage_level.id': 'incident' is not 'table.column'"),
        ("{\"dataDirectory\": null}", "\"dataDirectory\" must be a string"),
        ("[\"name\"]", "expected a JSON object"),
        ("{\"name\": \n 1,", "not valid JSON: expected a string key at line 2, column 4"),
    ])
    func aBadProjectFileNamesTheFileAndTheKey(text: String, message: String) throws {
        let sandbox = try TemporaryDirectory()
        let file = sandbox.appending("reseed.json")
        try Data(text.utf8).write(to: file)
        let result = try ReseedBinary.run(["status", "--data-dir", "data", "--name", "x"], in: sandbox.url)
        #expect(result.status == 1)
        #expect(result.stdout == "")
        #expect(result.stderr == "reseed: \(file.path): \(message); fix reseed.json, or give the value as an option\n")
    }

    @Test func aProjectFileThatIsAFolderOrHugeIsRefused() throws {
        let sandbox = try TemporaryDirectory()
        let file = sandbox.appending("reseed.json")
        try FileManager.default.createDirectory(at: file, withIntermediateDirectories: false)
        let folder = try ReseedBinary.run(["status", "--data-dir", "data", "--name", "x"], in: sandbox.url)
        #expect(folder.status == 1)
        #expect(folder.stderr == "reseed: \(file.path): not a regular file (a directory); fix reseed.json, or give the value as an option\n")

        // A FIFO no one writes to: refused on what it is, never read (a read would wait forever).
        try FileManager.default.removeItem(at: file)
        try #require(mkfifo(file.path, 0o644) == 0)
        let fifo = try ReseedBinary.run(["status", "--data-dir", "data", "--name", "x"], in: sandbox.url)
        #expect(fifo.status == 1)
        #expect(fifo.stderr == "reseed: \(file.path): not a regular file (a FIFO); fix reseed.json, or give the value as an option\n")

        try FileManager.default.removeItem(at: file)
        try Data(("{\"name\": \"" + String(repeating: "x", count: 70_000) + "\"}").utf8).write(to: file)
        let huge = try ReseedBinary.run(["status", "--data-dir", "data", "--name", "x"], in: sandbox.url)
        #expect(huge.status == 1)
        #expect(huge.stderr == "reseed: \(file.path): over 65536 bytes: not a configuration file; fix reseed.json, or give the value as an option\n")
    }

    /// Every key of `reseed launch --json` and its JSON type, with and without a user store.
    @Test func launchJSONHasEveryKeyWithItsType() throws {
        let sandbox = try TemporaryDirectory()
        let seed = try SeedFixture(name: "items", version: "1.0.0", sql: ["CREATE TABLE item (id INTEGER PRIMARY KEY)"])
            .build(in: sandbox.appending("seed"))
        enum Kind: Equatable { case string, stringOrNull, object, array, null }
        func kind(_ value: Any) -> Kind {
            switch value {
            case is NSNull: .null
            case is String: .string
            case is [String: Any]: .object
            case is [Any]: .array
            default: .null
            }
        }
        let shape: [String: Kind] = [
            "outcome": .string, "reason": .stringOrNull, "name": .string, "version": .string, "source": .string,
            "previousVersion": .stringOrNull, "change": .stringOrNull, "store": .string, "verification": .stringOrNull,
            "preferencesMovedAside": .stringOrNull, "storeKeptAside": .stringOrNull, "removedLeftovers": .array,
            "adoptedFrom": .stringOrNull, "legacyStoresLeftInPlace": .array, "userStore": .stringOrNull,
            "importedTables": .object, "missingUserTables": .array, "strandedTables": .array, "appliedMigrations": .array,
            "userStoreKeptAside": .stringOrNull, "orphans": .object,
        ]
        for (data, user) in [("plain", [String]()), ("user", ["--user-store", "items-user"])] {
            let result = try ReseedBinary.run(["launch", "--seed", seed.manifestURL.path, "--data-dir", sandbox.appending(data).path, "--json"] + user)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.split(separator: "\n").count == 1)
            let object = try jsonObject(result.stdout)
            #expect(Set(object.keys) == Set(shape.keys))
            for (key, expected) in shape {
                let found = object[key].map(kind)
                #expect(found == expected || (expected == .stringOrNull && (found == .string || found == .null)), "\(key): \(String(describing: object[key]))")
            }
            let userStore = sandbox.appending(data).appendingPathComponent("items-user.sqlite").path
            #expect(object["userStore"] as? String == (user.isEmpty ? nil : userStore))
            #expect(user.isEmpty ? object["userStore"] is NSNull : true)
            #expect(object["importedTables"] as? [String: Int] == [:])
            #expect(object["orphans"] as? [String: Int] == [:])
        }
    }

    @Test func statusJSONIsOneLineWithEveryKeySortedAndNulls() throws {
        let sandbox = try TemporaryDirectory()
        let data = sandbox.appending("data")
        // In a folder with no reseed.json: no shipped seed to compare with.
        let result = try ReseedBinary.run(["status", "--data-dir", data.path, "--name", "items", "--json"], in: sandbox.url)
        #expect(result.status == 0, "\(result.stderr)")
        let store = data.appendingPathComponent("items.sqlite").path
        let preferences = data.appendingPathComponent("preferences.json").path
        #expect(result.stdout == """
            {"decision":null,"files":[],"name":"items","preferences":"\(preferences)","preferencesState":"missing","reason":null,"recordedVersion":null,\
            "shippedVersion":null,"source":null,"store":"\(store)","storePresent":false,"storeSize":null,"upToDate":null,"userStore":null}

            """)
    }
}
