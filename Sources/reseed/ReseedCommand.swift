import ArgumentParser
import Foundation
import Logging
import Reseed
import ReseedPackaging
import ReseedSystem

/// `reseed`: ship versioned SQLite seeds and keep the app's store current.
@main
struct ReseedCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reseed",
        abstract: "Ship versioned SQLite seed databases and keep an app's store current.",
        discussion: """
            Defaults come from reseed.json in the current folder (see README.md), so in this \
            repository `reseed package` rebuilds the example and `reseed launch` installs it.
            """,
        subcommands: [Launch.self, Status.self, Init.self, Package.self, Verify.self, Diff.self, Keygen.self, Keys.self, Publish.self, Update.self])

    /// Parses and runs the command; every message, help text included, goes out through ``Terminal``,
    /// so a full disk or a closed pipe is an exit status and a line on stderr, never a crash.
    ///
    /// The command runs on the main actor, and this thread runs the main run loop, as an app's
    /// startup does: the launch happens on the thread the process started on. (An `async`
    /// `main` would park this thread on Linux and run the main actor on a libdispatch worker;
    /// the syscall fault suites count each thread's calls and rely on one thread doing the work.)
    static func main() {
        // A reader that went away is an EPIPE to report, not a signal that kills the process.
        // `signal` fails only for an invalid signal number.
        _ = signal(SIGPIPE, SIG_IGN)
        Task { @MainActor in
            Foundation.exit(await parseAndRun())
        }
        // Runs the main actor's jobs until the task above exits the process.
        RunLoop.main.run()
        Terminal.error("the main run loop stopped before the command finished")
        Foundation.exit(ExitCode.failure.rawValue)
    }

    /// Parses the arguments and runs the command they name; its exit status.
    @MainActor
    static func parseAndRun() async -> Int32 {
        do {
            var command = try await asyncParseAsRoot()
            // Help and the other commands ArgumentParser adds are not async.
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
            return ExitCode.success.rawValue
        } catch {
            return report(error)
        }
    }

    /// Writes what ArgumentParser has to say about `error` (help on stdout, a usage error on
    /// stderr) and returns the exit status.
    static func report(_ error: any Error) -> Int32 {
        let code = exitCode(for: error)
        let text = fullMessage(for: error)
        guard !text.isEmpty else { return code.rawValue }
        if code == .success {
            do throws(OutputError) {
                try Terminal.out(text)
            } catch {
                Terminal.error("\(error)")
                return ExitCode.failure.rawValue
            }
        } else {
            Terminal.diagnostic(text + "\n")
        }
        return code.rawValue
    }
}

/// Options every command that logs shares.
struct LoggingOptions: ParsableArguments {
    @Flag(name: .shortAndLong, help: "Log what Reseed decides and does on stderr.")
    var verbose = false

    /// A logger writing to stderr: warnings always, everything with --verbose.
    func logger(_ label: String) -> Logger {
        var logger = Logger(label: label) { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = verbose ? .debug : .warning
        return logger
    }
}

/// The longest time an option in seconds may give: about 31 years, far more than any wait needs,
/// and far less than a `Duration` of milliseconds holds.
let longestDuration: Double = 1_000_000_000

/// The `Duration` of `seconds` given for `option`.
///
/// - Throws: `ValidationError` for a value that is not a finite number from 0 (or more than 0) to
///   ``longestDuration``: NaN, infinity and huge values, which would trap in the conversion.
func duration(_ seconds: Double, of option: String, allowingZero: Bool = true) throws -> Duration {
    guard seconds.isFinite, allowingZero ? seconds >= 0 : seconds > 0, seconds <= longestDuration else {
        throw ValidationError("\(option) must be a number of seconds, \(allowingZero ? "from 0" : "more than 0") up to \(Int(longestDuration))")
    }
    return .milliseconds(Int64((seconds * 1000).rounded()))
}

/// The `Duration` of a validity such as `30d`, `12h`, `90m` or `4s` given for `option`: a whole number
/// from 1 followed by one unit, at most ``longestDuration`` seconds.
///
/// - Throws: `ValidationError` for anything else.
func validity(_ text: String, of option: String) throws -> Duration {
    let units: [Character: Int64] = ["d": 86_400, "h": 3_600, "m": 60, "s": 1]
    guard let unit = text.last.flatMap({ units[$0] }), let count = Int64(text.dropLast()), count > 0,
          count <= Int64(longestDuration) / unit else {
        throw ValidationError("\(option) must be a whole number and a unit, such as 30d, 12h, 90m or 4s (at most \(Int(longestDuration)) seconds)")
    }
    return .seconds(count * unit)
}

/// Runs a command body; any error becomes one sentence on stderr (see ``sentence(for:)``) and exit status 1.
@MainActor
func reportingErrors(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let exit as ExitCode {
        throw exit
    } catch let error as ValidationError {
        throw error
    } catch {
        Terminal.error(sentence(for: error))
        throw ExitCode.failure
    }
}

/// The line `reseed` prints for `error`: Reseed's own errors say it themselves; any other (a
/// Foundation or system error that reached the command) says what its `errno` or its text says,
/// never its debug description.
func sentence(for error: any Error) -> String {
    switch error {
    case let error as CustomStringConvertible where error is ReseedError || error is PackagingError
        || error is ConfigurationError || error is OutputError || error is FileSystemFailure:
        return error.description
    default:
        let errno = systemErrno(of: error)
        return ErrorSentence(location: nil, what: plainDescription(of: error) ?? "a file operation failed",
                             why: errno?.phrase, advice: errno?.advice).description
    }
}
