import Crypto
import Foundation
import GRDB
import GRDBSQLite
import ReseedSystem

/// The SHA-256 of a seed's logical content: its schema and every table's rows, independent of
/// page layout, page size, free pages, text encoding and the SQLite version that wrote the file.
///
/// Two seeds with the same content hash hold the same schema and the same rows, value for value
/// and type for type; `VACUUM`, `VACUUM INTO`, another page size or the same rows inserted in
/// another order (in a table with a primary key) leave it unchanged. `reseed package` writes it
/// into the manifest (``SeedManifest/contentHash``) and `reseed verify` checks it. The encoding
/// it hashes is specified in <doc:ContentHash>; a version never changes meaning.
///
/// The tables are read one row at a time through a cursor, so memory stays flat whatever their size.
///
/// ```swift
/// let hash = try SeedContentHash.compute(path: "SeedData/triage.sqlite") // 64 lowercase hex digits
/// ```
public enum SeedContentHash {
    /// The newest version of the canonical encoding, the first thing hashed after its name
    /// (`reseed-content-hash 2`). A database without an FTS or R-tree table hashes as version 1,
    /// which version 2 extends: such tables are read through their module, not their shadow tables.
    public static let encodingVersion = 2

    /// Hashes the content of the database file at `path`, opened read-only.
    ///
    /// - Throws: ``ReseedError`` (step ``ReseedError/Step/verify``) when the file cannot be opened
    ///   or read as a SQLite database, or a table cannot be read (an FTS or R-tree table is read
    ///   through its module, see <doc:ContentHash>).
    public static func compute(path: String) throws(ReseedError) -> String {
        try reading(path) { db in try compute(db: db) }
    }

    /// Runs `body` in a read transaction of the database file at `path`, opened read-only.
    private static func reading<T>(_ path: String, _ body: (Database) throws -> T) throws(ReseedError) -> T {
        try during(.verify, path: path) {
            var configuration = Configuration()
            configuration.readonly = true
            configuration.label = "reseed.contentHash"
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            defer { try? queue.close() }
            return try queue.read(body)
        }
    }

    /// Hashes the content of the `main` database of `db`, in a read transaction of its own
    /// when none is open (so every table is read from one snapshot).
    ///
    /// - Throws: GRDB's `DatabaseError` when SQLite fails to read the schema or a table.
    public static func compute(db: Database) throws -> String {
        try compute(db: db, progress: nil)
    }

    /// Hashes as ``compute(db:)`` does, calling `progress` with (rows hashed, rows in all content
    /// tables): after every ``rowsPerProgress`` rows and at the end of each table, so the last call
    /// has the total. The rows are counted first, only when `progress` is given; the hash is the same.
    static func compute(db: Database, progress: ((_ hashed: Int64, _ total: Int64) -> Void)?) throws -> String {
        try compute(db: db, progress: progress, rowSet: nil)
    }

    /// The content hash and the ``IncrementalContentHash`` of the database file at `path` in one
    /// pass over its rows (what `reseed package` records).
    ///
    /// - Throws: ``ReseedError`` (step ``ReseedError/Step/verify``) as ``compute(path:)``.
    public static func computeWithIncremental(path: String) throws(ReseedError) -> (contentHash: String, incremental: IncrementalContentHash) {
        try reading(path) { db in
            let rowSet = ConcurrentRowSet()
            let contentHash = try compute(db: db, progress: nil, rowSet: rowSet)
            return (contentHash, try IncrementalContentHash(db: db, rowSet: rowSet.finish()))
        }
    }

    private static func compute(db: Database, progress: ((Int64, Int64) -> Void)?, rowSet: ConcurrentRowSet?) throws -> String {
        var hasher = ContentHasher()
        if db.isInsideTransaction {
            try hash(db, into: &hasher, progress: progress, rowSet: rowSet)
        } else {
            try db.inTransaction(.deferred) {
                try hash(db, into: &hasher, progress: progress, rowSet: rowSet)
                return .commit
            }
        }
        return hasher.finalize()
    }

    /// How many rows are hashed between two calls of a progress closure: a power of two, so the
    /// hot loop tests a mask.
    static let rowsPerProgress: Int64 = 1 << 10

    /// One entry of `sqlite_schema`.
    package struct SchemaObject: Equatable {
        package var type: String
        package var name: String
        var table: String
        var sql: String?
    }

