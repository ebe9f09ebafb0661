import ReseedSystem

/// What an install or an update will write in the data directory before it frees anything, and
/// the check of that figure against the free space of the directory's filesystem.
///
/// Every figure counts what is new on the disk at the install's peak, just before the swap: the old
/// store is freed only when the new one is renamed over it, and a download only after the install.
/// - an install of a seed file (a launch, ``LiveStore/replace(with:)``, the install of a download):
///   the seed's database size (`manifest.size`, which a compressed seed decompresses to) for the
///   temp copy, plus ``margin``;
/// - an install from a delta: the installed store's size (its file and its `-wal`, both copied) for
///   the copy the delta is applied to, plus the decompressed delta's size again for what the apply
///   adds to that copy (it writes no journal, but the copy keeps the pages deleted rows free, and
///   the rows the delta adds take new pages), plus ``margin``;
/// - a full update, before its download: what is missing of the download (its size less what a
///   partial file from a broken try already holds), plus the install's figure;
/// - a delta update, before its download: what is missing of the delta's download, plus the delta's
///   size for its decompressed file (the compressed size stands for it until it is decompressed;
///   the install checks again with the real one), plus the delta install's figure.
///
/// The free space is `fstatvfs`'s `f_bavail * f_frsize`: what a process without root's reserve may write.
struct DiskSpace: Sendable, Hashable {
    /// What the install or update is, in the message: "install triage 2.0.0".
    var purpose: String
    /// Bytes it will write before it frees any.
    var needed: Int64

    /// The small writes beside the copy: the verify stage's write probe (its journal is in memory;
    /// the pages it touches stay in SQLite's cache), the preferences' temp copy, and the
    /// filesystem's rounding up to whole blocks. 1 MiB.
    static let margin: Int64 = 1 << 20

    /// An install of a seed file: its temp copy.
    static func install(seedSize: Int64) -> Int64 { seedSize + margin }

    /// An install from a delta of `deltaSize` decompressed bytes: the copy of the installed store
    /// (`installedSize`, see ``installedSize(of:in:)``) and what the apply adds to it.
    static func deltaInstall(installedSize: Int64, deltaSize: Int64) -> Int64 { installedSize + deltaSize + margin }

    /// What a delta's copy of the installed store `storeFileName` writes: its file and its `-wal`.
    static func installedSize(of storeFileName: String, in directory: Directory) throws(ReseedError) -> Int64 {
        try during(.checkSpace, path: directory.path(storeFileName)) {
            try [storeFileName, StoreLayout.wal(of: storeFileName)].reduce(Int64(0)) { total, name in try total + (directory.status(name)?.size ?? 0) }
        }
    }

    /// A full update: the rest of the download, then its install.
    static func fullUpdate(downloadSize: Int64, alreadyDownloaded: Int64, seedSize: Int64) -> Int64 {
        missing(downloadSize, alreadyDownloaded) + install(seedSize: seedSize)
    }

    /// A delta update: the rest of the delta's download, its decompressed file, then its install.
    static func deltaUpdate(deltaSize: Int64, alreadyDownloaded: Int64, installedSize: Int64) -> Int64 {
        missing(deltaSize, alreadyDownloaded) + deltaSize + deltaInstall(installedSize: installedSize, deltaSize: deltaSize)
    }

    private static func missing(_ size: Int64, _ have: Int64) -> Int64 { max(0, size - min(max(0, have), size)) }

    /// The failure to throw when `available` bytes are fewer than ``needed``; nil when they suffice.
    func shortfall(available: Int64, in directory: String) -> ReseedError? {
        guard available < needed else { return nil }
        let (need, free) = Self.sizes(needed, available)
        return ReseedError(.insufficientSpace, step: .checkSpace, path: directory,
                           message: "not enough free space to \(purpose): it needs \(need), \(free) \(available == 1 ? "is" : "are") free")
    }

    /// Measures the free space of `directory`'s filesystem and throws ``ReseedError/Code/insufficientSpace``
    /// when it is short. Nothing is written. A store an install replaced counts as freed (see ``ReplacedFile``).
    func check(in directory: Directory) throws(ReseedError) {
        ReplacedFile.waitForReleases()
        let available = try during(.checkSpace, path: directory.url.path) { try directory.availableBytes() }
        if let error = shortfall(available: available, in: directory.url.path) { throw error }
    }

    /// Both sizes as ``format(_:)`` writes them, or in bytes when they would read the same.
    static func sizes(_ a: Int64, _ b: Int64) -> (String, String) {
        let (x, y) = (format(a), format(b))
        return x == y ? ("\(a) bytes", "\(b) bytes") : (x, y)
    }

    /// A size in decimal units with one decimal, as a file manager shows it: "512 bytes", "1.5 kB",
    /// "41.9 MB", "2.0 GB".
    static func format(_ bytes: Int64) -> String {
        if bytes < 1000 { return bytes == 1 ? "1 byte" : "\(bytes) bytes" }
        var value = Double(bytes) / 1000
        for unit in ["kB", "MB", "GB", "TB"] {
            if value < 999.95 || unit == "TB" {
                let tenths = Int64((value * 10).rounded())
                return "\(tenths / 10).\(tenths % 10) \(unit)"
            }
            value /= 1000
        }
        return "\(bytes) bytes"
    }
}
