import Foundation
import Testing
import ReseedSystem
@testable import ReseedPackaging

/// When the system refuses a thread (`pthread_create` failing at the process's thread limit), the
/// work a thread of ours waits for runs on the thread that waits, never queued on dispatch, whose
/// threads may be the ones waiting and which cannot start one either. Refusal is faked here: as
/// root, no limit refuses this process a thread (by hand, `prlimit --nproc` as another user shows
/// `reseed package` completing, slowed by dispatch's own retries).
@Suite struct ThreadRefusedTests {
    static func refuse(_ name: String, _ body: @escaping @Sendable () -> Void) -> Bool { false }

    @Test func aBlockingThreadTheSystemRefusesRunsOnTheThreadThatJoins() {
        let thread = BlockingThread.start("test-refused", spawn: Self.refuse) { pthread_self() }
        #expect(pthread_equal(thread.join(), pthread_self()) != 0)
        // A second join gets the same value without running the body again.
        #expect(pthread_equal(thread.join(), pthread_self()) != 0)
    }

    @Test func aBlockingThreadTheSystemStartsRunsBesideTheCaller() {
        let thread = BlockingThread.start("test-started") { pthread_self() }
        #expect(pthread_equal(thread.join(), pthread_self()) == 0)
    }

    /// The records a read-ahead hands out, with a thread and without: the same, in order, however
    /// many batches they take (the path the caller parses on; it guards that path's records, not
    /// where they were parsed).
    @Test func aCSVReadAheadWithoutAThreadParsesAsTheCallerAsks() throws {
        let records = 3 * CSVReadAhead.records(perBatchFor: 2) + 17
        var text = "a,b\n"
        for index in 0..<records { text += "\(index),\"x \(index)\"\n" }
        let bytes = Array(text.utf8)
        func read(spawn: ((String, @escaping @Sendable () -> Void) -> Bool)?) -> (lines: [Int], fields: Int, batches: Int) {
            bytes.withUnsafeBytes { buffer in
                var parser = CSVParser(bytes: buffer, path: "0002_t.csv")
                _ = try? parser.nextRecord(expecting: nil)
                let readAhead = spawn.map { CSVReadAhead(parser, columns: 2, spawn: $0) } ?? CSVReadAhead(parser, columns: 2)
                defer { readAhead.stop() }
                var lines: [Int] = [], fields = 0, batches = 0
                while true {
                    let batch = readAhead.next()
                    batches += 1
                    lines += batch.lines
                    fields += batch.fields.count
                    if batch.isLast || batch.error != nil { break }
                }
                return (lines, fields, batches)
            }
        }
        let threaded = read(spawn: nil), inline = read(spawn: Self.refuse)
        #expect(inline.lines == Array(2...(records + 1)))
        #expect(inline.fields == 2 * records)
        #expect(inline.batches >= 4)
        #expect(inline.lines == threaded.lines && inline.fields == threaded.fields)
    }
}
