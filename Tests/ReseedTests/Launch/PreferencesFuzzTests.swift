import Foundation
import ReseedSystem
import ReseedTesting
import ReseedTestSupport
import Testing
@testable import Reseed

/// Random JSON text spelled the ways apps and editors write it: escapes, whitespace, number forms.
struct JSONTextGenerator {
    var rng: SplitMix64

    static let whitespaces = ["", "", "", " ", "\n", "\t", "\r\n", "  "]
    static let numbers = ["0", "-0", "1.0", "1.5e3", "2E-7", "12345678901234567890", "3.14159", "1e400", "0.000001", "-1E+2"]

    mutating func whitespace() -> String { rng.pick(Self.whitespaces) }

    /// A string literal that decodes to `text`, escaped in a random mix of the ways JSON allows.
    mutating func string(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "/" where rng.chance(0.5): out += "\\/"
            case "\n" where rng.chance(0.5): out += "\\n"
            case _ where scalar.value < 0x20 || rng.chance(0.1): out += escape(scalar)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    private mutating func escape(_ scalar: Unicode.Scalar) -> String {
        let uppercase = rng.chance(0.5)
        let hex = { (value: UInt32) -> String in
            let digits = String(value, radix: 16, uppercase: uppercase)
            return "\\u" + String(repeating: "0", count: 4 - digits.count) + digits
        }
        guard scalar.value >= 0x1_0000 else { return hex(scalar.value) }
        let offset = scalar.value - 0x1_0000
        return hex(0xD800 + (offset >> 10)) + hex(0xDC00 + (offset & 0x3FF))
    }

    mutating func number() -> String {
        // Int64(truncatingIfNeeded: next()) is the draw Int64.random(in: .min ... .max, using:) makes.
        if rng.chance(0.5) { return String(Int64(truncatingIfNeeded: rng.next()) >> rng.int(0..<63)) }
        return rng.pick(Self.numbers)
    }

    /// Any JSON value but an object or an array.
    mutating func scalarValue() -> String {
        switch rng.int(0..<4) {
        case 0: "null"
        case 1: rng.chance(0.5) ? "true" : "false"
        case 2: number()
        default: string(rng.text(maxScalars: 12))
        }
    }

    mutating func value(depth: Int) -> String {
        switch rng.int(0..<(depth >= 4 ? 1 : 4)) {
        case 0, 1: return scalarValue()
        case 2:
            var elements: [String] = []
            for _ in 0..<rng.int(0..<4) { elements.append(value(depth: depth + 1)) }
            return "[" + whitespace() + joined(elements) + whitespace() + "]"
        default:
            var members: [(String, String)] = []
            for _ in 0..<rng.int(0..<4) { members.append((rng.text(maxScalars: 6), value(depth: depth + 1))) }
            return object(members)
        }
    }

    mutating func object(_ members: [(key: String, value: String)]) -> String {
        var parts: [String] = []
        for member in members { parts.append(string(member.key) + whitespace() + ":" + whitespace() + member.value) }
        return "{" + whitespace() + joined(parts) + whitespace() + "}"
    }

    private mutating func joined(_ parts: [String]) -> String {
        var out = ""
        for (index, part) in parts.enumerated() { out += (index == 0 ? "" : whitespace() + "," + whitespace()) + part }
        return out
    }

    /// A preferences file, and the versions Reseed must read from it: those of the last `"reseed"`
    /// member, and in it of each store's last entry (as ``JSONNode`` lookups and ``JSONEdit`` see them).
    mutating func preferences() -> (text: String, versions: [String: String]) {
        var members: [(String, String)] = []
        var versions: [String: String] = [:]
        for _ in 0..<rng.int(0..<6) {
            if rng.chance(0.4) {
                let (text, found) = reseedValue()
                members.append((PreferencesFile.key, text))
                versions = found
            } else {
                var key = rng.text(maxScalars: 8)
                if key == PreferencesFile.key { key += "x" }
                members.append((key, value(depth: 1)))
            }
        }
        return (object(members), versions)
    }

    private mutating func reseedValue() -> (String, [String: String]) {
        if rng.chance(0.15) { return (scalarValue(), [:]) }
        var stores: [(String, String)] = []
        var versions: [String: String] = [:]
        for _ in 0..<rng.int(0..<5) {
            let name = !stores.isEmpty && rng.chance(0.3) ? rng.pick(stores).0 : rng.chance(0.5) ? "items" : rng.text(maxScalars: 6)
            guard rng.chance(0.85) else {
                stores.append((name, scalarValue()))
                versions[name] = nil
                continue
            }
            var entry: [(String, String)] = []
            var version: String?
            for _ in 0..<rng.int(0..<4) {
                switch rng.int(0..<4) {
                case 0, 1:
                    let text = rng.text(maxScalars: 10)
                    entry.append(("version", string(text)))
                    version = text
                case 2:
                    entry.append(("version", rng.chance(0.5) ? "null" : number()))
                    version = nil
                default:
                    entry.append(("note", value(depth: 3)))
                }
            }
            stores.append((name, object(entry)))
            versions[name] = version
        }
        return (object(stores), versions)
    }
}

@Suite struct PreferencesFuzzTests {
    /// Records a version with ``JSONEdit`` as ``PreferencesFile`` does (parsed as it parses, any depth),
    /// and checks what the edit promises. `read` is `PreferencesFile.contents(of: bytes)`, which the
    /// caller has checked already: a debug build parses slowly, so each text is parsed once a purpose.
    static func checkEdit(_ bytes: [UInt8], read: PreferencesFile.Contents, _ rng: inout SplitMix64, _ failures: inout FuzzFailures) -> Bool {
        guard case .valid(let before) = read, let root = try? JSONNode.parse(bytes, opaqueBeyond: PreferencesFile.treeDepth),
              case .object(let members) = root.value else { return false }
        let name = rng.chance(0.5) ? "items" : rng.text(maxScalars: 6)
        let version = rng.text(maxScalars: 10)
        let path = [PreferencesFile.key, name, "version"]
        let edited = JSONEdit.set(path, to: JSONNode.quote(version), in: bytes, root: root)
        guard let again = try? JSONNode.parse(edited, opaqueBeyond: PreferencesFile.treeDepth), case .object(let after) = again.value else {
            failures.check(false, "the edit made bytes that do not parse as an object: \(FuzzFailures.shown(bytes)) → \(FuzzFailures.shown(edited))")
            return true
        }
        let editedIndex = members.lastIndex { $0.key == PreferencesFile.key }
        failures.check(after.count == members.count + (editedIndex == nil ? 1 : 0), "the edit changed the member count: \(FuzzFailures.shown(bytes)) → \(FuzzFailures.shown(edited))")
        for (index, member) in members.enumerated() where index != editedIndex && index < after.count {
            failures.check(after[index].key == member.key && edited[after[index].range] == bytes[member.range],
                           "the edit changed the member \(member.key.debugDescription): \(FuzzFailures.shown(bytes)) → \(FuzzFailures.shown(edited))")
        }
        if editedIndex == nil { failures.check(after.last?.key == PreferencesFile.key, "the edit did not append \"reseed\": \(FuzzFailures.shown(edited))") }
        var expected = before
        expected[name] = version
        let reread = PreferencesFile.contents(of: edited)
        failures.check(reread == .valid(versions: expected),
                       "after recording \(version.debugDescription) for \(name.debugDescription): \(reread), expected \(expected); \(FuzzFailures.shown(edited))")
        failures.check(JSONEdit.set(path, to: JSONNode.quote(version), in: edited, root: again) == edited, "recording the same version twice changed the bytes: \(FuzzFailures.shown(edited))")
        return true
    }