    private static func hash(
        _ db: Database, into hasher: inout ContentHasher, progress: ((Int64, Int64) -> Void)?, rowSet: ConcurrentRowSet?
    ) throws {
        let content = try ContentTables.read(db)
        hasher.text(Array("reseed-content-hash".utf8))
        // Version 2 reads FTS and R-tree tables through their module (see `ContentTables`); a
        // database without one hashes as version 1 always did, so installed devices keep their deltas.
        hasher.integer(content.readsVirtualTables ? 2 : 1)
        hasher.integer(try Int64.fetchOne(db, sql: "PRAGMA main.user_version") ?? 0)
        hasher.integer(try Int64.fetchOne(db, sql: "PRAGMA main.application_id") ?? 0)

        hashSchema(try schema(db, layout: content.layout), into: &hasher)

        // In the order of the names, as version 1 hashed its tables.
        let tables = content.tables.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
        var counter: RowCounter?
        if let progress {
            var total: Int64 = 0
            for table in tables {
                total += try Int64.fetchOne(db, sql: "SELECT count(*) FROM main.\(table.name.quotedIdentifier)") ?? 0
            }
            counter = RowCounter(total: total, report: progress)
        }
        for table in tables {
            try hashRows(of: table.name, withoutRowid: table.withoutRowid, db, into: &hasher, counter: &counter, rowSet: rowSet)
        }
    }

    /// The schema objects as the encoding lists them: their count, then each one's type, name, table and SQL.
    static func hashSchema(_ objects: [SchemaObject], into hasher: inout ContentHasher) {
        hasher.integer(Int64(objects.count))
        for object in objects {
            hasher.text(Array(object.type.utf8))
            hasher.text(Array(object.name.utf8))
            hasher.text(Array(object.table.utf8))
            if let sql = object.sql { hasher.text(Array(sql.utf8)) } else { hasher.null() }
        }
    }

    /// Rows hashed so far, against the rows counted before hashing.
    private struct RowCounter {
        var total: Int64
        var report: (Int64, Int64) -> Void
        var hashed: Int64 = 0

        mutating func row() {
            hashed += 1
            if hashed & (SeedContentHash.rowsPerProgress - 1) == 0 { reportNow() }
        }

        /// Reported whatever the count (at the end of a table), never past the total.
        func reportNow() { report(min(hashed, total), total) }
    }

    /// The schema objects that are content: every table, index, view and trigger of the database
    /// `schemaName` (`main` unless said) but SQLite's own (`sqlite_*`) and the shadow tables that
    /// are a virtual table's index layout (``ContentTables/layout``), sorted by the UTF-8 bytes of their names.
    package static func schema(_ db: Database, in schemaName: String = "main") throws -> [SchemaObject] {
        try schema(db, in: schemaName, layout: ContentTables.read(in: schemaName, db).layout)
    }

    static func schema(_ db: Database, in schemaName: String = "main", layout: Set<String>) throws -> [SchemaObject] {
        try Row.fetchAll(db, sql: "SELECT type, name, tbl_name, sql FROM \(schemaName.quotedIdentifier).sqlite_schema")
            .map { SchemaObject(type: $0["type"] ?? "", name: $0["name"] ?? "", table: $0["tbl_name"] ?? "", sql: $0["sql"]) }
            .filter { !$0.name.lowercased().hasPrefix("sqlite_") && !layout.contains($0.table.lowercased()) }
            .sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    }

    /// One table: its name, whether rows carry their rowid, its column count, then each row, then an end mark.
    /// With `rowSet`, each row is also added to the incremental content hash's row set.
    /// The SHA-256 of what table `table` feeds the content hash (its name, whether its rows carry
    /// their rowid, its column count and its rows, encoded as the hashes encode them): equal before
    /// and after a change exactly when the table adds the same to both content hashes.
    static func tableDigest(_ table: String, withoutRowid: Bool, _ db: Database) throws -> String {
        var hasher = ContentHasher()
        var counter: RowCounter?
        try hashRows(of: table, withoutRowid: withoutRowid, db, into: &hasher, counter: &counter, rowSet: nil)
        return hasher.finalize()
    }

    private static func hashRows(
        of table: String, withoutRowid: Bool, _ db: Database, into hasher: inout ContentHasher,
        counter: inout RowCounter?, rowSet: ConcurrentRowSet?
    ) throws {
        let rows = try TableRows(table, withoutRowid: withoutRowid, db)
        hasher.text(Array(table.utf8))
        hasher.integer(rows.hashesRowid ? 1 : 0)
        hasher.integer(Int64(rows.columnCount))
        // With a row set, each row is encoded once, for the stream and for its element (see `ConcurrentRowSet`).
        let elementPrefix = rowSet == nil ? [] : RowEncoding.elementPrefix(of: rows)
        var encoding = RowEncoding()
        try rows.forEachRow(rows.selectAll, db) { raw, count in
            if let rowSet, encoding.encode(raw, count) {
                encoding.bytes.withUnsafeBytes { row in
                    hasher.encoded(row)
                    rowSet.add(encoded: row, elementPrefix: elementPrefix)
                }
            } else {
                hasher.mark(.row)
                for index in 0..<count { hasher.value(raw, index) }
                rowSet?.add(raw, count, of: rows)
            }
            counter?.row()
        }
        hasher.mark(.endOfTable)
        counter?.reportNow()
    }
}

