// The user store's figures (9, 10, 11): each against a reference measured in the same process.
import Foundation
import GRDB
import Logging
import Reseed
import Synchronization

/// The user store every user store figure launches with: `note` rows pointing at the seed's `item`.
/// Two migrations, so an up-to-date launch has applied ones to skip.
func benchUserStore(references: Bool = false, userTables: [String] = []) throws -> Launcher.UserStore {
    var migrator = DatabaseMigrator()
    migrator.registerMigration("notes") { db in
        try db.execute(sql: "CREATE TABLE IF NOT EXISTS note (id INTEGER PRIMARY KEY, item_id INTEGER, body TEXT NOT NULL, created REAL NOT NULL)")
    }
    migrator.registerMigration("note-by-item") { db in
        try db.execute(sql: "CREATE INDEX IF NOT EXISTS note_by_item ON note (item_id)")
    }
    return Launcher.UserStore(
        name: "bench-user", migrator: migrator, userTables: userTables,
        references: references ? [try SeedReference("note.item_id", to: "item.id")] : [])
}

/// Adds `rows` notes (about 70 bytes each), pointing at the seed's one item, then truncates the WAL.
///
/// The truncation matters: `DatabasePool.close()` closes its writer first, and a read-only reader
/// connection, closing last, cannot checkpoint or delete the WAL (GRDB issue 739). The one big
/// transaction would leave a WAL as large as the store, whose frames every later open of the user
/// store reads to rebuild the WAL index: 30–50 ms at 1,000,000 rows, measured here as a 2× slower
/// install. An app's user store, written in small transactions, keeps its WAL near SQLite's
/// 1,000-page auto-checkpoint.
func addNotes(_ rows: Int, to pool: DatabasePool) throws {
    try pool.write { db in
        try db.execute(sql: """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
            INSERT INTO note (item_id, body, created) SELECT 1, printf('note %d, checked by the night shift', i), 1.7e9 + i FROM n
            """, arguments: [rows])
    }
    try pool.writeWithoutTransaction { _ = try $0.checkpoint(.truncate) }
}

/// The first query of figure 10, on both sides: a user row joined to its seed row (nil when there is no user row).
func joinedLabel(_ database: some DatabaseReader) throws -> String? {
    try database.read { try String.fetchOne($0, sql: "SELECT item.label FROM note JOIN item ON item.id = note.item_id LIMIT 1") }
}

/// ``joinedLabel(_:)``, which must find a row.
func readJoinedRow(_ database: some DatabaseReader) throws {
    guard try joinedLabel(database) != nil else { throw BenchmarkError(description: "no note joined to an item") }
}

/// Figure 9: the install and the replace with a user store of `rows` rows against the same with an
/// empty user store, in two data directories taken through the same seed versions in turn.
///
/// - `installFull`/`installEmpty`: `Launcher.launch()` when the bundled seed is the other version
///   (an install: lock, copy, verify, swap, record, open the user store with the seed attached,
///   migrator and checks), the median over rounds; the pool is closed outside the timing.
/// - `installFullCounting`: the same in a third directory with `rows` rows whose user store declares
///   a reference, so the install also counts the orphans (a scan of the user rows, by design): not
///   part of the figure, printed so its cost is known.
/// - `replaceFull`/`replaceEmpty`: `LiveStore.replace(with:)`'s `blockedFor` (the gate: checkpoint
///   and close of the user store's pool, swap, reopen), the median over rounds.
///
/// Every timed run starts with both user store and seeds read into the page cache and nothing dirty.
func userStoreSwap(seeds: [URL], work: URL, rows: Int, rounds: Int) async throws {
    var plain = Launcher.Configuration()
    plain.userStore = try benchUserStore()
    var counting = Launcher.Configuration()
    counting.userStore = try benchUserStore(references: true)
    let full = work.appendingPathComponent("user-full"), empty = work.appendingPathComponent("user-empty")
    let fullCounting = work.appendingPathComponent("user-full-counting")
    let configurations = [full: plain, empty: plain, fullCounting: counting]
    for (directory, configuration) in configurations {
        let (pool, _) = try Launcher(seed: seeds[0], dataDirectory: directory, configuration: configuration).launch()
        if directory != empty { try addNotes(rows, to: pool) }
        try pool.close()
    }
    let userFile = plain.userStore.map(\.fileName) ?? ""
    let seedFiles = try seeds.map { try Seed(at: $0).fileURL.path }
    func warm() throws {
        for path in seedFiles + [full, empty, fullCounting].map({ $0.appendingPathComponent(userFile).path }) { try startEven(reading: path) }
    }
    var installs: [URL: [Double]] = [full: [], empty: [], fullCounting: []]
    // Round 0 is not counted: it is the first install of the second version in either directory.
    for round in 0...rounds {
        let seed = seeds[(round + 1) % seeds.count]
        for directory in [full, empty, fullCounting] {
            try warm()
            let launcher = Launcher(seed: seed, dataDirectory: directory, configuration: configurations[directory] ?? plain)
            var opened: DatabasePool?
            let elapsed = try time {
                let (pool, outcome) = try launcher.launch()
                opened = pool
                guard outcome.action == .installed else { throw BenchmarkError(description: "the launch did not install: \(outcome.action)") }
            }
            try opened?.close()
            if round > 0 { installs[directory, default: []].append(elapsed) }
        }
    }
    // Both directories now hold the seed the last round installed; each replace installs the other one.
    let holding = (rounds + 1) % seeds.count
    let stores = [full: try await LiveStore(launcher: Launcher(seed: seeds[holding], dataDirectory: full, configuration: plain)),
                  empty: try await LiveStore(launcher: Launcher(seed: seeds[holding], dataDirectory: empty, configuration: plain))]
    let replacements = try seeds.map { try Seed(at: $0) }
    var blocked: [URL: [Double]] = [full: [], empty: []]
    for round in 0...rounds {
        let seed = replacements[(holding + round + 1) % replacements.count]
        for directory in [full, empty] {
            guard let store = stores[directory] else { continue }
            try warm()
            // The app has read through the pool: it holds open connections, as an app's does.
            _ = try await store.withDatabase { try joinedLabel($0) }
            let outcome = try await store.replace(with: seed)
            if round > 0 { blocked[directory, default: []].append(seconds(outcome.blockedFor)) }
        }
    }
    let each = { (values: [URL: [Double]]) in "{\"full\": \(values[full] ?? []), \"empty\": \(values[empty] ?? [])}" }
    print("{\"installFull\": \(median(installs[full] ?? [])), \"installEmpty\": \(median(installs[empty] ?? [])), "
        + "\"replaceFull\": \(median(blocked[full] ?? [])), \"replaceEmpty\": \(median(blocked[empty] ?? [])), "
        + "\"installFullCounting\": \(median(installs[fullCounting] ?? [])), "
        + "\"rows\": \(rows), \"rounds\": \(rounds), \"each\": {\"install\": \(each(installs)), \"replace\": \(each(blocked))}}")
}

