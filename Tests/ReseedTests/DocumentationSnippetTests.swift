import Foundation
import Testing

/// The README's and the DocC articles' Swift examples are the visible parts of the files in
/// `Snippets/`, which `swift build` compiles: a block edited without its snippet, or a snippet
/// edited without its block, fails here.
@Suite struct DocumentationSnippetTests {
    /// The package root, three levels above this file (`Tests/ReseedTests/<file>`).
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func everySwiftBlockIsTheVisiblePartOfASnippet() throws {
        let snippets = try Self.snippets()
        let blocks = try Self.documents().flatMap { try CodeBlock.swiftBlocks(in: $0, root: Self.packageRoot) }
        #expect(blocks.contains { $0.document == "README.md" }, "no ```swift block found in README.md")
        for block in blocks where !snippets.contains(where: { $0.visibleLines == block.lines }) {
            Issue.record(Comment(rawValue: Self.mismatch(block, snippets: snippets)))
        }
    }

    @Test func everySnippetIsQuotedByTheDocumentation() throws {
        let blocks = try Self.documents().flatMap { try CodeBlock.swiftBlocks(in: $0, root: Self.packageRoot) }
        let orphans = try Self.snippets().filter { snippet in !blocks.contains { $0.lines == snippet.visibleLines } }
        #expect(orphans.map(\.path) == [], "snippets that no ```swift block of README.md or of a DocC article shows")
    }

    @Test func visiblePartDropsHiddenLinesMarkersAndTheExplanation() {
        let source = """
            // An explanation, which DocC shows as prose.

            // snippet.hide
            import Reseed
            func start() throws {
                // snippet.show
                let launcher = makeLauncher()
                    .configured()
                // snippet.hide
                try launcher.launch()
                // snippet.show
                print("done")
            // snippet.hide
            }
            """
        #expect(Snippet.visibleLines(of: source) == ["let launcher = makeLauncher()", "    .configured()", "print(\"done\")"])
    }

    // MARK: - Reading the documents and the snippets

    /// README.md and every article of the package's DocC catalogs.
    static func documents() throws -> [URL] {
        let sources = packageRoot.appending(path: "Sources")
        let catalogs = try FileManager.default.contentsOfDirectory(atPath: sources.path)
            .map { sources.appending(path: $0).appending(path: "Documentation.docc") }
            .filter { FileManager.default.fileExists(atPath: $0.path) }
        let articles = try catalogs.flatMap { catalog in
            try FileManager.default.contentsOfDirectory(atPath: catalog.path)
                .filter { $0.hasSuffix(".md") }
                .map { catalog.appending(path: $0) }
        }
        return [packageRoot.appending(path: "README.md")] + articles.sorted { $0.path < $1.path }
    }

    /// The `.swift` files in `Snippets/` and in its subfolders, one level down, as SwiftPM reads them.
    static func snippets() throws -> [Snippet] {
        let folder = packageRoot.appending(path: "Snippets")
        let names = try FileManager.default.subpathsOfDirectory(atPath: folder.path)
            .filter { $0.hasSuffix(".swift") && $0.split(separator: "/").count <= 2 }
        return try names.sorted().map { name in
            let source = try String(contentsOf: folder.appending(path: name), encoding: .utf8)
            return Snippet(path: "Snippets/" + name, visibleLines: Snippet.visibleLines(of: source))
        }
    }

    /// What a failure says: where the block is, how it starts, and the snippet closest to it.
    static func mismatch(_ block: CodeBlock, snippets: [Snippet]) -> String {
        let head = "\(block.document):\(block.line): the ```swift block starting `\(block.lines.first ?? "")`"
        let nearest = snippets.max { $0.sharedLines(with: block.lines) < $1.sharedLines(with: block.lines) }
        guard let nearest, nearest.sharedLines(with: block.lines) > 0 else {
            return head + " is not the visible part of any file in Snippets/: add one whose visible lines are the block"
        }
        let index = zip(block.lines, nearest.visibleLines).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            ?? min(block.lines.count, nearest.visibleLines.count)
        func line(_ lines: [String]) -> String { lines.indices.contains(index) ? "`\(lines[index])`" : "nothing" }
        return head + " differs from the visible part of \(nearest.path), the nearest snippet, first at its line \(index + 1):"
            + " the block has \(line(block.lines)), the snippet \(line(nearest.visibleLines))"
    }
}

