import Dispatch
import Reseed
import ReseedSystem
import Synchronization

/// Parses a CSV file ahead, on a thread of its own, in batches of records, while the caller inserts:
/// on 2 cores the parsing costs no time beside SQLite's single-threaded insertion. Without a thread
/// to be had, the caller's ``next()`` parses each batch.
final class CSVReadAhead: Sendable {
    /// Records parsed in one go: their fields, `columns` at a time, and the line each starts on.
    struct Batch: Sendable {
        var fields: [CSVParser.Field] = []
        var lines: [Int] = []
        var error: PackagingError?
        var isLast = false
    }

    /// How many records a batch holds, and how many batches may wait parsed.
    static let batchSize = 4096
    static let depth = 3
    /// The most fields a batch holds (6 MiB of them): a wide table gets fewer records a batch,
    /// so the batches waiting take bounded memory (not 4,096 × 2,000 columns × 24 bytes each).
    static let fieldsPerBatch = 1 << 18

    /// Records a batch holds for records `columns` fields wide.
    static func records(perBatchFor columns: Int) -> Int {
        max(1, min(batchSize, fieldsPerBatch / max(1, columns)))
    }

    private struct Queue {
        var batches: [Batch] = []
        var cancelled = false
    }

    private let queue = Mutex(Queue())
    private let filled = DispatchSemaphore(value: 0)
    private let free = DispatchSemaphore(value: CSVReadAhead.depth)
    private let finished = DispatchGroup()

    /// The parser, when the system refused a thread for it: ``next()`` parses each batch itself.
    private let inline = Mutex<(source: ParserBox, columns: Int)?>(nil)

    /// Starts parsing with `parser` (past the header), each record `columns` fields wide; when the
    /// system refuses a new thread (see ``spawnThread(_:background:_:)``), parses as the caller asks.
    /// `spawn` starts the thread (``spawnThread(_:background:_:)``; a test passes one that refuses).
    init(_ parser: CSVParser, columns: Int, spawn: (String, @escaping @Sendable () -> Void) -> Bool = { spawnThread($0, $1) }) {
        let source = ParserBox(parser)
        finished.enter()
        let spawned = spawn("reseed-csv") { [self] in
            produce(source, columns: columns)
            finished.leave()
        }
        if !spawned {
            finished.leave()
            inline.withLock { $0 = (source, columns) }
        }
    }

    private func produce(_ source: ParserBox, columns: Int) {
        var source = source
        let records = Self.records(perBatchFor: columns)
        while true {
            free.wait()
            if queue.withLock({ $0.cancelled }) { return }
            let batch = Self.batch(of: &source.parser, records: records, columns: columns)
            queue.withLock { $0.batches.append(batch) }
            filled.signal()
            if batch.isLast { return }
        }
    }

    /// The next `records` records of `parser`, or fewer and `isLast` at its end or its error.
    private static func batch(of parser: inout CSVParser, records: Int, columns: Int) -> Batch {
        var batch = Batch()
        batch.fields.reserveCapacity(records * columns)
        batch.lines.reserveCapacity(records)
        do {
            for _ in 0..<records {
                guard let record = try parser.nextRecord(expecting: columns) else {
                    batch.isLast = true
                    break
                }
                batch.fields.append(contentsOf: record.fields)
                batch.lines.append(record.line)
            }
        } catch {
            batch.error = error
            batch.isLast = true
        }
        return batch
    }

    /// The next batch, in order; its `isLast` ends the file.
    func next() -> Batch {
        let parsedHere = inline.withLock { state -> Batch? in
            guard var current = state else { return nil }
            let batch = Self.batch(of: &current.source.parser, records: Self.records(perBatchFor: current.columns), columns: current.columns)
            state = current
            return batch
        }
        if let parsedHere { return parsedHere }
        filled.wait()
        let batch = queue.withLock { $0.batches.removeFirst() }
        free.signal()
        return batch
    }

    /// Stops the parser (if it still runs) and waits until it has: the bytes it reads may then go.
    func stop() {
        queue.withLock { $0.cancelled = true }
        free.signal()
        finished.wait()
    }
}

/// The parser handed to the read-ahead thread (or kept for the caller's thread, when there is none).
///
/// `@unchecked Sendable`: it holds a pointer into the step's bytes, which the loader keeps alive
/// until `CSVReadAhead.stop()` has returned, and only one thread uses it.
private struct ParserBox: @unchecked Sendable {
    var parser: CSVParser
    init(_ parser: CSVParser) { self.parser = parser }
}
