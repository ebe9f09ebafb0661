/// How far an install has come, reported the same way by a launch (``Launcher/Configuration/progress``),
/// a channel update (``ChannelUpdater/Configuration/progress``) and a live replace
/// (``LiveStore/Event/progress(_:)``).
///
/// Within a ``step``, ``completed`` only grows and ends at ``total``:
/// - ``Step/download``: bytes of the seed, or of its delta, in the file (a resumed download starts
///   where the broken one stopped);
/// - ``Step/install``: a seed file's bytes copied (decompressed) beside the store, of its size; a
///   delta's copy of the installed store, its apply and its content hash on one scale whose total
///   is three times the installed store's size, each filling a third in turn (pages copied, rows
///   applied, rows hashed). Reported on the installing thread, every 1 MiB or 1,024 rows at most.
///
/// ```swift
/// configuration.progress = { progress in
///     logger.debug("\(progress.step): \(Int(progress.fraction * 100))%")
/// }
/// ```
public struct InstallProgress: Sendable, Hashable {
    /// What is being done.
    public enum Step: String, Sendable, Hashable, Codable {
        /// A channel's seed or delta downloading.
        case download
        /// The seed copied, decompressed, or made from a delta beside the store, and checked.
        case install
    }

    /// What is being done.
    public var step: Step
    /// How much of it is done, in the step's unit.
    public var completed: Int64
    /// How much there is to do; ``completed`` ends there.
    public var total: Int64

    /// `completed / total`, between 0 and 1 (1 for an empty total).
    public var fraction: Double {
        total > 0 ? Double(min(max(completed, 0), total)) / Double(total) : 1
    }

    public init(step: Step, completed: Int64, total: Int64) {
        self.step = step
        self.completed = completed
        self.total = total
    }
}

/// Where an install's progress goes: (completed, total) of one ``InstallProgress/Step``.
typealias ProgressReport = @Sendable (InstallProgress) -> Void
