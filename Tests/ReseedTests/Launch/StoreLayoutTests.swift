import Foundation
import Logging
@testable import Reseed
import ReseedSystem
import ReseedTestSupport
import Testing

/// The names Reseed gives the files of a data directory, and what each is: one table per layout.
@Suite struct StoreLayoutTests {
    static let layout = StoreLayout(store: "triage")
    static let preferences = PreferencesLayout(fileName: "preferences.json")

    /// Each name is one file of one layout: the store's or the preferences'.
    @Test(arguments: [
        ("triage.sqlite", StoreLayout.Kind.store, StoreLayout.Removal.never, "triage.sqlite"),
        ("triage.sqlite-wal", .sidecar, .nextInstall, "triage.sqlite"),
        ("triage.sqlite-shm", .sidecar, .nextInstall, "triage.sqlite"),
        ("triage.sqlite-journal", .sidecar, .nextInstall, "triage.sqlite"),
        (".triage.sqlite.reseed-lock", .installLock, .never, "triage.sqlite"),
        (".triage.sqlite.reseed-update-lock", .updateLock, .never, "triage.sqlite"),
        (".triage.sqlite.reseed-trust.json", .trustFloors, .never, "triage.sqlite"),
        (".triage.sqlite.reseed-tmp-0123456789abcdef", .temporary, .nextLaunch, "triage.sqlite"),
        ("..triage.sqlite.reseed-tmp-0123456789abcdef.reseed-tmp-fedcba9876543210", .temporary, .nextLaunch, "triage.sqlite"),
        (".triage.sqlite.reseed-download-0123456789abcdef", .download, .nextUpdate, "triage.sqlite"),
        (".triage.sqlite.reseed-download-0123456789abcdef.etag", .download, .nextUpdate, "triage.sqlite"),
        (".triage.sqlite.reseed-download-delta-0123456789abcdef.sqlite", .download, .nextUpdate, "triage.sqlite"),
        ("triage.sqlite.invalid-20261125T120000Z-0000abcd", .keptAside, .never, "triage.sqlite"),
        ("preferences.json", .preferences, .never, "preferences.json"),
        (".preferences.json.reseed-lock", .preferencesLock, .never, "preferences.json"),
        (".preferences.json.reseed-tmp-0123456789abcdef", .temporary, .nextPreferencesWrite, "preferences.json"),
        ("preferences.json.corrupt-20261125T120000Z", .corruptPreferences, .never, "preferences.json"),
        ("preferences.json.corrupt-20261125T120000Z-2", .corruptPreferences, .never, "preferences.json"),
    ])
    func eachNameIsItsKind(name: String, kind: StoreLayout.Kind, removal: StoreLayout.Removal, owner: String) {
        let found = Self.layout.files(among: [name]) + Self.preferences.files(among: [name])
        #expect(found == [StoreLayout.File(name: name, kind: kind, removedBy: removal, belongsTo: owner)])
    }

    @Test func otherStoresFilesAndTheAppsAreNotTheStores() {
        for name in ["triage-user.sqlite", "triage.sqlite.bak", "preferences.json", ".preferences.json.reseed-lock",
                     "other.sqlite-wal", ".other.sqlite.reseed-tmp-0123456789abcdef", "triage"] {
            #expect(Self.layout.kind(of: name) == nil, "\(name)")
        }
        for name in ["preferences.json.bak", "preferences", ".other.json.reseed-lock", "other.json.corrupt-20261125T120000Z",
                     ".preferences.json.reseed-update-lock", "preferences.json-wal"] {
            #expect(Self.preferences.kind(of: name) == nil, "\(name)")
        }
    }

    @Test func theNamesTheCodeMakesAreTheLayouts() {
        #expect(Self.layout.kind(of: StoreLayout.temporaryName(of: "triage.sqlite")) == .temporary)
        #expect(Self.layout.kind(of: Self.layout.asideName()) == .keptAside)
        let sha256 = String(repeating: "ab", count: 32)
        #expect(Self.layout.kind(of: SeedDownload.partialName(store: "triage", sha256: sha256)) == .download)
        #expect(Self.layout.kind(of: StoreLayout.validatorName(of: SeedDownload.partialName(store: "triage", sha256: sha256))) == .download)
        #expect(Self.layout.kind(of: Self.layout.deltaName(sha256: sha256)) == .download)
        #expect(Self.layout.asideName() != Self.layout.asideName())
        #expect(StoreLayout.temporaryName(of: "triage.sqlite") != StoreLayout.temporaryName(of: "triage.sqlite"))
        let file = PreferencesFile(url: URL(fileURLWithPath: "/data/preferences.json"))
        #expect(Self.preferences.kind(of: file.layout.lock) == .preferencesLock)
        #expect(Self.preferences.kind(of: StoreLayout.temporaryName(of: "preferences.json")) == .temporary)
        #expect(Self.preferences.kind(of: Self.preferences.corruptName(stamp: PreferencesFile.timestamp(), attempt: 3)) == .corruptPreferences)
    }

