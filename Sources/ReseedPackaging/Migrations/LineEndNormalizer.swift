import Foundation

/// A step's content as a build reads it, fed in pieces of any size: a UTF-8 BOM at the start
/// dropped, each CRLF and each lone CR made LF, every other byte as it is.
///
/// The one definition of ``MigrationStep/normalized(_:)`` and ``MigrationStep/checksum(of:)``;
/// fed a file a chunk at a time, it gives what it gives the whole file at once (a CR at the end of
/// one piece and an LF at the start of the next are one line end).
struct LineEndNormalizer {
    /// The first bytes, held until it is known whether they are a BOM.
    private var head: [UInt8] = []
    private var headDone = false
    /// The last byte fed was a CR, already given as LF: an LF next is part of it.
    private var afterCR = false

    /// Gives `body` the normalised form of `bytes`, in runs (a run may be empty).
    mutating func feed(_ bytes: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
        var rest = bytes
        if !headDone {
            let taken = min(3 - head.count, rest.count)
            head.append(contentsOf: rest.prefix(taken))
            rest = UnsafeRawBufferPointer(rebasing: rest[taken...])
            guard head.count == 3 else { return }
            finishHead(body)
        }
        runs(rest, body)
    }

    /// Gives `body` what is still held: the start of a content shorter than a BOM.
    mutating func finish(_ body: (UnsafeRawBufferPointer) -> Void) {
        if !headDone { finishHead(body) }
    }

    private mutating func finishHead(_ body: (UnsafeRawBufferPointer) -> Void) {
        headDone = true
        guard head != [0xEF, 0xBB, 0xBF] else { return }
        let held = head
        held.withUnsafeBytes { runs($0, body) }
    }

    private mutating func runs(_ bytes: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        var start = 0
        if afterCR {
            afterCR = false
            if bytes[0] == 0x0A { start = 1 }
        }
        let lineFeed: StaticString = "\n"
        let lf = UnsafeRawBufferPointer(start: lineFeed.utf8Start, count: 1)
        // memchr: the search runs at memory speed, in a debug build too.
        while start < bytes.count, let found = memchr(base + start, 0x0D, bytes.count - start) {
            let cr = base.distance(to: UnsafeRawPointer(found))
            body(UnsafeRawBufferPointer(rebasing: bytes[start..<cr]))
            body(lf)
            if cr + 1 == bytes.count {
                afterCR = true
                return
            }
            start = bytes[cr + 1] == 0x0A ? cr + 2 : cr + 1
        }
        body(UnsafeRawBufferPointer(rebasing: bytes[start...]))
    }
}
