import Foundation

/// Pairs the rows of two versions of a table whose key does not identify its rows, by content: a row
/// of the old version and one of the new that hold the same values are the same row, wherever each
/// sits, and duplicates count (two equal old rows pair with two equal new ones, not one).
///
/// The rows are given in rowid order as digests of their values. Pairs keep that order on both sides
/// (the old rows paired ascend, and so do the new), so that rows which only shifted travel as a few
/// runs. The alignment is the one `diff --patience` finds: the common start and end first, then the
/// rows that occur once in each version as anchors (the longest run of them in the same order), then
/// the same again between each two anchors. Rows left between two pairs, old and new, are paired in
/// order as updates: a row changed in place is one row whose changed values travel, not a delete and
/// an insert.
struct RowAlignment {
    /// A row's identity by content: 128 bits of the SHA-256 of its values.
    struct Digest: Hashable {
        var high: UInt64
        var low: UInt64
    }

    /// An old row and a new row, by their positions in the two lists; `same` when their digests are equal.
    struct Pair: Equatable {
        var old: Int
        var new: Int
        var same: Bool
    }

    /// The pairs, ascending on both sides: rows equal in content, and the rows left between them paired in order.
    ///
    /// `work` bounds the rows the anchor search may visit, in all; past it, what is not aligned yet is
    /// paired in order. The default, 16 visits per row, is more than real tables take.
    static func pairs(old: [Digest], new: [Digest], work: Int? = nil) -> [Pair] {
        var budget = work ?? 16 * (old.count + new.count)
        var same: [Pair] = []
        var segments = [(old: 0..<old.count, new: 0..<new.count)]
        while var (o, n) = segments.popLast() {
            while !o.isEmpty, !n.isEmpty, old[o.lowerBound] == new[n.lowerBound] {
                same.append(Pair(old: o.lowerBound, new: n.lowerBound, same: true))
                o = o.dropFirst()
                n = n.dropFirst()
            }
            while !o.isEmpty, !n.isEmpty, old[o.upperBound - 1] == new[n.upperBound - 1] {
                same.append(Pair(old: o.upperBound - 1, new: n.upperBound - 1, same: true))
                o = o.dropLast()
                n = n.dropLast()
            }
            guard !o.isEmpty, !n.isEmpty, budget >= o.count + n.count else { continue }
            budget -= o.count + n.count
            let anchors = uniqueAnchors(old: old, o, new: new, n)
            var lower = (old: o.lowerBound, new: n.lowerBound)
            for anchor in anchors {
                same.append(Pair(old: anchor.old, new: anchor.new, same: true))
                segments.append((lower.old..<anchor.old, lower.new..<anchor.new))
                lower = (anchor.old + 1, anchor.new + 1)
            }
            if !anchors.isEmpty { segments.append((lower.old..<o.upperBound, lower.new..<n.upperBound)) }
        }
        same.sort { $0.old < $1.old }
        // The rows between two pairs (or before the first, after the last), paired in order as updates.
        var all: [Pair] = []
        var next = (old: 0, new: 0)
        for pair in same + [Pair(old: old.count, new: new.count, same: true)] {
            let changed = min(pair.old - next.old, pair.new - next.new)
            for offset in 0..<max(changed, 0) {
                all.append(Pair(old: next.old + offset, new: next.new + offset, same: false))
            }
            if pair.old < old.count { all.append(pair) }
            next = (pair.old + 1, pair.new + 1)
        }
        return all
    }

    /// The rows that occur exactly once in `o` of the old rows and once in `n` of the new, paired, and of
    /// those the longest list that ascends on both sides (patience sorting), in order.
    private static func uniqueAnchors(old: [Digest], _ o: Range<Int>, new: [Digest], _ n: Range<Int>) -> [(old: Int, new: Int)] {
        // Per digest: how often in the old range and where, and the same in the new range.
        var seen: [Digest: (oldCount: Int, old: Int, newCount: Int, new: Int)] = [:]
        for index in o {
            let entry = seen[old[index]]
            seen[old[index]] = (1 + (entry?.oldCount ?? 0), index, 0, 0)
        }
        for index in n {
            guard let entry = seen[new[index]] else { continue }
            seen[new[index]] = (entry.oldCount, entry.old, entry.newCount + 1, index)
        }
        let candidates = seen.values.filter { $0.oldCount == 1 && $0.newCount == 1 }.map { (old: $0.old, new: $0.new) }.sorted { $0.old < $1.old }
        // Longest increasing subsequence of the new positions: tails[k] ends the best chain of length k + 1.
        var tails: [Int] = []
        var previous = [Int](repeating: -1, count: candidates.count)
        for (index, candidate) in candidates.enumerated() {
            var low = 0
            var high = tails.count
            while low < high {
                let middle = (low + high) / 2
                if candidates[tails[middle]].new < candidate.new { low = middle + 1 } else { high = middle }
            }
            if low > 0 { previous[index] = tails[low - 1] }
            if low == tails.count { tails.append(index) } else { tails[low] = index }
        }
        var chain: [(old: Int, new: Int)] = []
        var cursor = tails.last ?? -1
        while cursor >= 0 {
            chain.append(candidates[cursor])
            cursor = previous[cursor]
        }
        return chain.reversed()
    }

    /// The runs of pairs whose rowid changes: consecutive pairs whose old and new rowids both go up by
    /// one form one run (first old rowid, rows, first new rowid). Pairs that keep their rowid are not in any.
    static func runs(of pairs: [Pair], oldRowids: [Int64], newRowids: [Int64]) -> [(source: Int64, count: Int64, target: Int64)] {
        var runs: [(source: Int64, count: Int64, target: Int64)] = []
        for pair in pairs {
            let (from, to) = (oldRowids[pair.old], newRowids[pair.new])
            guard from != to else { continue }
            func follows(_ first: Int64, _ count: Int64, _ next: Int64) -> Bool {
                let end = first.addingReportingOverflow(count)
                return !end.overflow && end.partialValue == next
            }
            if let last = runs.last, follows(last.source, last.count, from), follows(last.target, last.count, to) {
                runs[runs.count - 1].count += 1
            } else {
                runs.append((from, 1, to))
            }
        }
        return runs
    }
}
