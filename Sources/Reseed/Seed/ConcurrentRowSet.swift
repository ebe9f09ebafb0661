import Crypto
import Dispatch
import Foundation
import ReseedSystem
import Synchronization

/// The ``RowSetHash`` of every row read, expanded on threads of its own beside the reading.
///
/// The reading thread computes each row's element digest (``RowElement``), which needs the row,
/// and collects the digests in batches; a batch's expansions, the cost of a row, go to helper
/// threads, unless as many batches as there are helpers already wait: then the reading thread
/// expands the batch itself, so every core works and the batches waiting take bounded memory.
/// Addition commutes: however the batches are split, the partial sums add up to the same hash.
/// A seed smaller than one batch starts no thread.
final class ConcurrentRowSet {
    /// The digests in a batch: 128 KiB of them.
    static let batchSize = 4096

    /// How many helpers expand batches beside the reading thread: one on 2 cores, at most three.
    static var helperCount: Int { max(1, min(3, ProcessInfo.processInfo.activeProcessorCount - 1)) }

    private var element = RowElement()
    private var pending: [UInt8] = []
    private var expanded = RowSetHash()
    private var helpers: (queue: BatchQueue, threads: [BlockingThread<RowSetHash>])?

    init() {
        pending.reserveCapacity(Self.batchSize * SHA256.byteCount)
    }

    /// Adds the current row of `statement` (its `count` columns: ``TableRows/selected``) of `rows`' table.
    func add(_ statement: OpaquePointer, _ count: Int32, of rows: TableRows) {
        element.digest(statement, count, of: rows).withUnsafeBytes { pending.append(contentsOf: $0) }
        if pending.count == Self.batchSize * SHA256.byteCount { submit() }
    }

    private func submit() {
        let queue = helpers?.queue ?? startHelpers()
        if !queue.offer(pending) {
            pending.withUnsafeBytes { expanded.combine(digests: $0, sign: 1) }
        }
        pending.removeAll(keepingCapacity: true)
    }

    private func startHelpers() -> BatchQueue {
        let count = Self.helperCount
        let queue = BatchQueue(capacity: count)
        let threads = (0..<count).map { _ in
            BlockingThread.start("reseed-row-set") {
                var sum = RowSetHash()
                while let batch = queue.next() {
                    batch.withUnsafeBytes { sum.combine(digests: $0, sign: 1) }
                }
                return sum
            }
        }
        helpers = (queue, threads)
        return queue
    }

    /// The hash of every row added: waits for the helpers' sums.
    func finish() -> RowSetHash {
        pending.withUnsafeBytes { expanded.combine(digests: $0, sign: 1) }
        pending.removeAll()
        for sum in stopHelpers() { expanded.add(sum) }
        return expanded
    }

    /// Lets the helpers expand what waits, and returns their sums once they have stopped.
    private func stopHelpers() -> [RowSetHash] {
        guard let helpers else { return [] }
        self.helpers = nil
        helpers.queue.close()
        return helpers.threads.map { $0.join() }
    }

    /// A read that failed halfway never finishes: its helpers still stop before it is gone.
    deinit {
        _ = stopHelpers()
    }
}

/// Batches of digests waiting for the helpers, at most `capacity` of them.
private final class BatchQueue: Sendable {
    private struct State {
        var batches: [[UInt8]] = []
        var closed = false
    }

    private let capacity: Int
    private let state = Mutex(State())
    /// Signalled once per batch offered and once per helper when closed.
    private let ready = DispatchSemaphore(value: 0)

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// Queues `batch`; false when `capacity` batches wait already.
    func offer(_ batch: [UInt8]) -> Bool {
        let queued = state.withLock { state in
            guard state.batches.count < capacity else { return false }
            state.batches.append(batch)
            return true
        }
        if queued { ready.signal() }
        return queued
    }

    /// No more batches: each helper, once the queue is empty, gets nil.
    func close() {
        state.withLock { $0.closed = true }
        for _ in 0..<capacity { ready.signal() }
    }

    /// The next batch, waiting for one; nil once the queue is closed and empty.
    func next() -> [UInt8]? {
        while true {
            ready.wait()
            let (batch, closed) = state.withLock { state in
                state.batches.isEmpty ? (nil, state.closed) : (state.batches.removeFirst(), false)
            }
            if let batch { return batch }
            if closed {
                // Another helper may still need a wake-up to see the close.
                ready.signal()
                return nil
            }
        }
    }
}
