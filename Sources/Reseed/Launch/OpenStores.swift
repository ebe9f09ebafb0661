import Synchronization

/// The stores this process has open through Reseed.
///
/// POSIX advisory locks belong to the process and the inode: closing *any*
/// descriptor of a file drops every lock the process holds on it, including
/// SQLite's. So the launcher must not `open`/`close` a store file this process
/// already has open to read its header: it asks this table first.
enum OpenStores {
    private struct Entry {
        weak var store: (AnyObject & Sendable)?
    }

    private static let entries = Mutex<[String: [Entry]]>([:])

    /// Remembers that `store` (a pool or queue) has the file at `path` open, for as long as it lives.
    static func register(_ store: some AnyObject & Sendable, path: String) {
        entries.withLock { table in
            var live = (table[path] ?? []).filter { $0.store != nil }
            live.append(Entry(store: store))
            table[path] = live
        }
    }

    /// True while a registered store of `path` is alive.
    static func isOpen(_ path: String) -> Bool {
        entries.withLock { table in
            table[path]?.contains { $0.store != nil } ?? false
        }
    }
}
