import Foundation
@testable import Reseed
import ReseedSystem
import ReseedTestSupport
import Testing

/// A store an install replaces keeps its blocks until a thread of its own closes it (freeing a
/// large file is as slow as the rest of an update), and is freed then: no descriptor stays.
@Suite struct ReplacedStoreTests {
    /// The descriptors of this process open on the file `inode` (`/proc/self/fd`), and each one's link count.
    static func descriptors(of inode: UInt64) -> [UInt64] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return names.compactMap { name -> UInt64? in
            var info = stat()
            guard stat("/proc/self/fd/\(name)", &info) == 0, UInt64(info.st_ino) == inode else { return nil }
            return UInt64(info.st_nlink)
        }
    }

    /// How many of them are open on it once its last name is gone (link count 0): a replaced store
    /// still held. A file created since, which another test of this process may hold and the file
    /// system may have given the freed inode's number, has a name, and is not counted.
    static func unlinkedDescriptors(of inode: UInt64) -> Int {
        descriptors(of: inode).filter { $0 == 0 }.count
    }

    static func inode(_ path: String) throws -> UInt64 {
        try #require((try FileManager.default.attributesOfItem(atPath: path))[.systemFileNumber] as? UInt64)
    }

    @Test func aHeldFileOutlivesTheRenameOverItsNameUntilReleased() throws {
        let folder = try TemporaryDirectory()
        let directory = try FileSystem().openDirectory(folder.url, create: false)
        try Data(repeating: 1, count: 1 << 20).write(to: folder.url.appendingPathComponent("store"))
        try Data(repeating: 2, count: 10).write(to: folder.url.appendingPathComponent("new"))
        let old = try Self.inode(folder.url.appendingPathComponent("store").path)

        let held = try #require(directory.holdForRelease("store"))
        try directory.rename("new", to: "store")
        // The name is gone at once; the file is still open, with no link left.
        #expect(Self.unlinkedDescriptors(of: old) == 1)
        held.release()
        held.release()
        ReplacedFile.waitForReleases()
        #expect(Self.unlinkedDescriptors(of: old) == 0)
        #expect(try Data(contentsOf: folder.url.appendingPathComponent("store")) == Data(repeating: 2, count: 10))
        #expect(directory.holdForRelease("missing") == nil)
    }

    /// A launch that installs a new version over the closed store: the old store is freed, no
    /// descriptor of it stays, and the new store is whole.
    @Test func aStoreAnInstallReplacedIsFreed() throws {
        let sandbox = try LaunchSandbox()
        try sandbox.install(try sandbox.seed("1.0.0"))
        let old = try Self.inode(sandbox.storeURL.path)
        let outcome = try sandbox.install(try sandbox.seed("2.0.0", rows: 2))
        #expect(outcome.action == .installed)
        ReplacedFile.waitForReleases()
        #expect(Self.unlinkedDescriptors(of: old) == 0)
        #expect(try Self.inode(sandbox.storeURL.path) != old)
    }
}
