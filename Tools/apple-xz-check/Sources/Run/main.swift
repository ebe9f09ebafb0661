import Check
import Foundation

nonisolated func decode(_ stream: [UInt8], limit: Int64 = .max, piece: Int) -> Result<[UInt8], CodecFailure> {
    stream.withUnsafeBytes { all in
        do throws(CodecFailure) {
            var decoder = try XzDecoder(limit: limit)
            var output: [UInt8] = []
            var start = 0
            while start < all.count {
                let end = min(all.count, start + piece)
                try decoder.feed(UnsafeRawBufferPointer(rebasing: all[start..<end])) { output += $0 }
                start = end
            }
            try decoder.finish { output += $0 }
            return .success(output)
        } catch { return .failure(error) }
    }
}
/// A result in a line: the failure, or how many bytes came out.
nonisolated func describe(_ result: Result<[UInt8], CodecFailure>) -> String {
    switch result {
    case .success(let bytes): "success(\(bytes.count) bytes)"
    case .failure(let failure): "\(failure)"
    }
}

func shell(_ command: String) throws -> [UInt8] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", command]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "\(command) failed"]) }
    return [UInt8](data)
}
var rng = SystemRandomNumberGenerator()
let text = (0..<300_000).map { _ in UInt8.random(in: 97...100, using: &rng) }
let plain = FileManager.default.temporaryDirectory.appendingPathComponent("reseed-apple-xz-check-\(getpid())")
try Data(text).write(to: plain)
var failures = 0
@MainActor func check(_ label: String, _ ok: Bool, _ detail: @autoclosure () -> String = "") { if !ok { failures += 1; print("FAIL \(label) \(detail())") } else { print("ok   \(label)") } }
for options in ["-9", "-0", "-6 --check=none", "-6 -T2 --block-size=8KiB"] {
    let xz = try shell("xz \(options) -c \(plain.path)")
    for piece in [1, 7, 4096, 1 << 20] {
        let r = decode(xz, piece: piece)
        check("\(options) piece \(piece)", (try? r.get()) == text, describe(r))
    }
    // every cut is truncated
    var cutsOK = true
    for cut in stride(from: 0, to: xz.count, by: max(1, xz.count / 97)) {
        if case .success = decode(Array(xz[..<cut]), piece: 1000) { cutsOK = false; print("cut \(cut) accepted") }
    }
    check("\(options) cuts refused", cutsOK)
    check("\(options) trailing byte", describe(decode(xz + [0], piece: 4096)).contains("follow the end"), describe(decode(xz + [0], piece: 4096)))
    check("\(options) concatenated", { let r = describe(decode(xz + xz, piece: 1 << 20)); return r.contains("follow the end") }(), describe(decode(xz + xz, piece: 1 << 20)))
    let limited = decode(xz, limit: 100_000, piece: 4096)
    check("\(options) limit", describe(limited).contains("tooLong(limit: 100000)"), describe(limited))
    let exact = decode(xz, limit: Int64(text.count), piece: 4096)
    check("\(options) exact limit", (try? exact.get()) == text, describe(exact))
}
let empty = try shell("printf '' | xz -9 -c")
check("empty stream decodes to nothing", (try? decode(empty, piece: 3).get()) == [], describe(decode(empty, piece: 3)))
check("no input is truncated", describe(decode([], piece: 3)).contains("empty"), describe(decode([], piece: 3)))
var bad = try shell("xz -9 -c \(plain.path)"); bad[1] ^= 1
check("bad magic", describe(decode(bad, piece: 4096)).contains("magic"), describe(decode(bad, piece: 4096)))
var corrupt = try shell("xz -9 -c \(plain.path)"); corrupt[corrupt.count / 2] ^= 0x55
check("corrupt refused", { if case .failure = decode(corrupt, piece: 4096) { return true }; return false }())
print(failures == 0 ? "ALL OK" : "\(failures) FAILURES")
try? FileManager.default.removeItem(at: plain)
exit(failures == 0 ? 0 : 1)
