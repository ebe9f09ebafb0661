import Foundation
import Reseed
import ReseedSystem

extension SeedDiff {
    /// What the row-level delta between two seeds weighs, or why there is none (`reseed diff --delta-size`).
    ///
    /// ```swift
    /// // DeltaSize(bytes: 40960, tables: [TableCounts(name: "songs", deleted: 1, updated: 3, inserted: 2)], format: 1, notExpressible: nil)
    /// ```
    public struct DeltaSize: Sendable, Codable, Equatable {
        /// The size of the delta file in bytes (uncompressed); nil when no delta can be built.
        public var bytes: Int64?
        /// Its size gzip-compressed as `reseed publish` puts it on a channel: what an update downloads.
        public var compressedBytes: Int64?
        /// What it carries per changed table (rows, the whole table, a drop) and why; empty when no delta can be built.
        public var tables: [SeedDeltaBuilder.TableCounts]
        /// The indexes, views and triggers it drops or creates; empty when no delta can be built.
        public var schemaObjects: [SeedDeltaBuilder.SchemaObjectChange] = []
        /// Its format: 1 without schema changes, 2 with them, 3 with rows matched by content; nil when no delta can be built.
        public var format: Int?
        /// Why no delta can be built, such as a change to a virtual table of another module; nil when one can.
        public var notExpressible: String?

        /// The report's lines: `Row-level delta: 40960 bytes`, then one line per table and per schema object.
        func lines() -> [String] {
            guard let bytes else { return ["Row-level delta: none (\(notExpressible ?? "not expressible"))"] }
            let header = "Row-level delta: \(bytes) bytes" + (compressedBytes.map { ", \($0) \(Codecs.written.name)-compressed (on a channel)" } ?? "")
                + SeedDeltaBuilder.formatLabel(format: format, tables: tables, schemaObjects: schemaObjects)
            return [header] + SeedDeltaBuilder.contentLines(tables: tables, schemaObjects: schemaObjects)
        }
    }

    /// Builds the delta from `old` to `new` in a temporary folder, measures it and removes it.
    ///
    /// - Throws: ``PackagingError`` (step ``PackagingError/Step/buildDelta``) when a seed cannot be read or the temporary folder written
    ///   (see ``SeedDeltaBuilder/build(from:to:into:newContentHash:newIncrementalContentHash:)``); a change no delta can express is a result, not an error.
    public static func deltaSize(old: URL, new: URL) throws(PackagingError) -> DeltaSize {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("reseed-delta-\(UInt64.random(in: .min ... .max))", isDirectory: true)
        try packaging(.buildDelta, path: folder.path) { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false) }
        defer { try? FileManager.default.removeItem(at: folder) }
        let delta = folder.appendingPathComponent("seed.delta").path
        switch try SeedDeltaBuilder.build(from: old.path, to: new.path, into: delta) {
        case .built(let built):
            let codec = Codecs.written
            let compressedName = "seed.delta" + codec.fileSuffix
            let compressed = folder.appendingPathComponent(compressedName).path
            let written = try packaging(.buildDelta, path: compressed) { () throws -> Int64 in
                let source = try FileSystem.openRegularFile(delta)
                let target = try FileSystem().openDirectory(folder, create: false).createExclusive(compressedName)
                return try codec.compress(from: source, to: target).written
            }
            return DeltaSize(
                bytes: built.size, compressedBytes: written, tables: built.tables, schemaObjects: built.schemaObjects,
                format: built.format, notExpressible: nil)
        case .notExpressible(let reason): return DeltaSize(bytes: nil, compressedBytes: nil, tables: [], notExpressible: reason)
        }
    }
}
