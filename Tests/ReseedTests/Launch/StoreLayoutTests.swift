import Foundation
@testable import Reseed
import ReseedSystem
import Testing

/// The names Reseed gives the files beside a store, and what each is: one table.
@Suite struct StoreLayoutTests {
    static let layout = StoreLayout(store: "triage")

    @Test(arguments: [
        ("triage.sqlite", StoreLayout.Kind.store, StoreLayout.Removal.never),
        ("triage.sqlite-wal", .sidecar, .nextInstall),
        ("triage.sqlite-shm", .sidecar, .nextInstall),
        ("triage.sqlite-journal", .sidecar, .nextInstall),
        (".triage.sqlite.reseed-lock", .installLock, .never),
        (".triage.sqlite.reseed-update-lock", .updateLock, .never),
        (".triage.sqlite.reseed-tmp-0123456789abcdef", .temporary, .nextLaunch),
        (".triage.sqlite.reseed-download-0123456789abcdef", .download, .nextUpdate),
        (".triage.sqlite.reseed-download-0123456789abcdef.etag", .download, .nextUpdate),
        (".triage.sqlite.reseed-download-delta-0123456789abcdef.sqlite", .download, .nextUpdate),
        ("triage.sqlite.invalid-20261125T120000Z-0000abcd", .keptAside, .never),
    ])
    func eachNameIsItsKind(name: String, kind: StoreLayout.Kind, removal: StoreLayout.Removal) {
        #expect(Self.layout.kind(of: name) == kind)
        #expect(Self.layout.files(among: [name]) == [StoreLayout.File(name: name, kind: kind, removedBy: removal)])
    }

    @Test func otherStoresFilesAndTheAppsAreNotTheStores() {
        for name in ["triage-user.sqlite", "triage.sqlite.bak", "preferences.json", ".preferences.json.reseed-lock",
                     "other.sqlite-wal", ".other.sqlite.reseed-tmp-0123456789abcdef", "triage"] {
            #expect(Self.layout.kind(of: name) == nil, "\(name)")
        }
    }

    @Test func theNamesTheCodeMakesAreTheLayouts() {
        #expect(Self.layout.kind(of: Directory.temporaryName(for: "triage.sqlite")) == .temporary)
        #expect(Self.layout.kind(of: Self.layout.asideName()) == .keptAside)
        #expect(Self.layout.kind(of: SeedDownload.partialName(store: "triage", sha256: String(repeating: "ab", count: 32))) == .download)
        #expect(Self.layout.asideName() != Self.layout.asideName())
    }
}
