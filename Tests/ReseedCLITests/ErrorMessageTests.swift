#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Reseed
import ReseedTesting
import ReseedTestSupport
import Testing

/// Every kind of failure `reseed` reports, run through the built binary: each is one line on
/// stderr, `reseed: where: what failed: why; what to do`, with a non-zero exit status.
@Suite struct ErrorMessageTests {
    /// The files a case works with, made fresh for each case.
    struct Sandbox {
        let directory: TemporaryDirectory
        /// A seed built by ``SeedFixture``: `seed/items.manifest.json` and `seed/items.sqlite`.
        let seed: Seed
        /// A real SQLite database that is not a seed.
        var database: URL { directory.appending("App.sqlite") }
        /// A text file: not a database, not a manifest, not a folder.
        var text: URL { directory.appending("notes.txt") }
        /// A folder.
        var folder: URL { directory.appending("folder") }

        init() throws {
            directory = try TemporaryDirectory(prefix: "reseed-errors")
            seed = try SeedFixture(name: "items", version: "1.0.0", sql: ["CREATE TABLE item (id INTEGER PRIMARY KEY)"])
                .build(in: directory.appending("seed"))
            try FileManager.default.copyItem(at: seed.fileURL, to: directory.appending("App.sqlite"))
            try Data("just some text, longer than a SQLite header\n".utf8).write(to: directory.appending("notes.txt"))
            try FileManager.default.createDirectory(at: directory.appending("folder"), withIntermediateDirectories: false)
        }

        func path(_ name: String) -> String { directory.appending(name).path }

        /// Writes `text` to `name` with `mode`; returns its path.
        @discardableResult
        func write(_ name: String, _ text: String, mode: Int = 0o644) throws -> String {
            let url = directory.appending(name)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: url.path)
            return url.path
        }

        /// A project folder `name` whose `Migrations/` holds `steps` (file name → SQL); returns it.
        func project(_ name: String, steps: [String: String]) throws -> URL {
            try write("\(name)/reseed.json", #"{"name": "items", "version": "1.0.0", "migrations": "Migrations", "output": "SeedData"}"#)
            for (file, sql) in steps { try write("\(name)/Migrations/\(file)", sql) }
            return directory.appending(name)
        }
    }

    /// One failure: the arguments (and the folder to run in) a sandbox gives, the text that names
    /// where it happened, and the phrase that says why.
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var run: @Sendable (Sandbox) throws -> (arguments: [String], directory: URL?, offending: String)
        var phrase: String
        /// False when the case cannot happen as this user (permission checks do not apply to root).
        var applies: @Sendable () -> Bool = { true }

