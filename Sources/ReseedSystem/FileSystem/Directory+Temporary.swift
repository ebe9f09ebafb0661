import Foundation
import SystemPackage

extension Directory {
    /// The prefix of every temporary file Reseed makes for `name`: `.<name>.reseed-tmp-`.
    package static func temporaryPrefix(for name: String) -> String { ".\(name).reseed-tmp-" }

    /// A fresh temporary name for `name`, such as `.triage.sqlite.reseed-tmp-1f2e3d4c5b6a7988`.
    package static func temporaryName(for name: String) -> String {
        temporaryPrefix(for: name) + String(format: "%016llx", UInt64.random(in: .min ... .max))
    }

    /// Removes temporary files a crashed run left for `name`; returns their names.
    ///
    /// Call it only while holding the lock that guards `name`: then no live run owns them.
    @discardableResult
    package func removeTemporaryFiles(for name: String) throws -> [String] {
        let prefix = Self.temporaryPrefix(for: name)
        // A temp file of a temp file (a delta built into its temp name, written through one of its own) is a leftover too.
        let leftovers = try names().filter { $0.hasPrefix(prefix) || $0.hasPrefix("." + prefix) }.sorted()
        for leftover in leftovers { try remove(leftover) }
        return leftovers
    }

    /// Replaces `name` with `bytes` atomically and durably (see ``writeDurably(_:permissions:placement:write:check:)``).
    ///
    /// The new file keeps the permission bits of the one it replaces (an app's
    /// private settings stay private); a new file gets 0644 less the umask.
    package func replaceAtomically(_ name: String, with bytes: [UInt8]) throws {
        try writeDurably(name) { file, temporary in
            if let existing = try status(name) {
                try fileSystem.reading("fchmod", path(temporary)) { () throws(Errno) in
                    try file.setPermissions(existing.permissions)
                }
            }
            try write(bytes, to: file, name: temporary)
        }
    }
}
