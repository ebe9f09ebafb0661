import Foundation

/// The one form of time a channel writes (`expires` in `channel.json` and `keys.json`): RFC 3339
/// in UTC to the second, `2026-12-25T00:00:00Z`. Anything else (an offset, fractions, lowercase
/// `t`/`z`) is refused rather than guessed at: these times are signed, and one spelling keeps them
/// comparable by eye.
public enum RFC3339 {
    /// The time as `YYYY-MM-DDTHH:MM:SSZ` (fractions of a second dropped).
    public static func string(_ date: Date) -> String {
        Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down)).formatted(.iso8601)
    }

    /// The time `text` names; nil unless it is exactly `YYYY-MM-DDTHH:MM:SSZ` and a real date.
    public static func date(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count == 20 else { return nil }
        for (index, byte) in bytes.enumerated() {
            switch index {
            case 4, 7: guard byte == UInt8(ascii: "-") else { return nil }
            case 10: guard byte == UInt8(ascii: "T") else { return nil }
            case 13, 16: guard byte == UInt8(ascii: ":") else { return nil }
            case 19: guard byte == UInt8(ascii: "Z") else { return nil }
            default: guard (48...57).contains(byte) else { return nil }
            }
        }
        guard let date = try? Date(text, strategy: .iso8601), string(date) == text else { return nil }
        return date
    }
}