        var testDescription: String { name }
    }

    static let isRoot = geteuid() == 0

    static let cases: [Case] = [
        Case(name: "missing seed", run: { s in (["verify", s.path("missing.manifest.json")], nil, s.path("missing.manifest.json")) },
             phrase: "no seed manifest or folder here; give the seed's manifest"),
        Case(name: "missing database", run: { s in (["diff", s.path("missing.sqlite"), s.database.path], nil, s.path("missing.sqlite")) },
             phrase: "cannot open: no such file or directory; check the path"),
        Case(name: "missing source of init", run: { s in (["init", "--from", s.path("missing.sqlite"), "--directory", s.path("project")], nil, s.path("missing.sqlite")) },
             phrase: "cannot read the database: no such file or directory; check the path"),
        Case(name: "missing private key", run: { s in (["publish", s.seed.manifestURL.path, "--channel", s.path("channel"), "--private-key", s.path("missing.key")], nil, s.path("missing.key")) },
             phrase: "cannot open the private key: no such file or directory; check the path"),
        Case(name: "text given as a seed", run: { s in (["verify", s.text.path], nil, s.text.path) },
             phrase: "not a seed manifest: not valid JSON"),
        Case(name: "not a database with a .sqlite name", run: { s in
                 let path = try s.write("notadb.sqlite", "hello\n")
                 return (["verify", path], nil, path)
             }, phrase: "not a SQLite database"),
        Case(name: "database given as a manifest", run: { s in
                 let path = s.path("App.db")
                 try FileManager.default.copyItem(atPath: s.database.path, toPath: path)
                 return (["verify", path], nil, path)
             }, phrase: "not a seed manifest but a SQLite database"),
        Case(name: "not a database to diff", run: { s in (["diff", s.text.path, s.database.path], nil, s.text.path) },
             phrase: "not a SQLite database"),
        Case(name: "not a database to init from", run: { s in (["init", "--from", s.text.path, "--directory", s.path("project")], nil, s.text.path) },
             phrase: "not a SQLite database"),
        Case(name: "data directory that is a file", run: { s in (["launch", "--seed", s.seed.manifestURL.path, "--data-dir", s.text.path], nil, s.text.path) },
             phrase: "cannot open: not a directory"),
        Case(name: "init directory under a file", run: { s in
                 (["init", "--from", s.database.path, "--directory", s.text.path + "/project"], nil, s.text.path)
             }, phrase: "not a directory"),
        Case(name: "folder where the source database is expected", run: { s in (["init", "--from", s.folder.path, "--directory", s.path("project")], nil, s.folder.path) },
             phrase: "not a regular file (a directory)"),
        Case(name: "folder where the private key is expected", run: { s in
                 (["publish", s.seed.manifestURL.path, "--channel", s.path("channel"), "--private-key", s.folder.path], nil, s.folder.path)
             }, phrase: "the private key is not a regular file"),
        Case(name: "unreadable private key", run: { s in
                 let path = try s.write("channel.key", "AAAA\n", mode: 0o000)
                 return (["publish", s.seed.manifestURL.path, "--channel", s.path("channel"), "--private-key", path], nil, path)
             }, phrase: "permission denied; check its permissions", applies: { !isRoot }),
        Case(name: "unreadable manifest", run: { s in
                 let path = try s.write("locked/items.manifest.json", "{}", mode: 0o000)
                 return (["verify", path], nil, path)
             }, phrase: "permission denied; check its permissions", applies: { !isRoot }),
        Case(name: "channel folder that cannot be created", run: { s in
                 // Root may write anywhere but in the kernel's own file systems.
                 let channel = isRoot ? "/sys/reseed-error-test-channel" : s.path("readonly/channel")
                 if !isRoot { try FileManager.default.createDirectory(atPath: s.path("readonly"), withIntermediateDirectories: false, attributes: [.posixPermissions: 0o555]) }
                 let key = s.path("keys/channel.key")
                 _ = try ReseedBinary.run(["keygen", "--private-key", key, "--public-key", s.path("keys/channel.pub")])
                 return (["publish", s.seed.manifestURL.path, "--channel", channel, "--private-key", key], nil, channel)
             }, phrase: "cannot create the folder: "),
        Case(name: "channel folder under a file", run: { s in
                 let key = s.path("keys/channel.key")
                 _ = try ReseedBinary.run(["keygen", "--private-key", key, "--public-key", s.path("keys/channel.pub")])
                 return (["publish", s.seed.manifestURL.path, "--channel", s.text.path + "/channel", "--private-key", key], nil, s.text.path + "/channel")
             }, phrase: "not a directory; check the path"),
        Case(name: "manifest that is not valid JSON", run: { s in
                 let path = try s.write("bad/items.manifest.json", #"{"format": 1"#)
                 return (["verify", path], nil, path)
             }, phrase: "manifest is not valid JSON: "),
        Case(name: "manifest with a wrong field", run: { s in
                 var text = try String(contentsOf: s.seed.manifestURL, encoding: .utf8)
                 text = text.replacingOccurrences(of: #""file" : "items.sqlite""#, with: #""file" : 7"#)
                     .replacingOccurrences(of: #""file": "items.sqlite""#, with: #""file": 7"#)
                 try text.write(to: s.seed.manifestURL, atomically: true, encoding: .utf8)
                 return (["launch", "--seed", s.seed.manifestURL.path, "--data-dir", s.path("data")], nil, s.seed.manifestURL.path)
             }, phrase: #"field "file""#),
        Case(name: "reseed.json with a wrong field", run: { s in
                 try s.write("project/reseed.json", #"{"name": 1}"#)
                 return (["package"], s.directory.appending("project"), s.path("project/reseed.json"))
             }, phrase: #""name" must be a string; fix reseed.json"#),
        Case(name: "malformed private key", run: { s in
                 let path = try s.write("bad.key", "not a key\n", mode: 0o600)
                 return (["publish", s.seed.manifestURL.path, "--channel", s.path("channel"), "--private-key", path], nil, path)
             }, phrase: "not a key: expected one line of base64 of a 32-byte Ed25519 key, after reseed-public-key-ed25519 or reseed-private-key-ed25519; give the file reseed keygen wrote"),
        Case(name: "malformed public key", run: { s in
                 let path = try s.write("bad.pub", "not a key either\n")
                 return (["update", "--channel", "http://127.0.0.1:1/", "--public-key", path, "--seed", s.seed.manifestURL.path, "--data-dir", s.path("data")], nil, path)
             }, phrase: "not a key: expected one line of base64"),
        Case(name: "unreachable channel", run: { s in
                 _ = try ReseedBinary.run(["keygen", "--private-key", s.path("keys/channel.key"), "--public-key", s.path("keys/channel.pub")])
                 return (["update", "--channel", "http://127.0.0.1:1/", "--public-key", s.path("keys/channel.pub"),
                          "--seed", s.seed.manifestURL.path, "--data-dir", s.path("data")], nil, "http://127.0.0.1:1/channel.json")
             }, phrase: "cannot connect: "),
        Case(name: "step with a syntax error", run: { s in
                 let project = try s.project("broken", steps: ["0001_schema.sql": "CREATE TABLE item (id INTEGER PRIMARY KEY);\nCREATE TABL oops;\n"])
                 return (["package"], project, "0001_schema.sql")
             }, phrase: "syntax error"),
        Case(name: "bad step name", run: { s in
                 let project = try s.project("misnamed", steps: ["schema.sql": "CREATE TABLE item (id INTEGER PRIMARY KEY);\n"])
                 return (["package"], project, "Migrations/schema.sql")
             }, phrase: "name each step NNNN_description.sql, .csv or .json"),
    ]

    /// Debug descriptions, internal step names and Foundation's generic text: none may reach a user.
    static let forbidden = [
        "Optional(", "Failure(", "errno:", "errno ", "The operation could not be completed", "Error Domain=",
        "readKey:", "readManifest:", "fetchManifest:", "checkStoreNotInUse", "migrateUserStore:", "prepareDirectory:",
    ]

    @Test(arguments: cases)
    func failureIsOneSentenceNamingWhereWhyAndWhatToDo(_ failure: Case) throws {
        guard failure.applies() else { return }
        let sandbox = try Sandbox()
        let (arguments, directory, offending) = try failure.run(sandbox)
        let result = try ReseedBinary.run(arguments, in: directory)
        #expect(result.status != 0, "\(failure.name): \(result.stdout)")
        #expect(result.stderrLines.count == 1 && result.stderr.hasSuffix("\n"), "\(failure.name): \(result.stderr)")
        #expect(result.stderr.hasPrefix("reseed: "), "\(failure.name): \(result.stderr)")
        #expect(result.stderr.contains(offending), "\(failure.name): '\(offending)' not in: \(result.stderr)")
        #expect(result.stderr.contains(failure.phrase), "\(failure.name): '\(failure.phrase)' not in: \(result.stderr)")
        for text in Self.forbidden {
            #expect(!result.stderr.contains(text), "\(failure.name): '\(text)' in: \(result.stderr)")
        }
    }

    /// A FIFO given to `diff`, as either seed: refused on what it is at once, as `verify` and `init`
    /// refuse one. SQLite's own open of it waited for a writer forever.
    @Test(arguments: [true, false])
    func diffRefusesAFIFOAtOnce(asTheOldSeed: Bool) throws {
        let sandbox = try Sandbox()
        let fifo = sandbox.path("pipe.sqlite")
        try #require(mkfifo(fifo, 0o644) == 0)
        let arguments = ["diff"] + (asTheOldSeed ? [fifo, sandbox.database.path] : [sandbox.database.path, fifo])
        let running = try ReseedBinary.start(arguments)
        let watchdog = Watchdog(pid: running.process.processIdentifier)
        DispatchQueue.global().asyncAfter(deadline: .now() + 30) { watchdog.fire() }
        let result = running.wait()
        watchdog.disarm()
        #expect(!watchdog.fired, "reseed diff waited on the FIFO and was killed after 30 s")
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == "reseed: \(fifo): cannot read the database: not a regular file (a FIFO); give the path of a SQLite database file\n")
    }
}