    /// Each file made in a data directory, the listing (what `reseed status` shows) names it with
    /// its kind and the file it belongs to; the app's own files are not listed.
    @Test func theListingNamesEveryFileThatIsThere() throws {
        let sandbox = try TemporaryDirectory()
        let data = sandbox.appending("data")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        let made: [(String, StoreLayout.Kind, StoreLayout.Removal, String)] = [
            ("triage.sqlite", .store, .never, "triage.sqlite"),
            ("triage.sqlite-wal", .sidecar, .nextInstall, "triage.sqlite"),
            (".triage.sqlite.reseed-lock", .installLock, .never, "triage.sqlite"),
            (".triage.sqlite.reseed-update-lock", .updateLock, .never, "triage.sqlite"),
            (".triage.sqlite.reseed-trust.json", .trustFloors, .never, "triage.sqlite"),
            (StoreLayout.temporaryName(of: "triage.sqlite"), .temporary, .nextLaunch, "triage.sqlite"),
            (SeedDownload.partialName(store: "triage", sha256: String(repeating: "0f", count: 32)), .download, .nextUpdate, "triage.sqlite"),
            (Self.layout.asideName(), .keptAside, .never, "triage.sqlite"),
            ("triage-user.sqlite", .store, .never, "triage-user.sqlite"),
            // The app's write-ahead log: no install removes it.
            ("triage-user.sqlite-wal", .sidecar, .never, "triage-user.sqlite"),
            (".triage-user.sqlite.reseed-lock", .installLock, .never, "triage-user.sqlite"),
            (StoreLayout(store: "triage-user").asideName(), .keptAside, .never, "triage-user.sqlite"),
            ("preferences.json", .preferences, .never, "preferences.json"),
            (".preferences.json.reseed-lock", .preferencesLock, .never, "preferences.json"),
            (StoreLayout.temporaryName(of: "preferences.json"), .temporary, .nextPreferencesWrite, "preferences.json"),
            (Self.preferences.corruptName(stamp: "20261125T120000Z", attempt: 1), .corruptPreferences, .never, "preferences.json"),
        ]
        for name in made.map(\.0) + ["notes.txt", ".other.sqlite.reseed-lock"] {
            try Data().write(to: data.appendingPathComponent(name))
        }
        let files = StoreLayout.files(in: data, store: "triage", userStore: "triage-user", preferences: data.appendingPathComponent("preferences.json"))
        #expect(files.map(\.name).sorted() == made.map(\.0).sorted())
        for (name, kind, removal, owner) in made {
            let file = files.first { $0.name == name }
            #expect(file == StoreLayout.File(name: name, kind: kind, removedBy: removal, belongsTo: owner), "\(name)")
            #expect(file?.line == "\(name) (\(kind.rawValue), removed by: \(removal.rawValue)): \(kind.meaning)")
        }
    }

    /// A preferences file kept elsewhere is listed from its own folder; the data directory's
    /// files of that name are not its.
    @Test func preferencesElsewhereAreListedFromTheirFolder() throws {
        let sandbox = try TemporaryDirectory()
        let data = sandbox.appending("data")
        let settings = sandbox.appending("settings")
        for folder in [data, settings] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
        for name in ["app.json", ".app.json.reseed-lock", "app.json.corrupt-20261125T120000Z"] {
            try Data().write(to: settings.appendingPathComponent(name))
        }
        try Data().write(to: data.appendingPathComponent(".app.json.reseed-lock"))
        let files = StoreLayout.files(in: data, store: "triage", userStore: nil, preferences: settings.appendingPathComponent("app.json"))
        #expect(files.map(\.name) == [".app.json.reseed-lock", "app.json", "app.json.corrupt-20261125T120000Z"])
        #expect(files.map(\.kind) == [.preferencesLock, .preferences, .corruptPreferences])
    }

    /// What the preferences file itself leaves when it moves a corrupt file aside and records
    /// again (the corrupt file, its lock) is what the listing names.
    @Test func whatThePreferencesFileLeavesIsListed() throws {
        let sandbox = try TemporaryDirectory()
        let data = sandbox.appending("data")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        let url = data.appendingPathComponent("preferences.json")
        try Data("{not json".utf8).write(to: url)
        let aside = try #require(try PreferencesFile(url: url).record(version: "1.0.0", source: .bundle, for: "triage", timeout: .seconds(1), logger: .init(label: "test")))
        let files = StoreLayout.files(in: data, store: "triage", userStore: nil, preferences: url)
        #expect(files.map(\.name).sorted() == [".preferences.json.reseed-lock", aside.lastPathComponent, "preferences.json"].sorted())
        #expect(files.first { $0.name == aside.lastPathComponent }?.kind == .corruptPreferences)
        #expect(files.first { $0.name == ".preferences.json.reseed-lock" }?.kind == .preferencesLock)
    }
}
