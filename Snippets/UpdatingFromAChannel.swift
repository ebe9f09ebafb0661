// snippet.hide
// UpdatingFromAChannel.md, "Updating".
import Foundation
import Reseed

enum UpdateError: Error {
    case badChannelAddress
}

let liveStore = try await LiveStore(launcher: Launcher(seed: URL(fileURLWithPath: "SeedData"), dataDirectory: URL(fileURLWithPath: "data")))
// snippet.show
guard let channel = URL(string: "https://cdn.example.com/triage/") else {
    throw UpdateError.badChannelAddress
}
let updater = ChannelUpdater(
    channel: channel,
    publicKey: try ChannelPublicKey(base64: "q8f1yR7n0TkM4gO1QbqR3y2Gv2p3sTq6f9p2k8W0a1E="),
    store: liveStore)               // or launcher: when the store is not open
let outcome = try await updater.update()
// snippet.hide
print(outcome)
