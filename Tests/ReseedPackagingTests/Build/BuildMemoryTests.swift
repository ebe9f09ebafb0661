import Foundation
import GRDB
import ReseedPackaging
import Synchronization
import Testing

/// The build's memory does not grow with the seed: a step's pages beyond the build's page cache
/// go to the file before the step commits, instead of waiting in memory for the commit.
@Suite struct BuildMemoryTests {
    @Test func aStepLargerThanTheCacheWritesItsPagesBeforeItCommits() throws {
        // 52 MB, 1 KiB a row: more than the build should ever hold in memory (its cache is 32 MiB).
        let rows = 52_000
        let note = String(repeating: "x", count: 1000)
        var csv = "id,name,note\n"
        csv.reserveCapacity(rows * 1024)
        for id in 1...rows { csv += "\(id),n,\(note)\n" }
        let sandbox = try MigrationsSandbox(["0001_schema.sql": itemSchema, "0002_item.csv": csv])
        let output = sandbox.output
        // The largest file the build has in the output folder when the step's last row is in, before its commit.
        let written = Mutex<Int?>(nil)
        var builder = SeedBuilder(migrations: sandbox.migrations, output: output, name: "test", version: "1.0.0")
        builder.progress = { progress in
            guard case .rows(_, _, done: true) = progress else { return }
            let names = (try? FileManager.default.contentsOfDirectory(atPath: output.path)) ?? []
            let sizes = names.filter { !$0.hasSuffix("-journal") }.compactMap {
                try? FileManager.default.attributesOfItem(atPath: output.appendingPathComponent($0).path)[.size] as? Int
            }
            written.withLock { $0 = sizes.max() }
        }
        let result = try builder.build()
        #expect(try sandbox.read(result) { try Int.fetchOne($0, sql: "SELECT count(*) FROM item") } == rows)
        let bytes = try #require(written.withLock { $0 })
        // What a 32 MiB cache cannot hold is in the file already: about 20 MB.
        #expect(bytes >= 8 << 20, "the build file held \(bytes) bytes when the step's rows were in")
    }
}
