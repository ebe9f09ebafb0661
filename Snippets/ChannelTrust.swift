// snippet.hide
// ChannelTrust.md, "The app".
import Foundation
import Reseed

let liveStore = try await LiveStore(launcher: Launcher(seed: URL(fileURLWithPath: "SeedData"), dataDirectory: URL(fileURLWithPath: "data")))
let channel = URL(fileURLWithPath: "/")
// snippet.show
var configuration = ChannelUpdater.Configuration()
configuration.clockSkew = .seconds(300)   // the default: a clock up to 5 minutes behind
let updater = ChannelUpdater(
    channel: channel,
    publicKeys: [
        try ChannelPublicKey(base64: "q8f1yR7n0TkM4gO1QbqR3y2Gv2p3sTq6f9p2k8W0a1E="),   // the root
        try ChannelPublicKey(base64: "3Vn0bq0Qm2c5oGkqT0lqfC9yS1y7mW8c4lq2ZpQe9nE="),   // a spare root, kept offline
    ],
    store: liveStore, configuration: configuration)
let outcome = try await updater.update()
if let removed = outcome.revokedKeyID {
    print("the release signed by \(removed) was replaced by \(outcome.version)")
}
