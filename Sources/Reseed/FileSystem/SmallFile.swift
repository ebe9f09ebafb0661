import Foundation
import ReseedSystem
import SystemPackage

/// Reads a small file whole (a manifest, the preferences), refusing one larger than `limit`
/// without reading it; nil when the file does not exist.
package func readSmallFileIfPresent(
    _ url: URL, limit: Int, step: ReseedError.Step, tooLarge: (Int64) -> ReseedError
) throws(ReseedError) -> [UInt8]? {
    let path = url.path
    let file: OwnedDescriptor
    do {
        // Never blocks on a FIFO; refuses anything but a regular file.
        file = try FileSystem.openRegularFile(path)
    } catch where error.errno == .noSuchFileOrDirectory {
        return nil
    } catch {
        throw ReseedError(.io, step: step, path: path, errno: error.errno, message: error.reason ?? "cannot open")
    }
    do {
        let info = try file.status()
        guard info.size <= Int64(limit) else { throw tooLarge(info.size) }
        // Read to the end of the file, whatever fstat said (it may have grown), never past the limit.
        var bytes: [UInt8] = []
        var chunk = Int(info.size) + 1
        while true {
            let part = try file.read(count: chunk, at: Int64(bytes.count))
            bytes += part
            guard bytes.count <= limit else { throw tooLarge(Int64(bytes.count)) }
            if part.count < chunk { return bytes }
            chunk = min(max(chunk, 4096) * 2, limit + 1 - bytes.count)
        }
    } catch let error as Errno {
        throw ReseedError(.io, step: step, path: path, errno: error, message: "cannot read")
    } catch let error as ReseedError {
        throw error
    } catch {
        throw ReseedError.wrapping(error, step: step, path: path)
    }
}

/// Like ``readSmallFileIfPresent(_:limit:step:tooLarge:)``, but a missing file is an error.
func readSmallFile(
    _ url: URL, limit: Int, step: ReseedError.Step, tooLarge: (Int64) -> ReseedError
) throws(ReseedError) -> [UInt8] {
    guard let bytes = try readSmallFileIfPresent(url, limit: limit, step: step, tooLarge: tooLarge) else {
        throw ReseedError(step == .readManifest ? .seedNotFound : .io, step: step, path: url.path, errno: .noSuchFileOrDirectory,
                          message: "cannot open")
    }
    return bytes
}
