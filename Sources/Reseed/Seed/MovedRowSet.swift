import Crypto
import Dispatch
import GRDBSQLite
import ReseedSystem
import Synchronization

/// What a delta's moves change in a ``RowSetHash``, computed on threads of its own while the delta
/// goes on applying: each moved row's element at its old rowid removed, and at its new one added.
///
/// A move keeps the row's values, so the reading thread encodes the row's element once, as it is at
/// its old rowid (its table's prefix, the row mark, then the rowid and the values, as
/// ``RowElement`` digests it), and notes the new rowid; the two digests (SHA-256) and their
/// expansions, the cost of a row, go to a helper thread a batch at a time. The rowid is a rowid
/// table's first column, an integer, so it sits at a fixed offset in the element, which the helper
/// rewrites for the second digest. While ``maxHelpers`` helpers run, the reading thread digests and
/// expands the batch itself: the batches waiting take bounded memory. A row whose encoding is long
/// (more than ``longestElement`` bytes) is digested by the reading thread as it is read.
/// Addition commutes: however the batches are split, the partial sums add up to the same change.
final class MovedRowSet {
    /// The rows in a batch.
    static let batchSize = 4096
    /// The bytes of elements after which a batch goes whatever its rows.
    static let batchBytes = 1 << 20
    /// The longest element copied into a batch.
    static let longestElement = 1 << 16
    /// The most batches expanded at once on helper threads.
    static let maxHelpers = 2

    private var element = RowElement()
    private var pending = MovedBatch()
    /// What the reading thread expanded itself.
    private var expanded = RowSetHash()
    private let helpers = Helpers()
    private var started = 0

    /// What the helpers share with the reading thread.
    private final class Helpers: Sendable {
        /// Their sum, and how many run.
        let state = Mutex<(sum: RowSetHash, running: Int)>((RowSetHash(), 0))
        /// Signalled once by each helper when it has added its batch to the sum.
        let finished = DispatchSemaphore(value: 0)
    }

    /// Notes the current row of `statement` (its `count` columns: ``TableRows/selected``, the rowid
    /// first) of `rows`' table, which a move takes to `rowid`.
    /// `prefix` is the table's element prefix (``RowEncoding/elementPrefix(of:)``).
    func add(_ statement: OpaquePointer, _ count: Int32, of rows: TableRows, prefix: [UInt8], to rowid: Int64) {
        if count == 0 || sqlite3_column_type(statement, 0) != SQLITE_INTEGER
            || !pending.append(statement, count, prefix: prefix, to: rowid) {
            pending.append(removed: element.digest(statement, count, of: rows), added: element.digest(statement, count, of: rows, rowid: rowid))
        }
        if pending.isFull { submit() }
    }

    private func submit() {
        let batch = pending
        pending.removeAll()
        let helped = helpers.state.withLock { state in
            guard state.running < Self.maxHelpers else { return false }
            state.running += 1
            return true
        }
        guard helped else {
            batch.expand(into: &expanded)
            return
        }
        started += 1
        let helpers = helpers
        startDetachedThread("reseed-moved-rows") {
            var sum = RowSetHash()
            batch.expand(into: &sum)
            helpers.state.withLock { state in
                state.sum.add(sum)
                state.running -= 1
            }
            helpers.finished.signal()
        }
    }

    /// The change of every row noted: waits for the helpers.
    func finish() -> RowSetHash {
        pending.expand(into: &expanded)
        pending.removeAll()
        waitForHelpers()
        expanded.add(helpers.state.withLock { $0.sum })
        return expanded
    }

    private func waitForHelpers() {
        while started > 0 {
            helpers.finished.wait()
            started -= 1
        }
    }

    /// An apply that failed halfway never finishes: its helpers still stop before it is gone.
    deinit {
        waitForHelpers()
    }
}

/// Moved rows waiting to be digested and expanded: each the element at its old rowid, where its
/// rowid's eight bytes start in it and the new rowid; or both digests, computed already.
struct MovedBatch: Sendable {
    private struct Entry {
        var end: Int
        /// Nil when the entry is its two digests.
        var moved: (offset: Int, rowid: Int64)?
    }

    private var bytes: [UInt8] = []
    private var entries: [Entry] = []

    var isFull: Bool {
        entries.count == MovedRowSet.batchSize || bytes.count >= MovedRowSet.batchBytes
    }

    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        entries.removeAll(keepingCapacity: true)
    }

    /// Appends the element of the current row of `statement` (its rowid first, an integer), after
    /// `prefix`; false, and nothing appended, when it is longer than ``MovedRowSet/longestElement``.
    mutating func append(_ statement: OpaquePointer, _ count: Int32, prefix: [UInt8], to rowid: Int64) -> Bool {
        let start = bytes.count
        bytes.append(contentsOf: prefix)
        bytes.append(ContentHasher.Tag.row.rawValue)
        // After the integer's tag.
        let offset = bytes.count + 1 - start
        for index in 0..<count {
            guard ContentHasher.appendValue(statement, index, to: &bytes, inlineUpTo: MovedRowSet.longestElement) == nil,
                  bytes.count - start <= MovedRowSet.longestElement else {
                bytes.removeSubrange(start...)
                return false
            }
        }
        entries.append(Entry(end: bytes.count, moved: (offset, rowid)))
        return true
    }

    /// Appends a row whose digests at its old and new rowids are computed already.
    mutating func append(removed: SHA256.Digest, added: SHA256.Digest) {
        bytes.append(contentsOf: removed)
        bytes.append(contentsOf: added)
        entries.append(Entry(end: bytes.count, moved: nil))
    }

    /// Adds every entry's change to `sum`: the element at its new rowid, less the one at its old.
    func expand(into sum: inout RowSetHash) {
        guard !entries.isEmpty else { return }
        var removed: [UInt8] = []
        var added: [UInt8] = []
        removed.reserveCapacity(entries.count * SHA256.byteCount)
        added.reserveCapacity(entries.count * SHA256.byteCount)
        var element: [UInt8] = []
        var start = 0
        for entry in entries {
            let range = start..<entry.end
            start = entry.end
            guard let (offset, rowid) = entry.moved else {
                removed.append(contentsOf: bytes[range.prefix(SHA256.byteCount)])
                added.append(contentsOf: bytes[range.suffix(SHA256.byteCount)])
                continue
            }
            element.removeAll(keepingCapacity: true)
            element.append(contentsOf: bytes[range])
            removed.append(contentsOf: SHA256.hash(data: element))
            // The same element with the new rowid, big-endian, in place of the old.
            withUnsafeBytes(of: UInt64(bitPattern: rowid).bigEndian) { element.replaceSubrange(offset..<(offset + 8), with: $0) }
            added.append(contentsOf: SHA256.hash(data: element))
        }
        removed.withUnsafeBytes { sum.combine(digests: $0, sign: -1) }
        added.withUnsafeBytes { sum.combine(digests: $0, sign: 1) }
    }
}
