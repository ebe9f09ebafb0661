import Foundation
import Testing

/// The Apple-platform xz decoder, which Linux never compiles, run by `Tools/apple-xz-check/run`
/// over an emulation of the Compression framework's stream API (its declarations, liblzma
/// underneath): its own logic (pieces of any size, cuts, bytes after the stream, the output limit),
/// under both readings of when the framework reports the stream's end.
@Suite(.serialized, .timeLimit(.minutes(10))) struct AppleXzDecoderTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../../Tools/apple-xz-check/run").standardizedFileURL

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/usr/include/lzma.h"), "needs liblzma-dev"), arguments: [false, true])
    func theDecoderPassesItsChecksOverTheEmulatedFramework(strict: Bool) throws {
        let process = Process()
        process.executableURL = Self.script
        process.arguments = strict ? ["--strict"] : []
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(text.suffix(3_000))")
        #expect(text.hasSuffix("ALL OK\n"), "\(text.suffix(3_000))")
    }
}
