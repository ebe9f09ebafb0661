import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ReseedSystem
import Synchronization

/// A channel manifest whose signature verified, with the validators of the response that carried it.
struct SignedManifest: Sendable {
    var manifest: ChannelManifest
    /// `channel.json`'s URL.
    var url: URL
    var etag: String?
    var lastModified: String?
}

/// What the preferences keep of the last check of a channel, under the store's entry:
/// `"channel": {"url": …, "etag": …, "lastModified": …, "version": …}`.
///
/// They are sent back (`If-None-Match`, `If-Modified-Since`) only while the store still holds
/// `version` from that same `url`: after any other change of the store (a bundled seed
/// installed, a store repaired) the manifest is fetched whole again. `Last-Modified` is kept
/// only when it is a strong validator (``HTTPTransfer/Response/strongLastModified``): a
/// `channel.json` published twice within one second has the same date both times, and a
/// host without `ETag` would answer the second check `304` for good.
struct ChannelValidators: Sendable, Equatable {

    var url: String
    var etag: String?
    var lastModified: String?
    /// The version the channel offered, which the store held once that check was done.
    var version: String

    init(url: String, etag: String?, lastModified: String?, version: String) {
        self.url = url
        self.etag = etag
        self.lastModified = lastModified
        self.version = version
    }

    /// Reads them from the `"channel"` object of a store's preferences entry; nil when malformed.
    init?(node: JSONNode) {
        guard let url = node["url"]?.string, let version = node["version"]?.string else { return nil }
        self.init(url: url, etag: node["etag"]?.string, lastModified: node["lastModified"]?.string, version: version)
    }

    /// The object as JSON text, absent validators left out.
    var json: String {
        var members = [("url", url)]
        if let etag { members.append(("etag", etag)) }
        if let lastModified { members.append(("lastModified", lastModified)) }
        members.append(("version", version))
        return "{" + members.map { JSONNode.quote($0.0) + ": " + JSONNode.quote($0.1) }.joined(separator: ", ") + "}"
    }
}

extension ChannelUpdater {
    /// The largest signature file read: a base64 Ed25519 signature is 88 characters.
    static let maximumSignatureSize = 1024

    /// Fetches `channel.json` (conditionally, when `conditional` is given) and its signature, and
    /// verifies them; a pair that does not verify is fetched once more, unconditionally, since a
    /// publish replaces the signature just before the manifest.
    ///
    /// - Returns: nil when the channel answered `304 Not Modified`.
    func fetchSignedManifest(conditional: ChannelValidators?) async throws(ReseedError) -> SignedManifest? {
        for attempt in 1...2 {
            guard let pair = try await fetchPair(conditional: attempt == 1 ? conditional : nil) else { return nil }
            if verifies(pair.signature, pair.manifest) {
                let manifest = try ChannelManifest.decode(pair.manifest, source: pair.url.absoluteString)
                return SignedManifest(manifest: manifest, url: pair.url, etag: pair.etag, lastModified: pair.lastModified)
            }
        }
        let manifestURL = channelURL.appendingPathComponent(ChannelManifest.fileName)
        throw ReseedError(.signature, step: .checkSignature, url: manifestURL, message:
            "\(ChannelManifest.signatureFileName) is not a signature of \(ChannelManifest.fileName) by the app's public key (read twice): the manifest or its signature was changed, or another key signed it")
    }

    private struct Pair {
        var manifest: [UInt8]
        var signature: [UInt8]
        var url: URL
        var etag: String?
        var lastModified: String?
    }

    private func fetchPair(conditional: ChannelValidators?) async throws(ReseedError) -> Pair? {
        let transfer = configuration.transfer(deadline: configuration.manifestDeadline)
        let manifestURL = channelURL.appendingPathComponent(ChannelManifest.fileName)
        var headers: [String: String] = [:]
        if let conditional {
            if let etag = conditional.etag { headers["If-None-Match"] = etag }
            if let lastModified = conditional.lastModified { headers["If-Modified-Since"] = lastModified }
        }
        let manifest = BodyBuffer(limit: ChannelManifest.maximumFileSize, url: manifestURL, notModifiedAllowed: conditional != nil) { size, read in
            ReseedError(.channelRefused, step: .fetchManifest, url: manifestURL, message: read
                ? "the channel manifest is larger than the \(ChannelManifest.maximumFileSize)-byte limit; stopped reading after \(size) bytes"
                : "the channel manifest is \(size) bytes, more than the \(ChannelManifest.maximumFileSize)-byte limit; not read")
        }
        let response = try await transfer.get(manifestURL, headers: headers, step: .fetchManifest,
                                               onResponse: { head throws(ReseedError) in try manifest.begin(head) },
                                               onData: { data throws(ReseedError) in try manifest.append(data) })
        if response.status == 304 { return nil }

        let signatureURL = channelURL.appendingPathComponent(ChannelManifest.signatureFileName)
        let signature = BodyBuffer(limit: Self.maximumSignatureSize, url: signatureURL, notModifiedAllowed: false) { size, _ in
            ReseedError(.signature, step: .fetchManifest, url: signatureURL, message: "the signature file is over \(Self.maximumSignatureSize) bytes (\(size)); it is one line of base64")
        }
        _ = try await transfer.get(signatureURL, headers: [:], step: .fetchManifest,
                                   onResponse: { head throws(ReseedError) in try signature.begin(head) },
                                   onData: { data throws(ReseedError) in try signature.append(data) })
        return Pair(manifest: manifest.bytes, signature: signature.bytes, url: manifestURL,
                    etag: response.header("ETag"), lastModified: response.strongLastModified)
    }

    /// True when `signature` is one line of base64 of an Ed25519 signature of `manifest` by the app's key.
    private func verifies(_ signature: [UInt8], _ manifest: [UInt8]) -> Bool {
        let text = String(decoding: signature, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let raw = Data(base64Encoded: text) else { return false }
        return publicKey.isValidSignature(raw, for: Data(manifest))
    }
}

/// Collects a small body, refusing it as soon as it passes `limit` (from `Content-Length`, or while reading).
private final class BodyBuffer: Sendable {
    private let limit: Int
    private let url: URL
    private let notModifiedAllowed: Bool
    /// The error for a body over the limit: (its size so far, whether it was being read).
    private let tooLarge: @Sendable (Int64, Bool) -> ReseedError
    private let collected = Mutex<[UInt8]>([])

    init(limit: Int, url: URL, notModifiedAllowed: Bool, tooLarge: @escaping @Sendable (Int64, Bool) -> ReseedError) {
        self.limit = limit
        self.url = url
        self.notModifiedAllowed = notModifiedAllowed
        self.tooLarge = tooLarge
    }

    var bytes: [UInt8] { collected.withLock { $0 } }

    func begin(_ response: HTTPTransfer.Response) throws(ReseedError) {
        switch response.status {
        case 200:
            if let length = response.contentLength, length > Int64(limit) { throw tooLarge(length, false) }
        case 304 where notModifiedAllowed:
            break
        default:
            throw ReseedError(.download, step: .fetchManifest, url: url, httpStatus: response.status,
                              message: "HTTP \(response.status) \(HTTPURLResponse.localizedString(forStatusCode: response.status))")
        }
    }

    func append(_ data: Data) throws(ReseedError) {
        let size = collected.withLock { bytes -> Int in
            let size = bytes.count + data.count
            if size <= limit { bytes.append(contentsOf: data) }
            return size
        }
        if size > limit { throw tooLarge(Int64(size), true) }
    }
}