/// Figure 10: an up-to-date launch with a user store (two migrations applied, one reference), then
/// one row joining a user row to the seed, then closing, versus a bare GRDB `DatabasePool` of the
/// user store whose `prepareDatabase` attaches the seed read-only with the launcher's URI, the same
/// row and closing.
func userStoreUpToDate(seed: URL, dataDirectory: URL, iterations: Int) throws {
    var configuration = Launcher.Configuration()
    configuration.userStore = try benchUserStore(references: true)
    let launcher = Launcher(seed: seed, dataDirectory: dataDirectory, configuration: configuration)
    let (first, outcome) = try launcher.launch()
    try addNotes(100, to: first)
    try first.close()
    guard let userPath = outcome.userStoreURL?.path else { throw BenchmarkError(description: "the launch opened no user store") }
    var bare = GRDB.Configuration()
    let uri = readOnlyURI(outcome.storeURL.path)
    bare.prepareDatabase { db in try db.execute(sql: "ATTACH DATABASE ? AS seed", arguments: [uri]) }
    var ours: [Double] = []
    var reference: [Double] = []
    for _ in 0..<iterations {
        ours.append(try time {
            let (pool, outcome) = try launcher.launch()
            guard outcome.action == .upToDate else { throw BenchmarkError(description: "the launch was not up to date: \(outcome.action)") }
            try readJoinedRow(pool)
            try pool.close()
        })
        reference.append(try time {
            let pool = try DatabasePool(path: userPath, configuration: bare)
            try readJoinedRow(pool)
            try pool.close()
        })
    }
    print("{\"ours\": \(median(ours)), \"reference\": \(median(reference)), \"iterations\": \(iterations)}")
}

/// The URI the launcher attaches the seed with: read-only and immutable.
func readOnlyURI(_ path: String) -> String {
    var allowed = CharacterSet.alphanumerics
    allowed.insert(charactersIn: "/-._~")
    return "file:" + (path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path) + "?mode=ro&immutable=1"
}

/// Figure 11, our side: the first launch with `userTables: ["note"]` on a data directory whose
/// single-file store holds a `note` table. `import` is the time from calling `launch()` to the
/// launcher's log line that the user store is in place (reading the manifest and preferences,
/// taking the lock, and the import: copy, count checks, fsync, rename); `launch` is the whole
/// launch, which then installs the seed over the old store and opens the user store.
func userTableImport(seed: URL, dataDirectory: URL) throws {
    let events = LogTimes()
    var configuration = Launcher.Configuration()
    configuration.userStore = Launcher.UserStore(name: "bench-user", userTables: ["note"])
    configuration.logger = Logger(label: "bench") { _ in TimingLogHandler(times: events) }
    try startEven(reading: dataDirectory.appendingPathComponent(try Seed(at: seed).manifest.storeFileName).path)
    let clock = ContinuousClock()
    let start = clock.now
    let (pool, outcome) = try Launcher(seed: seed, dataDirectory: dataDirectory, configuration: configuration).launch()
    let launched = clock.now
    try pool.close()
    guard let rows = outcome.importedTables["note"], rows > 0 else { throw BenchmarkError(description: "the launch imported no rows: \(outcome.importedTables)") }
    guard let imported = events.first("copied the user's tables into the user store") else {
        throw BenchmarkError(description: "the launcher did not log the import")
    }
    print("{\"import\": \(seconds(imported - start)), \"launch\": \(seconds(launched - start)), \"rows\": \(rows)}")
}

/// When each log message was first seen.
final class LogTimes: Sendable {
    private let seen = Mutex<[String: ContinuousClock.Instant]>([:])
    func record(_ message: String) {
        let now = ContinuousClock.now
        seen.withLock { if $0[message] == nil { $0[message] = now } }
    }
    func first(_ message: String) -> ContinuousClock.Instant? { seen.withLock { $0[message] } }
}

/// A log handler that only notes when each message arrives.
struct TimingLogHandler: LogHandler {
    let times: LogTimes
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    var logLevel: Logger.Level = .info

    func log(event: LogEvent) { times.record("\(event.message)") }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
}