/// How the content hashes read one table's rows (see <doc:ContentHash>): its stored columns in
/// column order, preceded by the rowid when it is the rows' only identity, in key order.
struct TableRows {
    /// The table's name, unquoted.
    var table: String
    /// Its UTF-8 bytes, which every row's element starts with (see ``RowElement``).
    var tableBytes: [UInt8]
    /// The table has no primary key: its rowid is the rows' identity, and is hashed.
    var hashesRowid: Bool
    /// The stored, not generated, columns.
    var columnCount: Int
    /// What each row is read as: the rowid when hashed, then the stored columns, quoted.
    var selected: [String]
    /// `ORDER BY` of the canonical order.
    var order: String

    /// Reads the columns of `table` in the `main` database.
    ///
    /// - Throws: the `DatabaseError` of reading them, or one naming a table with no primary key
    ///   whose columns hide the rowid.
    init(_ table: String, withoutRowid: Bool, _ db: Database) throws {
        switch try SeedDelta.TableShape.read(table, withoutRowid: withoutRowid, in: "main", db) {
        case .success(let shape): self.init(shape)
        case .failure(let failure): throw DatabaseError(resultCode: .SQLITE_ERROR, message: failure.reason)
        }
    }

    /// The rows of the table `shape` describes (read from the `main` database).
    init(_ shape: SeedDelta.TableShape) {
        table = shape.name
        tableBytes = Array(shape.name.utf8)
        // Without a primary key, the rowid is the row's identity (as `reseed diff` matches rows) and is hashed.
        hashesRowid = shape.keyIsRowid
        // Generated columns (hidden 2 and 3) are computed from the schema, which is hashed already.
        columnCount = shape.columns.count
        let declaredKey = shape.keyIsRowid ? [] : shape.key.map(\.quotedIdentifier)
        // With a key, the rowid only orders rows whose key is NULL, which a rowid table allows.
        order = (declaredKey + (shape.rowidAlias.map { [$0] } ?? [])).joined(separator: ", ")
        selected = (hashesRowid ? shape.key : []) + shape.columns.map(\.quotedIdentifier)
    }

    private var columnList: String { selected.isEmpty ? "NULL" : selected.joined(separator: ", ") }

    /// Every row, in the canonical order.
    var selectAll: String { "SELECT \(columnList) FROM main.\(table.quotedIdentifier) ORDER BY \(order)" }

    /// The rows `predicate` (an SQL expression over the table's columns) selects, in no particular order.
    func select(where predicate: String) -> String {
        "SELECT \(columnList) FROM main.\(table.quotedIdentifier) WHERE \(predicate)"
    }

    /// Steps `sql` (a select of this table's ``selected`` columns), calling `body` with the raw
    /// statement and its column count for each row; returns the rows stepped.
    ///
    /// - Throws: the `DatabaseError` of a step, or what `body` throws.
    @discardableResult
    func forEachRow(_ sql: String, _ db: Database, _ body: (OpaquePointer, Int32) throws -> Void) throws -> Int64 {
        let statement = try db.makeStatement(sql: sql)
        let raw = statement.sqliteStatement
        defer { sqlite3_reset(raw) }
        let count = Int32(selected.count)
        var rows: Int64 = 0
        while true {
            let code = sqlite3_step(raw)
            if code == SQLITE_DONE { return rows }
            guard code == SQLITE_ROW else {
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)), sql: sql)
            }
            try body(raw, count)
            rows += 1
        }
    }
}

/// The canonical encoding of ``SeedContentHash``, fed to SHA-256 through a 64 KiB buffer.
struct ContentHasher {
    /// The one-byte tags that start each item; together with the length prefixes they make the encoding prefix-free.
    enum Tag: UInt8 {
        case null = 0x00, integer = 0x01, real = 0x02, text = 0x03, blob = 0x04
        case row = 0x52, endOfTable = 0x45
    }

    private var sha = SHA256()
    private var buffer: [UInt8] = []
    static let flushSize = 1 << 16

    init(capacity: Int = ContentHasher.flushSize + 64) {
        buffer.reserveCapacity(capacity)
    }

    /// Starts a new stream, keeping the buffer's memory: one hasher hashes row after row.
    mutating func reset() {
        sha = SHA256()
        buffer.removeAll(keepingCapacity: true)
    }

    mutating func mark(_ tag: Tag) {
        buffer.append(tag.rawValue)
        flushIfFull()
    }

    mutating func null() { mark(.null) }

    mutating func integer(_ value: Int64) {
        Self.appendInteger(value, to: &buffer)
        flushIfFull()
    }

    /// Appends `value` to `bytes` in the canonical encoding.
    static func appendInteger(_ value: Int64, to bytes: inout [UInt8]) {
        bytes.append(Tag.integer.rawValue)
        appendBigEndian(UInt64(bitPattern: value), to: &bytes)
    }

