import Foundation
import Reseed
import ReseedPackaging

/// A sandbox's channel with trust: its root key and two channel keys, `keys.json` listing both
/// (each valid a day), and the app pinning the root.
public struct KeyedChannel {
    public let sandbox: ChannelSandbox
    public let root = ChannelPrivateKey()
    public let first = ChannelPrivateKey()
    public let second = ChannelPrivateKey()

    public init(_ sandbox: ChannelSandbox) throws {
        self.sandbox = sandbox
        try edit([.add(first.publicKey, expires: .now.addingTimeInterval(86_400)), .add(second.publicKey, expires: .now.addingTimeInterval(86_400))])
    }

    /// Applies `changes` to `keys.json`, signed by `root` (the channel's own by default).
    @discardableResult
    public func edit(_ changes: [ChannelKeysEditor.Change], root: ChannelPrivateKey? = nil) throws -> ChannelKeys {
        try ChannelKeysEditor(channel: sandbox.channel, rootKey: root ?? self.root).apply(changes)
    }

    /// An updater of the app shipping `bundled`, pinning the root, its clock at `now` when given.
    public func updater(_ bundled: Seed, now: (@Sendable () -> Date)? = nil,
                        adjust: (inout ChannelUpdater.Configuration) -> Void = { _ in }) -> ChannelUpdater {
        sandbox.updater(bundled, publicKey: root.publicKey, now: now, adjust: adjust)
    }

    /// Writes the root's public key file, as `reseed keygen` does, for `reseed update --public-key`.
    public func rootPublicKeyFile() throws -> URL {
        let file = sandbox.directory.appending("root.pub")
        try Data(ChannelKeyFile.Kind.publicKey.line(base64: root.publicKey.base64).utf8).write(to: file)
        return file
    }

    /// The channel's `keys.json`.
    public var keysFile: URL { sandbox.channel.appendingPathComponent(ChannelKeys.fileName) }
}
