import Foundation
import Reseed

extension ChannelManifest {
    /// The manifest as JSON: fixed key order, two-space indent, a final newline. These are the bytes that get signed.
    public func encoded() -> Data {
        let lines = ["  \"format\": \(format)", "  \"minimumFormat\": \(minimumFormat)"] + facts.jsonLines
        return Data(("{\n" + lines.joined(separator: ",\n") + "\n}\n").utf8)
    }
}