    /// Appends `text` to `bytes` in the canonical encoding.
    static func appendText(_ text: [UInt8], to bytes: inout [UInt8]) {
        _ = text.withUnsafeBytes { appendTagged(.text, $0, to: &bytes, inlineUpTo: .max) }
    }

    mutating func real(_ value: Double) {
        buffer.append(Tag.real.rawValue)
        appendBigEndian(value.bitPattern)
        flushIfFull()
    }

    mutating func text(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { append(.text, UnsafeRawBufferPointer($0)) }
    }

    mutating func blob(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { append(.blob, UnsafeRawBufferPointer($0)) }
    }

    /// Column `index` of the current row of `statement`, as its storage class says.
    mutating func value(_ statement: OpaquePointer, _ index: Int32) {
        hash(after: Self.appendValue(statement, index, to: &buffer, inlineUpTo: Self.flushSize))
    }

    /// Bytes already in the canonical encoding (a row's, see ``RowEncoding``), hashed as they are.
    mutating func encoded(_ bytes: UnsafeRawBufferPointer) {
        buffer.append(contentsOf: bytes)
        flushIfFull()
    }

    /// Appends column `index` of the current row of `statement` to `bytes` in the canonical
    /// encoding; a text or blob longer than `limit` bytes gets only its tag and length, and its
    /// bytes are returned for the caller to hash next (nil otherwise).
    static func appendValue(
        _ statement: OpaquePointer, _ index: Int32, to bytes: inout [UInt8], inlineUpTo limit: Int
    ) -> UnsafeRawBufferPointer? {
        let tag: Tag
        let pointer: UnsafeRawPointer?
        switch sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER:
            appendInteger(sqlite3_column_int64(statement, index), to: &bytes)
            return nil
        case SQLITE_FLOAT:
            bytes.append(Tag.real.rawValue)
            appendBigEndian(sqlite3_column_double(statement, index).bitPattern, to: &bytes)
            return nil
        case SQLITE_TEXT:
            // As UTF-8 whatever the database's encoding; the bytes as stored, never repaired.
            (tag, pointer) = (.text, UnsafeRawPointer(sqlite3_column_text(statement, index)))
        case SQLITE_BLOB:
            (tag, pointer) = (.blob, sqlite3_column_blob(statement, index))
        default:
            bytes.append(Tag.null.rawValue)
            return nil
        }
        let count = pointer == nil ? 0 : Int(sqlite3_column_bytes(statement, index))
        return appendTagged(tag, UnsafeRawBufferPointer(start: pointer, count: count), to: &bytes, inlineUpTo: limit)
    }

    /// Appends `tag`, the length of `value` and, when it is at most `limit` bytes, `value` itself to
    /// `bytes`; a longer value is returned for the caller to hash next (nil otherwise).
    private static func appendTagged(
        _ tag: Tag, _ value: UnsafeRawBufferPointer, to bytes: inout [UInt8], inlineUpTo limit: Int
    ) -> UnsafeRawBufferPointer? {
        bytes.append(tag.rawValue)
        appendBigEndian(UInt64(value.count), to: &bytes)
        guard value.count <= limit else { return value }
        bytes.append(contentsOf: value)
        return nil
    }

    private mutating func append(_ tag: Tag, _ bytes: UnsafeRawBufferPointer) {
        hash(after: Self.appendTagged(tag, bytes, to: &buffer, inlineUpTo: Self.flushSize))
    }

    /// After a value was appended to the buffer: hashes the buffer and then `large`, the value's bytes
    /// left out of it, or only flushes a full buffer when nothing was left out.
    private mutating func hash(after large: UnsafeRawBufferPointer?) {
        guard let large else { return flushIfFull() }
        sha.update(data: buffer)
        buffer.removeAll(keepingCapacity: true)
        sha.update(bufferPointer: large)
    }

    private mutating func appendBigEndian(_ value: UInt64) {
        Self.appendBigEndian(value, to: &buffer)
    }

    private static func appendBigEndian(_ value: UInt64, to bytes: inout [UInt8]) {
        var bits = value.bigEndian
        withUnsafeBytes(of: &bits) { bytes.append(contentsOf: $0) }
    }

    private mutating func flushIfFull() {
        if buffer.count >= Self.flushSize {
            sha.update(data: buffer)
            buffer.removeAll(keepingCapacity: true)
        }
    }

    /// The digest as 64 lowercase hex digits.
    mutating func finalize() -> String {
        digest().hexString
    }

    /// The digest; the hasher then needs ``reset()`` before hashing again.
    mutating func digest() -> SHA256.Digest {
        sha.update(data: buffer)
        buffer.removeAll(keepingCapacity: true)
        return sha.finalize()
    }
}
