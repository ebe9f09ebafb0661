import ReseedSystem

extension JSONNode {
    /// The place of the first member named twice in one object, anywhere in this value (`signed.version`,
    /// `deltas[0].file`); nil when every object names each member once.
    ///
    /// A signed file read last-wins would let two readers see two documents in the same signed bytes,
    /// so `channel.json` and `keys.json` refuse a repeated member instead.
    func firstRepeatedMember(prefix: String = "") -> String? {
        switch value {
        case .object(let members):
            var seen = Set<String>()
            for member in members where !seen.insert(member.key).inserted { return prefix + member.key }
            for member in members {
                if let repeated = member.value.firstRepeatedMember(prefix: prefix + member.key + ".") { return repeated }
            }
            return nil
        case .array(let items):
            let base = prefix.hasSuffix(".") ? String(prefix.dropLast()) : prefix
            for (index, item) in items.enumerated() {
                if let repeated = item.firstRepeatedMember(prefix: "\(base)[\(index)].") { return repeated }
            }
            return nil
        default:
            return nil
        }
    }
}

extension ManifestFields {
    /// The fields of a signed channel file's top object (`what` names the file in errors): `bytes`
    /// parsed with at most `maxDepth` levels, a JSON object, no member named twice at any depth.
    static func signedFile(
        _ bytes: [UInt8], maxDepth: Int, path: String, step: ReseedError.Step, what: String, fileName: String
    ) throws(ReseedError) -> ManifestFields {
        let root: JSONNode
        do {
            root = try JSONNode.parse(bytes, maxDepth: maxDepth)
        } catch {
            throw ReseedError(.invalidManifest, step: step, path: path, message: "\(what) is not valid JSON: \(error)")
        }
        let fields = ManifestFields(root: root, path: path, step: step)
        guard case .object = root.value else { throw fields.invalid(nil, "\(what) is \(root.kindName), not a JSON object") }
        try fields.refuseRepeatedMembers(in: fileName)
        return fields
    }

    /// Refuses a document in which an object names a member twice, naming the first such member.
    func refuseRepeatedMembers(in file: String) throws(ReseedError) {
        guard let repeated = root.firstRepeatedMember() else { return }
        throw ReseedError(.invalidManifest, step: step, path: path, field: repeated,
                          message: "field \"\(repeated)\": named twice in \(file); a signed file names each member once")
    }
}
