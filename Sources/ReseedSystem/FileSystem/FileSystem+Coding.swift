import SystemPackage

extension FileSystem {
    /// Runs one action that writes or reads a gzip stream (a compressed seed) through the observer.
    ///
    /// A failed system call (``CodecFailure/io(_:)``) fails the action as in
    /// `perform(_:_:_:)`; a stream that does not decode is a verdict on the input, not a failed
    /// action, and passes through as the ``CodecFailure`` it is.
    package func performCoding<T>(_ kind: FileAction.Kind, _ path: String, _ body: () throws(CodecFailure) -> T) throws -> T {
        try performing(kind, path, body, systemError: { failure in
            if case .io(let errno) = failure { errno } else { nil }
        })
    }
}
