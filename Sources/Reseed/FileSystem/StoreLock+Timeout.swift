import ReseedSystem

extension StoreLock {
    /// Takes the lock named `name` in `directory`, waiting up to `timeout`; when the wait runs out,
    /// ``ReseedError/Code/lockTimeout`` (step `lock`, the lock file's path) with `timeoutMessage`.
    package static func acquire(
        _ name: String, in directory: Directory, timeout: Duration, timeoutMessage: @autoclosure () -> String
    ) throws(ReseedError) -> StoreLock {
        let path = directory.path(name)
        let lock = try during(.lock, path: path) { try acquire(name, in: directory, timeout: timeout) }
        guard let lock else { throw ReseedError(.lockTimeout, step: .lock, path: path, message: timeoutMessage()) }
        return lock
    }
}
