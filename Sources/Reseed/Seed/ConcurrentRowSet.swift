import Crypto
import Dispatch
import Foundation
import ReseedSystem
import Synchronization

/// The ``RowSetHash`` of every row read, computed on threads of its own beside the reading.
///
/// The reading thread hands over each row's encoding (``RowEncoding``, which it hashes into the
/// content hash's stream too) after its table's element prefix, in batches; a batch's element
/// digests (SHA-256) and expansions, the cost of a row, go to helper threads, unless as many
/// batches as there are helpers already wait: then the reading thread digests and expands the
/// batch itself, so every core works and the batches waiting take bounded memory. A row whose
/// encoding is too long to copy has its digest computed by the reading thread as it is read.
/// Addition commutes: however the batches are split, the partial sums add up to the same hash.
/// A seed smaller than one batch starts no thread.
final class ConcurrentRowSet {
    /// The rows in a batch.
    static let batchSize = 4096
    /// The bytes of row encodings after which a batch goes whatever its rows: rows of long values
    /// make fewer rows a batch, so the batches waiting take bounded memory.
    static let batchBytes = 1 << 20

    /// How many helpers expand batches beside the reading thread: one on 2 cores, at most three.
    static var helperCount: Int { max(1, min(3, ProcessInfo.processInfo.activeProcessorCount - 1)) }

    private var element = RowElement()
    private var pending = ElementBatch()
    private var expanded = RowSetHash()
    private var helpers: (queue: BatchQueue, threads: [BlockingThread<RowSetHash>])?

    /// Adds the row whose encoding (``RowEncoding/bytes``) is `row`, of the table whose element
    /// prefix (``RowEncoding/elementPrefix(of:)``) is `elementPrefix`.
    func add(encoded row: UnsafeRawBufferPointer, elementPrefix: [UInt8]) {
        pending.append(elementPrefix, row)
        if pending.isFull { submit() }
    }

    /// Adds the current row of `statement` (its `count` columns: ``TableRows/selected``) of
    /// `rows`' table, digested now: for a row too long to copy.
    func add(_ statement: OpaquePointer, _ count: Int32, of rows: TableRows) {
        pending.append(digest: element.digest(statement, count, of: rows))
        if pending.isFull { submit() }
    }

    private func submit() {
        let queue = helpers?.queue ?? startHelpers()
        if queue.offer(pending) {
            // The helper's copy holds the buffers now.
            pending = ElementBatch()
        } else {
            pending.expand(into: &expanded)
            pending.removeAll()
        }
    }

    private func startHelpers() -> BatchQueue {
        let count = Self.helperCount
        let queue = BatchQueue(capacity: count)
        let threads = (0..<count).map { _ in
            BlockingThread.start("reseed-row-set") {
                var sum = RowSetHash()
                while let batch = queue.next() {
                    batch.expand(into: &sum)
                }
                return sum
            }
        }
        helpers = (queue, threads)
        return queue
    }

    /// The hash of every row added: waits for the helpers' sums.
    func finish() -> RowSetHash {
        pending.expand(into: &expanded)
        pending = ElementBatch()
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

/// Rows' elements waiting to be added to a ``RowSetHash``: each the canonical encoding of one
/// element (its table's prefix and the row's encoding), or the digest of one already computed.
struct ElementBatch: Sendable {
    /// The elements' encodings and digests, back to back.
    private var bytes: [UInt8] = []
    /// Where each element ends in ``bytes``, and whether it is a digest already.
    private var entries: [(end: Int, isDigest: Bool)] = []

    /// Whether the batch should go: ``ConcurrentRowSet/batchSize`` elements or
    /// ``ConcurrentRowSet/batchBytes`` bytes.
    var isFull: Bool {
        entries.count == ConcurrentRowSet.batchSize || bytes.count >= ConcurrentRowSet.batchBytes
    }

    /// Empties the batch, keeping its buffers.
    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        entries.removeAll(keepingCapacity: true)
    }

    /// Adds the element that is `prefix` followed by `row`.
    mutating func append(_ prefix: [UInt8], _ row: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: prefix)
        bytes.append(contentsOf: row)
        entries.append((bytes.count, false))
    }

    /// Adds the element whose digest is `digest`.
    mutating func append(digest: SHA256.Digest) {
        digest.withUnsafeBytes { bytes.append(contentsOf: $0) }
        entries.append((bytes.count, true))
    }

    /// Adds every element to `sum`: each one's SHA-256, then their expansions.
    func expand(into sum: inout RowSetHash) {
        guard !entries.isEmpty else { return }
        var digests = [UInt8](repeating: 0, count: entries.count * SHA256.byteCount)
        bytes.withUnsafeBytes { bytes in
            digests.withUnsafeMutableBytes { digests in
                var start = 0
                for (index, entry) in entries.enumerated() {
                    let element = UnsafeRawBufferPointer(rebasing: bytes[start..<entry.end])
                    let slot = UnsafeMutableRawBufferPointer(rebasing: digests[index * SHA256.byteCount..<(index + 1) * SHA256.byteCount])
                    if entry.isDigest {
                        slot.copyMemory(from: element)
                    } else {
                        var sha = SHA256()
                        sha.update(bufferPointer: element)
                        sha.finalize().withUnsafeBytes { slot.copyMemory(from: $0) }
                    }
                    start = entry.end
                }
            }
        }
        digests.withUnsafeBytes { sum.combine(digests: $0, sign: 1) }
    }
}

/// Batches of elements waiting for the helpers, at most `capacity` of them.
private final class BatchQueue: Sendable {
    private struct State {
        var batches: [ElementBatch] = []
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
    func offer(_ batch: ElementBatch) -> Bool {
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
    func next() -> ElementBatch? {
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
