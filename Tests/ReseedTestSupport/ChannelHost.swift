import Foundation
import Reseed

/// What serves a test's channel folder to an updater: ``ChannelServer`` over loopback HTTP, or a
/// channel held in memory that the updater reaches through its transport (no socket, no server).
///
/// Both log each request, before answering, and take the switches `channel_server.py` documents
/// (a cut body, an error status, a range answered otherwise, validators of a host without `ETag`);
/// a host that cannot play a switch refuses it, so a test never passes against one it did not get.
public protocol ChannelHost: AnyObject {
    /// The channel's URL, with a final slash.
    var url: URL { get }
    /// Replaces the switches; `[:]` for none.
    func set(_ control: [String: Any]) throws
    /// The requests received so far, in order.
    func requests() throws -> [ChannelRequest]
    /// The body bytes sent for each finished response to `path`, waiting up to `timeout` for at least one.
    func bodyBytesSent(to path: String, timeout: Duration) throws -> [Int]
    /// Stops answering: a later request cannot connect.
    func stop()
    /// Points an updater's configuration at this host.
    func configure(_ configuration: inout ChannelUpdater.Configuration)
}

extension ChannelHost {
    /// The body bytes sent for each finished response to `path`, waiting up to 20 seconds for at least one.
    public func bodyBytesSent(to path: String) throws -> [Int] {
        try bodyBytesSent(to: path, timeout: .seconds(20))
    }
}

/// One request as a channel host logged it, before answering.
public struct ChannelRequest: Equatable, Sendable {
    public var method: String
    public var path: String
    public var range: String?
    public var ifRange: String?
    public var ifNoneMatch: String?
    public var ifModifiedSince: String?
    /// The status it was answered with; nil when it never was (a hang).
    public var status: Int?

    public init(method: String, path: String, range: String?, ifRange: String?, ifNoneMatch: String?, ifModifiedSince: String?, status: Int?) {
        self.method = method
        self.path = path
        self.range = range
        self.ifRange = ifRange
        self.ifNoneMatch = ifNoneMatch
        self.ifModifiedSince = ifModifiedSince
        self.status = status
    }
}
