// snippet.hide
// README.md, "Updates between releases".
import Foundation
import Reseed

let channelURL = URL(fileURLWithPath: "/srv/channel/triage")
let publicKeyLine = "q8f1yR7n0TkM4gO1QbqR3y2Gv2p3sTq6f9p2k8W0a1E="
let store = try await LiveStore(launcher: Launcher(seed: URL(fileURLWithPath: "SeedData"), dataDirectory: URL(fileURLWithPath: "data")))
// snippet.show
let updater = ChannelUpdater(channel: channelURL, publicKey: try ChannelPublicKey(base64: publicKeyLine), store: store)
let outcome = try await updater.update()   // .updated or .upToDate; one 304 when nothing changed
// snippet.hide
print(outcome)
