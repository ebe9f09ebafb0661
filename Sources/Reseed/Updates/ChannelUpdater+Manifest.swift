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
    /// The ``ChannelPublicKey/keyID`` of the key whose signature verified: a channel key listed in
    /// `keys.json`, or for a channel without one, a pinned key.
    var signer: String
}

/// What one check of a channel verified: the signed manifest (nil after a `304`) and the keys that
/// may sign it (nil after a `304` from a channel without `keys.json`).
struct ChannelOffer: Sendable {
    var manifest: SignedManifest?
    var trust: ChannelTrust?
}

/// What the preferences keep of the last check of a channel, under the store's entry:
/// `"channel": {"url": …, "etag": …, "lastModified": …, "version": …, "signedBy": …, "expires": …, "keysVersion": 3}`.
///
/// The validators are sent back (`If-None-Match`, `If-Modified-Since`) only while the store still holds
/// `version` from that same `url`: after any other change of the store (a bundled seed
/// installed, a store repaired) the manifest is fetched whole again. `Last-Modified` is kept
/// only when it is a strong validator (``HTTPTransfer/Response/strongLastModified``): a
/// `channel.json` published twice within one second has the same date both times, and a
/// host without `ETag` would answer the second check `304` for good.
///
/// Channel trust keeps three more: `signedBy`, the key that signed the manifest of `version` (when
/// root removes it, that release loses its standing); `expires`, that manifest's expiry (a `304`
/// does not make an expired manifest valid again); `keysVersion`, the highest `keys.json` version
/// seen from the channel, which a later `keys.json` may not go below.
struct ChannelValidators: Sendable, Equatable {

    var url: String
    var etag: String?
    var lastModified: String?
    /// The version the channel offered, which the store held once that check was done.
    var version: String
    var signedBy: String?
    var expires: String?
    var keysVersion: Int64?

    init(url: String, etag: String?, lastModified: String?, version: String,
         signedBy: String? = nil, expires: String? = nil, keysVersion: Int64? = nil) {
        self.url = url
        self.etag = etag
        self.lastModified = lastModified
        self.version = version
        self.signedBy = signedBy
        self.expires = expires
        self.keysVersion = keysVersion
    }

    /// Reads them from the `"channel"` object of a store's preferences entry; nil when malformed.
    init?(node: JSONNode) {
        guard let url = node["url"]?.string, let version = node["version"]?.string else { return nil }
        var keysVersion: Int64?
        if case .number(let text)? = node["keysVersion"]?.value { keysVersion = Int64(text) }
        self.init(url: url, etag: node["etag"]?.string, lastModified: node["lastModified"]?.string, version: version,
                  signedBy: node["signedBy"]?.string, expires: node["expires"]?.string, keysVersion: keysVersion)
    }

    /// The object as JSON text, absent values left out.
    var json: String {
        var members = [("url", url)]
        if let etag { members.append(("etag", etag)) }
        if let lastModified { members.append(("lastModified", lastModified)) }
        members.append(("version", version))
        if let signedBy { members.append(("signedBy", signedBy)) }
        if let expires { members.append(("expires", expires)) }
        var texts = members.map { JSONNode.quote($0.0) + ": " + JSONNode.quote($0.1) }
        if let keysVersion { texts.append("\"keysVersion\": \(keysVersion)") }
        return "{" + texts.joined(separator: ", ") + "}"
    }
}

extension ChannelUpdater {
    /// The largest signature file read: a base64 Ed25519 signature is 88 characters.
    static let maximumSignatureSize = 1024

