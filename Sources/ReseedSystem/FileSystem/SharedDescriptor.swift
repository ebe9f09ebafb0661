/// An ``OwnedDescriptor`` shared by reference, closed when the last reference ends.
///
/// For a file that work outside one scope uses: an async download whose callbacks write it and
/// whose checksum runs on a thread of its own. Everything that holds this value keeps the file
/// open, so no caller keeps a number alive by hand.
///
/// ```swift
/// let file = SharedDescriptor(try directory.createExclusive(name))
/// try await offload { try directory.sync(file.descriptor, name: name) }
/// ```
package final class SharedDescriptor: Sendable {
    /// The file, borrowed by each call that uses it.
    package let descriptor: OwnedDescriptor

    /// Takes ownership of `descriptor`.
    package init(_ descriptor: consuming OwnedDescriptor) {
        self.descriptor = descriptor
    }
}
