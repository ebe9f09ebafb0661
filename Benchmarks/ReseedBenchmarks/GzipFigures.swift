import Foundation
import Reseed
import ReseedSystem

/// Figure 13: decompressing a compressed seed with Reseed's decoder (in process, to /dev/null,
/// without and with the SHA-256 an install computes) versus `gzip -dc FILE > /dev/null`, the
/// codec's own command-line tool, on the same file; each round starts with the file in the page
/// cache. The fastest of `rounds` for each, as figure 4 takes it.
func gunzip(file: URL, rounds: Int) throws {
    try decode(file: file, rounds: rounds, tool: "gzip") { source, sink, hash throws(CodecFailure) in
        try Gzip.decompress(from: source, to: sink, limit: .max, hashing: hash).bytes
    }
}

/// Figure 13d–f: the database `file` compressed with Reseed's xz encoder (as `reseed publish` writes
/// the channel's `.xz`) into `<file>.xz`, its size printed, then decompressed as ``gunzip(file:rounds:)``
/// does against `xz -dc FILE > /dev/null`.
func unxz(database file: URL, rounds: Int) throws {
    #if canImport(CLzma)
    let compressed = file.path + ".xz"
    do {
        let source = try FileSystem.openRegularFile(file.path)
        _ = FileManager.default.createFile(atPath: compressed, contents: nil)
        let destination = try FileSystem.openRegularFile(compressed, access: .writeOnly)
        let seconds = try time { _ = try Xz.compress(from: source, to: destination) }
        printError("  compressed in \(seconds) s")
    }
    try decode(file: URL(fileURLWithPath: compressed), rounds: rounds, tool: "xz") { source, sink, hash throws(CodecFailure) in
        try Xz.decompress(from: source, to: sink, limit: .max, hashing: hash).bytes
    }
    #else
    throw CodecFailure.library(code: 0, message: "no xz codec on this platform")
    #endif
}

/// Decodes `file` with `ours` to /dev/null, without and with the SHA-256, against `<tool> -dc`.
private func decode(
    file: URL, rounds: Int, tool: String,
    _ ours: (borrowing OwnedDescriptor, borrowing OwnedDescriptor, Bool) throws(CodecFailure) -> Int64
) throws {
    let path = file.path
    var plain: [Double] = [], hashing: [Double] = [], reference: [Double] = []
    var bytes: Int64 = 0
    for _ in 0..<rounds {
        for hash in [false, true] {
            try startEven(reading: path)
            let seconds = try time {
                let source = try FileSystem.openRegularFile(path)
                // Not `openRegularFile`, which refuses a device.
                let sink = try OwnedDescriptor.open("/dev/null", .writeOnly)
                bytes = try ours(source, sink, hash)
            }
            if hash { hashing.append(seconds) } else { plain.append(seconds) }
        }
        try startEven(reading: path)
        reference.append(try time { try shell("\(tool) -dc '\(path)' > /dev/null") })
    }
    let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    print("{\"ours\": \(plain.min() ?? .nan), \"hashing\": \(hashing.min() ?? .nan), \"reference\": \(reference.min() ?? .nan), \"bytes\": \(bytes), \"compressed\": \(size), \"rounds\": \(rounds)}")
}
