import Crypto
import Dispatch
import GRDBSQLite
import ReseedSystem
import Synchronization

/// What a delta changes in a ``RowSetHash`` (rows added, removed, and moved to other rowids),
/// computed on threads of its own while the delta goes on applying.
///
/// The reading thread encodes each row's element once (its table's prefix, the row mark, then the
/// row's values, the rowid first where it is hashed, as ``RowElement`` digests it) into a batch;
/// the digests (SHA-256) and their expansions, the cost of a row, go to a helper thread a batch at
/// a time. A move keeps the row's values, so its element is encoded once, as it is at its old
/// rowid, with the new rowid: the rowid is a rowid table's first column, an integer, so it sits at
/// a fixed offset in the element, which the helper rewrites for the second digest. While
/// ``maxHelpers`` helpers run, the reading thread digests and expands the batch itself: the
/// batches waiting take bounded memory. A row whose encoding is long (more than
/// ``longestElement`` bytes) is digested by the reading thread as it is read. Addition commutes:
/// however the batches are split, the partial sums add up to the same change.
final class RowSetChanges {
    /// The rows in a batch.
    static let batchSize = 4096
    /// The bytes of elements after which a batch goes whatever its rows.
    static let batchBytes = 1 << 20
    /// The longest element copied into a batch.
    static let longestElement = 1 << 16
    /// The most batches expanded at once on helper threads.
    static let maxHelpers = 2

    private var element = RowElement()
    private var pending = RowChangeBatch()
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
    /// first) of `rows`' table, which a move takes to `rowid`. `prefix` is the table's element
    /// prefix (``RowEncoding/elementPrefix(of:)``).
    func move(_ statement: OpaquePointer, _ count: Int32, of rows: TableRows, prefix: [UInt8], to rowid: Int64) {
        if count == 0 || sqlite3_column_type(statement, 0) != SQLITE_INTEGER
            || !pending.append(statement, count, prefix: prefix, kind: .moved(offset: 0, rowid: rowid)) {
            pending.append(digest: element.digest(statement, count, of: rows), sign: -1)
            pending.append(digest: element.digest(statement, count, of: rows, rowid: rowid), sign: 1)
        }
        if pending.isFull { submit() }
    }

    /// Notes the current row of `statement` of `rows`' table, added (`sign` 1) or removed (-1).
    func change(_ statement: OpaquePointer, _ count: Int32, of rows: TableRows, prefix: [UInt8], sign: Int) {
        if !pending.append(statement, count, prefix: prefix, kind: .element(sign: sign)) {
            pending.append(digest: element.digest(statement, count, of: rows), sign: sign)
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
        let helpers = helpers
        let spawned = spawnThread("reseed-row-set") {
            var sum = RowSetHash()
            batch.expand(into: &sum)
            helpers.state.withLock { state in
                state.sum.add(sum)
                state.running -= 1
            }
            helpers.finished.signal()
        }
        guard spawned else {
            // No thread to be had: this thread expands the batch, and waits for no helper.
            helpers.state.withLock { $0.running -= 1 }
            batch.expand(into: &expanded)
            return
        }
        started += 1
    }

    /// The change of every row noted: waits for the helpers.
    func finish() -> RowSetHash {
        pending.expand(into: &expanded)
        pending.removeAll()
        waitForHelpers()
        // Taken once: a second finish adds nothing the helpers summed again.
        expanded.add(helpers.state.withLock { state in
            defer { state.sum = RowSetHash() }
            return state.sum
        })
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

/// Rows waiting to be digested and expanded: each the element's encoding and what to do with it,
/// or a digest computed already.
struct RowChangeBatch: Sendable {
    enum Kind {
        /// The element, added (1) or removed (-1).
        case element(sign: Int)
        /// The element at its old rowid, removed, and at `rowid`, added; the rowid's eight bytes
        /// start at `offset` (set by ``RowChangeBatch/append(_:_:prefix:kind:)``).
        case moved(offset: Int, rowid: Int64)
        /// An element's digest, added or removed.
        case digest(sign: Int)
    }

    private var bytes: [UInt8] = []
    private var entries: [(end: Int, kind: Kind)] = []

    var isFull: Bool {
        entries.count >= RowSetChanges.batchSize || bytes.count >= RowSetChanges.batchBytes
    }

    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        entries.removeAll(keepingCapacity: true)
    }

    /// Appends the element of the current row of `statement` after `prefix` (for a move, its rowid
    /// first, an integer); false, and nothing appended, when it is longer than ``RowSetChanges/longestElement``.
    mutating func append(_ statement: OpaquePointer, _ count: Int32, prefix: [UInt8], kind: Kind) -> Bool {
        let start = bytes.count
        bytes.append(contentsOf: prefix)
        bytes.append(ContentHasher.Tag.row.rawValue)
        for index in 0..<count {
            guard ContentHasher.appendValue(statement, index, to: &bytes, inlineUpTo: RowSetChanges.longestElement) == nil,
                  bytes.count - start <= RowSetChanges.longestElement else {
                bytes.removeSubrange(start...)
                return false
            }
        }
        var kind = kind
        // After the prefix, the row mark and the integer's tag.
        if case .moved(_, let rowid) = kind { kind = .moved(offset: prefix.count + 2, rowid: rowid) }
        entries.append((bytes.count, kind))
        return true
    }

    /// Appends an element's digest, computed already.
    mutating func append(digest: SHA256.Digest, sign: Int) {
        bytes.append(contentsOf: digest)
        entries.append((bytes.count, .digest(sign: sign)))
    }

    /// Adds every entry's change to `sum`.
    func expand(into sum: inout RowSetHash) {
        guard !entries.isEmpty else { return }
        var removed: [UInt8] = []
        var added: [UInt8] = []
        var element: [UInt8] = []
        var start = 0
        for (end, kind) in entries {
            let range = start..<end
            start = end
            switch kind {
            case .digest(let sign):
                if sign < 0 { removed.append(contentsOf: bytes[range]) } else { added.append(contentsOf: bytes[range]) }
            case .element(let sign):
                let digest = SHA256.hash(data: bytes[range])
                if sign < 0 { removed.append(contentsOf: digest) } else { added.append(contentsOf: digest) }
            case .moved(let offset, let rowid):
                element.removeAll(keepingCapacity: true)
                element.append(contentsOf: bytes[range])
                removed.append(contentsOf: SHA256.hash(data: element))
                // The same element with the new rowid, big-endian, in place of the old.
                withUnsafeBytes(of: UInt64(bitPattern: rowid).bigEndian) { element.replaceSubrange(offset..<(offset + 8), with: $0) }
                added.append(contentsOf: SHA256.hash(data: element))
            }
        }
        removed.withUnsafeBytes { sum.combine(digests: $0, sign: -1) }
        added.withUnsafeBytes { sum.combine(digests: $0, sign: 1) }
    }
}