    /// Foundation's verdict, for documents on which the two parsers' documented limits agree:
    /// printable ASCII and whitespace only, no BOM, nesting well under both depth limits, and no
    /// number beyond a Double's range (JSON allows one, JSONNode keeps its spelling, Foundation refuses it).
    static func foundationAccepts(_ bytes: [UInt8]) -> Bool? {
        // One plain loop that stops at the first reason not to compare: a debug build runs
        // `allSatisfy` and `count(where:)` over a 600 kB nesting case ten times slower.
        let comparable = bytes.withUnsafeBufferPointer { buffer in
            var brackets = 0
            var digits = 0
            var exponentDigits: Int?
            var index = 0
            while index < buffer.count {
                let byte = buffer[index]
                index += 1
                guard (0x20...0x7E).contains(byte) || byte == 0x09 || byte == 0x0A || byte == 0x0D else { return false }
                if byte == UInt8(ascii: "[") || byte == UInt8(ascii: "{") {
                    brackets += 1
                    if brackets >= 200 { return false }
                }
                let isDigit = byte &- 48 < 10
                digits = isDigit ? digits + 1 : 0
                if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                    exponentDigits = 0
                } else if isDigit, let count = exponentDigits {
                    exponentDigits = count + 1
                } else if byte != UInt8(ascii: "+") && byte != UInt8(ascii: "-") {
                    exponentDigits = nil
                }
                if digits > 300 || (exponentDigits ?? 0) > 2 { return false }
            }
            return true
        }
        guard comparable else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])) != nil
    }

    @Test(.timeLimit(.minutes(10)))
    func generatedPreferencesGiveTheirRecordedVersionsAndEditCleanly() throws {
        let sandbox = try LaunchSandbox()
        try FileManager.default.createDirectory(at: sandbox.dataDirectory, withIntermediateDirectories: true)
        var generator = JSONTextGenerator(rng: SplitMix64(seed: 0x5EED_0003))
        var rng = SplitMix64(seed: 0x5EED_0004)
        var failures = FuzzFailures()
        let cases = 10_000
        var edits = 0
        var viaFiles = 0
        for index in 0..<cases {
            let (text, versions) = generator.preferences()
            let bytes = Array(text.utf8)
            let contents = PreferencesFile.contents(of: bytes)
            failures.check(contents == .valid(versions: versions), "read \(contents), expected \(versions) from \(FuzzFailures.shown(bytes))")
            if Self.checkEdit(bytes, read: contents, &rng, &failures) { edits += 1 }
            if index % 100 == 0 {
                try Data(bytes).write(to: sandbox.preferencesURL)
                failures.check(try PreferencesFile(url: sandbox.preferencesURL).read() == .valid(versions: versions), "file read differs: \(FuzzFailures.shown(bytes))")
                viaFiles += 1
            }
        }
        print("preferences fuzz: \(cases) generated files read (\(viaFiles) through PreferencesFile(url:).read()), \(edits) edits checked")
        #expect(failures.count == 0, "\(failures.summary)")
    }

    @Test(.timeLimit(.minutes(10)))
    func damagedPreferencesAreValidOrCorruptAndEditCleanly() throws {
        let sandbox = try LaunchSandbox()
        try FileManager.default.createDirectory(at: sandbox.dataDirectory, withIntermediateDirectories: true)
        var generator = JSONTextGenerator(rng: SplitMix64(seed: 0x5EED_0005))
        var rng = SplitMix64(seed: 0x5EED_0006)
        var failures = FuzzFailures()
        var tally: [String: Int] = [:]
        var compared = 0
        let cases = 12_000
        for index in 0..<cases {
            var bytes = Array(generator.preferences().text.utf8)
            let damage = rng.pick(Damage.allCases)
            damage.apply(to: &bytes, &rng)
            let contents = PreferencesFile.contents(of: bytes)
            // As the preferences are read: any depth, the app's deep values kept whole.
            let parsed = try? JSONNode.parse(bytes, opaqueBeyond: PreferencesFile.treeDepth)
            switch contents {
            case .valid:
                tally["valid", default: 0] += 1
                failures.check(parsed.map { if case .object = $0.value { true } else { false } } ?? false, "valid but not an object: \(FuzzFailures.shown(bytes))")
            case .corrupt(let reason):
                tally["corrupt", default: 0] += 1
                failures.check(!reason.isEmpty && !reason.contains("\n"), "corrupt without a one-line reason: \(FuzzFailures.shown(bytes))")
            case .missing, .tooLarge:
                failures.check(false, "bytes read as \(contents): \(FuzzFailures.shown(bytes))")
            }
            if let foundation = Self.foundationAccepts(bytes) {
                compared += 1
                failures.check(foundation == (parsed != nil), "JSONSerialization \(foundation ? "accepts" : "rejects") what JSONNode \(parsed != nil ? "accepts" : "rejects"): \(FuzzFailures.shown(bytes))")
            }
            if Self.checkEdit(bytes, read: contents, &rng, &failures) { tally["edited", default: 0] += 1 }
            if index % 100 == 0 {
                try Data(bytes).write(to: sandbox.preferencesURL)
                failures.check(try PreferencesFile(url: sandbox.preferencesURL).read() == contents, "file read differs: \(FuzzFailures.shown(bytes))")
            }
        }
        print("preferences fuzz: \(cases) damaged files: \(tally.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")); \(compared) compared with JSONSerialization")
        #expect(failures.count == 0, "\(failures.summary)")
    }
}
