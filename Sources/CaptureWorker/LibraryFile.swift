import Foundation
import RPC

/// A file of the photo library, open for reading: its path was checked once, and every read
/// goes through the descriptor opened then (a symlink swapped afterwards changes nothing).
/// Read in pieces, so a movie of a gigabyte is never held whole; closed when released.
final class LibraryFile: Sendable {
    /// The path as the request named it, relative to the library.
    let name: String
    /// Its size when it was opened.
    let size: Int
    private let fd: Int32

    /// Opens the regular file at `path` (resolved, inside the library), refusing a folder or
    /// other non-regular file, an empty file, and one over `maxBytes`.
    init(path: String, name: String, maxBytes: Int) throws(RPCError) {
        // Non-blocking, so a FIFO is refused below rather than waited on (a regular file reads
        // the same either way); no symlink in the last place of a path resolved without any.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            if errno == ENOENT { throw .notFound("no file \(name) in the photo library") }
            if errno == ELOOP { throw .permissionDenied("\(name) in the photo library was replaced by a symlink while it was opened") }
            throw .permissionDenied("\(name) in the photo library cannot be read by the capture worker: \(reason)")
        }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw .invalidArgument("\(name) in the photo library is not a regular file")
        }
        let size = Int(status.st_size)
        guard size > 0 else {
            close(fd)
            throw .invalidArgument("\(name) in the photo library is empty")
        }
        guard size <= maxBytes else {
            close(fd)
            throw .invalidArgument("\(name) in the photo library is \(size) bytes, over the \(maxBytes) a capture reads")
        }
        (self.fd, self.name, self.size) = (fd, name, size)
    }

    deinit { close(fd) }

    /// `count` bytes from `offset` (fewer only at the end of a file that shrank, which `read`
    /// callers see as a change of the file).
    func read(at offset: Int, count: Int) throws(RPCError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let got = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, count - done, off_t(offset + done)) }
            if got < 0 && errno == EINTR { continue }
            guard got >= 0 else {
                throw .unavailable("reading \(name) in the photo library failed: \(String(cString: strerror(errno)))")
            }
            if got == 0 { break }
            done += got
        }
        if done < count { bytes.removeLast(count - done) }
        return bytes
    }

    /// The whole file, as it was opened; a file that shrank meanwhile is refused (retried).
    func readAll() throws(RPCError) -> [UInt8] {
        let bytes = try read(at: 0, count: size)
        guard bytes.count == size else { throw changed }
        return bytes
    }

    /// Each piece of at most `pieceBytes`, in order, to `body`; a file that shrank meanwhile is
    /// refused (retried).
    func forEachPiece(of pieceBytes: Int, _ body: ([UInt8]) async throws -> Void) async throws {
        var offset = 0
        while offset < size {
            let piece = try read(at: offset, count: min(pieceBytes, size - offset))
            guard !piece.isEmpty else { throw changed }
            try await body(piece)
            offset += piece.count
        }
    }

    /// What a file changed while it was captured is: another attempt reads it as it is then.
    var changed: RPCError {
        .aborted("\(name) in the photo library changed while it was captured (it was \(size) bytes)")
    }
}
