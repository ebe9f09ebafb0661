import Foundation
import Reseed
import ReseedSystem

/// Figure 12: decompressing a compressed seed with Reseed's decoder (in process, to /dev/null,
/// without and with the SHA-256 an install computes) versus `gzip -dc FILE > /dev/null`, the
/// codec's own command-line tool, on the same file; each round starts with the file in the page
/// cache. The fastest of `rounds` for each, as figure 4 takes it.
func gunzip(file: URL, rounds: Int) throws {
    let path = file.path
    var ours: [Double] = [], hashing: [Double] = [], reference: [Double] = []
    var bytes: Int64 = 0
    for _ in 0..<rounds {
        for hash in [false, true] {
            try startEven(reading: path)
            let seconds = try time {
                let source = try FileSystem.openRegularFile(path)
                // Not `openRegularFile`, which refuses a device.
                let sink = try OwnedDescriptor.open("/dev/null", .writeOnly)
                bytes = try Gzip.decompress(from: source, to: sink, limit: .max, hashing: hash).bytes
            }
            if hash { hashing.append(seconds) } else { ours.append(seconds) }
        }
        try startEven(reading: path)
        reference.append(try time { try shell("gzip -dc '\(path)' > /dev/null") })
    }
    print("{\"ours\": \(ours.min() ?? .nan), \"hashing\": \(hashing.min() ?? .nan), \"reference\": \(reference.min() ?? .nan), \"bytes\": \(bytes), \"rounds\": \(rounds)}")
}
