import SystemPackage

extension FileSystemObserver {
    /// The measured figure: an observer reports another only to fake a short disk.
    package func availableBytes(measured: Int64, at path: String) -> Int64 { measured }
}

extension Directory {
    /// The bytes this process may still write on the filesystem holding this directory
    /// (`fstatvfs(3)`: `f_bavail * f_frsize`, the blocks kept for root not counted), as the
    /// seam's observer reports them: a test's observer can say the disk is shorter than it is.
    ///
    /// - Throws: ``FileSystemFailure`` with the `fstatvfs` errno.
    package func availableBytes() throws(FileSystemFailure) -> Int64 {
        let measured = try fileSystem.reading("fstatvfs", url.path) { () throws(Errno) in try Syscalls.availableBytes(fd) }
        return fileSystem.observer?.availableBytes(measured: measured, at: url.path) ?? measured
    }
}
