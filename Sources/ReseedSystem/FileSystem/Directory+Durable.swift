import SystemPackage

/// The one way Reseed makes a durable file: a temporary file beside the target, written,
/// fsynced, closed (its error checked), renamed into place, and the directory fsynced.
extension Directory {
    /// How ``writeDurably(_:through:permissions:placement:write:check:)`` puts the finished file under its name.
    package enum Placement: Sendable {
        /// `renameat(2)`: atomically replaces a file already under the name.
        case replace
        /// `renameat2(RENAME_NOREPLACE)` (or `linkat` then `unlinkat`): fails with `EEXIST`
        /// rather than replace a file under the name.
        case noReplace
    }

    /// Makes the new file `temporary` in this directory, durable and closed, or throws with it removed.
    ///
    /// In this order: create it exclusively (`O_EXCL`, no link followed, `permissions` less
    /// the umask), let `write` fill it through its descriptor, fsync it, close it (a failed
    /// close, which may report a write error late, fails the whole), then let `check`
    /// look at it by name. The caller gives it its final name;
    /// ``writeDurably(_:through:permissions:placement:write:check:)`` does that too.
    ///
    /// Without `synced`, the fsync is the caller's, before the file takes its name: for a file it
    /// changes after `check` (``syncFiles(_:)`` then makes it durable once, with what it wrote beside it).
    ///
    /// ```swift
    /// let copied = try directory.writeTemporary(temporary) { file in try copier.copy(from: source, to: file) }
    /// ```
    /// - Throws: ``FileSystemFailure`` for a failed action (`close` for the close), or what
    ///   `write` or `check` threw. The file is removed before either leaves this call.
    package func writeTemporary<T>(
        _ temporary: String, permissions: FilePermissions = .defaultFile, synced: Bool = true,
        write: (_ file: borrowing OwnedDescriptor) throws -> T, check: (_ written: T) throws -> Void = { _ in }
    ) throws -> T {
        let file = try createExclusive(temporary, permissions: permissions)
        let written: T
        do {
            written = try write(file)
            if synced { try sync(file, name: temporary) }
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
            try check(written)
        } catch {
            _ = try? remove(temporary)
            throw error
        }
        return written
    }

    /// Writes `name` atomically and durably: ``writeTemporary(_:permissions:synced:write:check:)`` under
    /// the caller's fresh name `temporary`, then a rename into place and a directory fsync.
    ///
    /// A crash at any point leaves the old file (or none) or the whole new one under `name`,
    /// and at most `temporary` beside it.
    ///
    /// ```swift
    /// try directory.writeDurably("channel.json", through: temporary) { file, temporary in
    ///     try directory.write(bytes, to: file, name: temporary)
    /// }
    /// ```
    /// - Parameters:
    ///   - temporary: a name no other file has, which names the file until it takes `name` (the
    ///     caller's: Reseed's come from `StoreLayout.temporaryName(of:)`, so a later run finds them).
    ///   - placement: ``Placement/replace`` (the default) or ``Placement/noReplace``.
    ///   - write: fills the file; borrows its descriptor, and gets its temporary name.
    ///   - check: runs once the file is closed, before it takes its name; gets what `write` returned.
    /// - Throws: ``FileSystemFailure`` for a failed action, or what `write` or `check` threw;
    ///   the temporary file is removed unless the rename happened (only the directory fsync failed).
    @discardableResult
    package func writeDurably<T>(
        _ name: String, through temporary: String, permissions: FilePermissions = .defaultFile, placement: Placement = .replace,
        write: (_ file: borrowing OwnedDescriptor, _ temporary: String) throws -> T,
        check: (_ written: T, _ temporary: String) throws -> Void = { _, _ in }
    ) throws -> T {
        let written = try writeTemporary(temporary, permissions: permissions, write: { file in try write(file, temporary) },
                                         check: { written in try check(written, temporary) })
        do {
            switch placement {
            case .replace: try rename(temporary, to: name)
            case .noReplace: try renameNoReplace(temporary, to: name)
            }
        } catch {
            _ = try? remove(temporary)
            throw error
        }
        try sync()
        return written
    }
}
