// Figure 16 in the app's process: what an update costs a device that runs it, without the start of a process.
import Foundation
import Logging
import Reseed

/// The bytes this process has caused to be written to storage so far (`write_bytes` of `/proc/self/io`).
private func bytesWritten() throws -> Int64 {
    let text = try String(contentsOfFile: "/proc/self/io", encoding: .utf8)
    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("write_bytes:") }),
          let value = Int64(line.dropFirst("write_bytes:".count).trimmingCharacters(in: .whitespaces)) else {
        throw BenchmarkError(description: "/proc/self/io has no write_bytes line")
    }
    return value
}

/// Drops the page cache (the files' clean pages; the pages this process has mapped stay), as a device
/// whose store and seed were not read since it started; false where the machine does not allow it.
private func dropPageCache() -> Bool {
    sync()
    guard let file = fopen("/proc/sys/vm/drop_caches", "w") else { return false }
    defer { fclose(file) }
    return fputs("3\n", file) >= 0 && fflush(file) == 0
}

/// Figure 16 measured where a device pays it: `ChannelUpdater.update()` inside this process, from
/// the delta channel and from the full one (two channels publishing the same two releases, the
/// second with `--deltas 0`), each into a fresh install of the first release with the user store
/// `userStore` (`-`: none, a single-file store), as `reseed launch` makes it. Each round runs both, in turns; the page
/// cache is warm (the store, the user store and the bundled seed read, nothing dirty) or, with
/// `cold`, dropped just before the update. The process's libraries stay loaded, as in an app.
///
/// Prints the medians as JSON: seconds and bytes written (`/proc/self/io`) of each, and each round's
/// seconds. With `RESEED_BENCH_LOG` set, the launcher's log (debug level) goes to stderr.
func channelUpdate(seed: URL, deltaChannel: URL, fullChannel: URL, publicKey: URL, userStore: String,
                   work: URL, rounds: Int, cold: Bool) async throws {
    var launch = Launcher.Configuration()
    // "-": a single-file store.
    launch.userStore = userStore == "-" ? nil : Launcher.UserStore(name: userStore)
    if ProcessInfo.processInfo.environment["RESEED_BENCH_LOG"] != nil {
        launch.logger = Logger(label: "reseed") { StreamLogHandler.standardError(label: $0) }
        launch.logger.logLevel = .debug
    }
    let key = try ChannelPublicKey(contentsOf: publicKey)
    let seedFile = try Seed(at: seed).fileURL.path
    var times: [ChannelUpdater.Method: [Double]] = [:], written: [ChannelUpdater.Method: [Int64]] = [:]
    for round in 0..<rounds {
        let channels: [(ChannelUpdater.Method, URL)] = [(.delta, deltaChannel), (.full, fullChannel)]
        for (method, channel) in round % 2 == 0 ? channels : channels.reversed() {
            let device = work.appendingPathComponent("device-\(method)")
            try? FileManager.default.removeItem(at: device)
            let launcher = Launcher(seed: seed, dataDirectory: device, configuration: launch)
            try launcher.launch().database.close()
            if cold {
                guard dropPageCache() else { throw BenchmarkError(description: "the page cache cannot be dropped here") }
            } else {
                for name in try FileManager.default.contentsOfDirectory(atPath: device.path) {
                    try startEven(reading: device.appendingPathComponent(name).path)
                }
                try startEven(reading: seedFile)
            }
            let before = try bytesWritten()
            let clock = ContinuousClock(), start = clock.now
            let outcome = try await ChannelUpdater(channel: channel, publicKeys: [key], launcher: launcher).update()
            let elapsed = clock.now - start
            guard outcome.method == method else {
                throw BenchmarkError(description: "expected an update by \(method), got \(outcome.action) by \(outcome.method.map { "\($0)" } ?? "no method")")
            }
            times[method, default: []].append(seconds(elapsed))
            written[method, default: []].append(try bytesWritten() - before)
        }
    }
    print("{\"delta\": \(median(times[.delta] ?? [])), \"full\": \(median(times[.full] ?? [])), "
        + "\"deltaWritten\": \(middle(written[.delta] ?? []) ?? -1), \"fullWritten\": \(middle(written[.full] ?? []) ?? -1), "
        + "\"each\": {\"delta\": \(times[.delta] ?? []), \"full\": \(times[.full] ?? [])}}")
}
