#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
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
        let leftovers = try names().filter { $0.hasPrefix(prefix) }.sorted()
        for leftover in leftovers { try remove(leftover) }
        return leftovers
    }

    /// Replaces `name` with `bytes` atomically and durably: temp file, fsync, rename, directory fsync.
    ///
    /// The new file keeps the permission bits of the one it replaces (an app's
    /// private settings stay private); a new file gets 0644 less the umask.
    package func replaceAtomically(_ name: String, with bytes: [UInt8]) throws {
        let temporary = Self.temporaryName(for: name)
        let file = try createExclusive(temporary)
        do {
            if let existing = try status(name) {
                try fileSystem.reading("fchmod", path(temporary)) { () throws(Errno) in
                    try Syscalls.fchmod(file.raw, existing.st_mode & 0o7777)
                }
            }
            try write(bytes, to: file.raw, name: temporary)
            try sync(file.raw, name: temporary)
        } catch {
            _ = try? remove(temporary)
            throw error
        }
        do {
            do throws(Errno) {
                try file.close()
            } catch {
                throw FileSystemFailure(operation: "close", path: path(temporary), errno: error)
            }
            try rename(temporary, to: name)
        } catch {
            _ = try? remove(temporary)
            throw error
        }
        try sync()
    }
}
