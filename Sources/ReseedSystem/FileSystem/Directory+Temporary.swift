import Foundation
import SystemPackage

extension Directory {
    /// Removes the files a crashed run left, those whose names `isLeftover` accepts; returns their names, sorted.
    ///
    /// The names are the caller's (Reseed's `StoreLayout` says which are temporary files); call it
    /// only while holding the lock that guards them: then no live run owns them.
    @discardableResult
    package func removeTemporaryFiles(where isLeftover: (String) -> Bool) throws -> [String] {
        let leftovers = try names().filter(isLeftover).sorted()
        for leftover in leftovers { try remove(leftover) }
        return leftovers
    }

    /// Replaces `name` with `bytes` atomically and durably, written as the new file `temporary`
    /// (see ``writeDurably(_:through:permissions:placement:write:check:)``).
    ///
    /// The new file keeps the permission bits of the one it replaces (an app's
    /// private settings stay private); a new file gets 0644 less the umask.
    package func replaceAtomically(_ name: String, with bytes: [UInt8], through temporary: String) throws {
        try writeDurably(name, through: temporary) { file, temporary in
            if let existing = try status(name) {
                try fileSystem.reading("fchmod", path(temporary)) { () throws(Errno) in
                    try file.setPermissions(existing.permissions)
                }
            }
            try write(bytes, to: file, name: temporary)
        }
    }
}