    /// Fetches `channel.json` (conditionally, when `conditional` is given) and its signature, then
    /// the channel's `keys.json` (``fetchTrust(recorded:floors:)``), and finds the key that signed the
    /// manifest (see ``ChannelTrust``); a pair that does not verify is fetched once more,
    /// unconditionally, since a publish replaces the signature just before the manifest.
    ///
    /// - Returns: no manifest when the channel answered `304 Not Modified`; then `keys.json` too when
    ///   this device has seen one from the channel, so that the signer of what the `304` stands for is
    ///   checked again (a `304` never skips the key check).
    ///
    /// `verified` hears of a `keys.json` the moment it verifies, before `channel.json` is checked with it.
    func fetchSignedManifest(conditional: ChannelValidators?, recorded: ChannelValidators?, floors: ChannelFloors,
                             verified: (ChannelKeys) async throws(ReseedError) -> Void)
        async throws(ReseedError) -> ChannelOffer
    {
        var refusal: ReseedError?
        var trust: ChannelTrust?
        func fetchKeys() async throws(ReseedError) -> ChannelTrust {
            let fetched = try await fetchTrust(recorded: recorded, floors: floors)
            if let keys = fetched.keys { try await verified(keys) }
            return fetched
        }
        for attempt in 1...2 {
            guard let pair = try await fetchPair(conditional: attempt == 1 ? conditional : nil) else {
                let seenKeys = floors.keysVersion ?? (recorded?.url == channelURL.absoluteString ? recorded?.keysVersion : nil)
                return ChannelOffer(manifest: nil, trust: seenKeys == nil ? nil : try await fetchKeys())
            }
            let trusted: ChannelTrust
            if let trust { trusted = trust } else { trusted = try await fetchKeys() }
            trust = trusted
            switch trusted.signer(of: pair.manifest, signature: pair.signature, url: pair.url, allowance: configuration.clockSkew) {
            case .success(let signer):
                let manifest = try ChannelManifest.decode(pair.manifest, source: pair.url.absoluteString)
                return ChannelOffer(manifest: SignedManifest(manifest: manifest, url: pair.url, etag: pair.etag, lastModified: pair.lastModified, signer: signer),
                                    trust: trusted)
            case .failure(let error):
                refusal = error
            }
        }
        let manifestURL = channelURL.appendingPathComponent(ChannelManifest.fileName)
        throw refusal ?? ReseedError(.signature, step: .checkSignature, url: manifestURL, message: "\(ChannelManifest.fileName) does not verify")
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
}

/// Collects a small body, refusing it as soon as it passes `limit` (from `Content-Length`, or while reading).
final class BodyBuffer: Sendable {
    private let limit: Int
    private let url: URL
    private let notModifiedAllowed: Bool
    /// Whether `404 Not Found` means "no such file" (``isMissing``) rather than an error.
    private let missingAllowed: Bool
    private let missing = Mutex(false)
    /// The error for a body over the limit: (its size so far, whether it was being read).
    private let tooLarge: @Sendable (Int64, Bool) -> ReseedError
    private let collected = Mutex<[UInt8]>([])

    init(limit: Int, url: URL, notModifiedAllowed: Bool, missingAllowed: Bool = false, tooLarge: @escaping @Sendable (Int64, Bool) -> ReseedError) {
        self.limit = limit
        self.url = url
        self.notModifiedAllowed = notModifiedAllowed
        self.missingAllowed = missingAllowed
        self.tooLarge = tooLarge
    }

    var bytes: [UInt8] { collected.withLock { $0 } }
    /// True when the server answered `404` and that was allowed: the body (an error page) was not kept.
    var isMissing: Bool { missing.withLock { $0 } }

    func begin(_ response: HTTPTransfer.Response) throws(ReseedError) {
        switch response.status {
        case 200:
            if let length = response.contentLength, length > Int64(limit) { throw tooLarge(length, false) }
        case 304 where notModifiedAllowed:
            break
        case 404 where missingAllowed:
            missing.withLock { $0 = true }
        default:
            throw ReseedError(.download, step: .fetchManifest, url: url, httpStatus: response.status,
                              message: "HTTP \(response.status) \(HTTPURLResponse.localizedString(forStatusCode: response.status))")
        }
    }

    func append(_ data: Data) throws(ReseedError) {
        if isMissing { return }
        let size = collected.withLock { bytes -> Int in
            let size = bytes.count + data.count
            if size <= limit { bytes.append(contentsOf: data) }
            return size
        }
        if size > limit { throw tooLarge(Int64(size), true) }
    }
}