/// A fenced ```swift block of a Markdown document, its lines as compared.
struct CodeBlock {
    /// The document's path from the package root.
    var document: String
    /// The line of the opening fence, counted from 1.
    var line: Int
    var lines: [String]

    static func swiftBlocks(in url: URL, root: URL) throws -> [CodeBlock] {
        let document = String(url.path.dropFirst(root.path.count + 1))
        var blocks: [CodeBlock] = []
        var open: CodeBlock?
        for (number, line) in try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let fence = line.trimmingCharacters(in: .whitespaces)
            if var block = open {
                if fence == "```" {
                    block.lines = Snippet.normalized(block.lines)
                    blocks.append(block)
                    open = nil
                } else {
                    block.lines.append(String(line))
                    open = block
                }
            } else if fence == "```swift" {
                open = CodeBlock(document: document, line: number + 1, lines: [])
            }
        }
        return blocks
    }
}

/// A file in `Snippets/` and what DocC shows of it.
struct Snippet {
    /// The path from the package root.
    var path: String
    var visibleLines: [String]

    /// The lines DocC presents, as swift-docc-plugin's snippet parser reads a file: the leading
    /// comment (the explanation, shown as prose) dropped, lines between `// snippet.hide` and
    /// `// snippet.show` dropped, the markers (and slice markers, `// snippet.NAME`, `// snippet.end`)
    /// dropped; then `normalized`.
    static func visibleLines(of source: String) -> [String] {
        var lines = source.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)[...]
            .drop { $0.allSatisfy(\.isWhitespace) }
        lines = lines.drop { isComment($0) && marker($0) == nil }
        var visible: [String] = []
        var isVisible = true
        for line in lines {
            switch marker(line) {
            case "show": isVisible = true
            case "hide": isVisible = false
            case .some: continue
            case nil: if isVisible { visible.append(line) }
            }
        }
        return normalized(visible)
    }

    /// Block and snippet alike: no trailing spaces, no blank first or last lines, the
    /// indentation all lines share removed.
    static func normalized(_ lines: [String]) -> [String] {
        let trimmed = lines.map { line in String(line.reversed().drop { $0.isWhitespace }.reversed()) }
        let content = trimmed.drop { $0.isEmpty }.reversed().drop { $0.isEmpty }.reversed()
        let indentation = content.filter { !$0.isEmpty }.map { $0.prefix { $0 == " " }.count }.min() ?? 0
        return content.map { String($0.dropFirst(indentation)) }
    }

    /// `show`, `hide`, `end` or a slice name for a `// snippet.…` line, nil for any other.
    static func marker(_ line: String) -> String? {
        let text = line.drop { $0.isWhitespace }
        guard text.hasPrefix("//") else { return nil }
        let comment = text.dropFirst(2).drop { $0.isWhitespace }
        guard comment.lowercased().hasPrefix("snippet.") else { return nil }
        let name = comment.dropFirst("snippet.".count).prefix { !$0.isWhitespace }.lowercased()
        return ["show", "hide", "end"].first { name.hasPrefix($0) } ?? name
    }

    static func isComment(_ line: String) -> Bool { line.drop { $0.isWhitespace }.hasPrefix("//") }

    /// How many of `lines` this snippet's visible part also has, for naming the nearest snippet;
    /// lines of punctuation alone (`}`) count for nothing.
    func sharedLines(with lines: [String]) -> Int {
        let own = Set(visibleLines)
        return lines.filter { line in own.contains(line) && line.contains { $0.isLetter || $0.isNumber } }.count
    }
}
