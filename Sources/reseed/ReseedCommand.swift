import ArgumentParser
import Foundation
import Logging
import Synchronization

/// `reseed`: ship versioned SQLite seeds and keep the app's store current.
@main
struct ReseedCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reseed",
        abstract: "Ship versioned SQLite seed databases and keep an app's store current.",
        discussion: """
            Defaults come from reseed.json in the current folder (see README.md), so in this \
            repository `reseed package` rebuilds the example and `reseed launch` installs it.
            """,
        subcommands: [Launch.self, Status.self, Package.self, Verify.self, Diff.self, Keygen.self, Publish.self, Update.self])
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

/// Runs a command body; any error becomes one line on stderr and exit status 1.
func reportingErrors(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let exit as ExitCode {
        throw exit
    } catch let error as ValidationError {
        throw error
    } catch {
        Terminal.error("\(error)")
        throw ExitCode.failure
    }
}

/// Runs async work from a command and waits for it on this thread.
///
/// The commands run on the main thread, synchronously (so the launch happens on the thread the
/// process started on, as an app's startup does); only the channel update is async.
func waitFor<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
    let done = DispatchSemaphore(value: 0)
    let box = Mutex<Result<T, any Error>?>(nil)
    Task {
        let result: Result<T, any Error>
        do { result = .success(try await work()) } catch { result = .failure(error) }
        box.withLock { $0 = result }
        done.signal()
    }
    done.wait()
    guard let result = box.withLock({ $0 }) else { preconditionFailure("the task signalled without a result") }
    return try result.get()
}

/// The process's standard streams.
enum Terminal {
    static func out(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func error(_ line: String) {
        FileHandle.standardError.write(Data(("reseed: " + line + "\n").utf8))
    }

    static var stderrIsTerminal: Bool { isatty(2) == 1 }
}
