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
        ("{\"name\": \"x\", \"outptu\": \"SeedData\"}", "unknown key \"outptu\" (known: dataDirectory, migrations, name, output, version)"),
        ("{\"name\": 3}", "\"name\" must be a string"),
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
        #expect(result.stderr == "reseed: \(file.path): \(message)\n")
    }

    @Test func aProjectFileThatIsAFolderOrHugeIsRefused() throws {
        let sandbox = try TemporaryDirectory()
        let file = sandbox.appending("reseed.json")
        try FileManager.default.createDirectory(at: file, withIntermediateDirectories: false)
        let folder = try ReseedBinary.run(["status", "--data-dir", "data", "--name", "x"], in: sandbox.url)
        #expect(folder.status == 1)
        #expect(folder.stderr == "reseed: \(file.path): not a regular file (a directory)\n")

        // A FIFO no one writes to: refused on what it is, never read (a read would wait forever).
        try FileManager.default.removeItem(at: file)
        try #require(mkfifo(file.path, 0o644) == 0)
        let fifo = try ReseedBinary.run(["status", "--data-dir", "data", "--name", "x"], in: sandbox.url)
        #expect(fifo.status == 1)
        #expect(fifo.stderr == "reseed: \(file.path): not a regular file (a FIFO)\n")

        try FileManager.default.removeItem(at: file)
        try Data(("{\"name\": \"" + String(repeating: "x", count: 70_000) + "\"}").utf8).write(to: file)
        let huge = try ReseedBinary.run(["status", "--data-dir", "data", "--name", "x"], in: sandbox.url)
        #expect(huge.status == 1)
        #expect(huge.stderr == "reseed: \(file.path): over 65536 bytes: not a configuration file\n")
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
            {"name":"items","preferences":"\(preferences)","preferencesState":"missing","recordedVersion":null,\
            "shippedVersion":null,"source":null,"store":"\(store)","storePresent":false,"storeSize":null,"upToDate":null}

            """)
    }
}
