#if canImport(Glibc)
import Glibc
#endif

/// The system calls of the blob store, each throwing `BlobIOError` with its path and errno.
extension BlobStore {
    static func open(_ path: String, _ flags: Int32) throws -> Int32 {
        let fd = Glibc.open(path, flags, 0o644)
        guard fd >= 0 else { throw BlobIOError(operation: "open", path: path, code: errno) }
        return fd
    }

    static func check(_ rc: Int32, _ operation: String, _ path: String) throws {
        guard rc == 0 else { throw BlobIOError(operation: operation, path: path, code: errno) }
    }

    static func size(_ fd: Int32, _ path: String) throws -> Int64 {
        var info = stat()
        try check(fstat(fd, &info), "fstat", path)
        return Int64(info.st_size)
    }

    /// The alignment direct I/O needs of buffers, offsets and lengths (4 KiB covers the devices in use).
    static let directBlock = 4096

    /// Writes the first `count` bytes of `head` followed by `tail` at `offset` on a descriptor
    /// opened with O_DIRECT, through a block-aligned buffer; `offset` and `count` are multiples
    /// of `directBlock`.
    static func writeDirect(
        _ fd: Int32, _ head: UnsafeRawBufferPointer, _ tail: UnsafeRawBufferPointer, count: Int, at offset: Int64, path: String
    ) throws {
        guard count > 0 else { return }
        let chunk = 4 << 20
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: min(chunk, count), alignment: directBlock)
        defer { buffer.deallocate() }
        var written = 0
        while written < count {
            let n = min(chunk, count - written)
            var filled = 0
            if written < head.count {
                filled = min(n, head.count - written)
                buffer.copyMemory(from: head.baseAddress! + written, byteCount: filled)
            }
            if filled < n {
                (buffer + filled).copyMemory(from: tail.baseAddress! + (written + filled - head.count), byteCount: n - filled)
            }
            try pwriteAll(fd, UnsafeRawBufferPointer(start: buffer, count: n), offset: offset + Int64(written), path: path)
            written += n
        }
    }

    /// Writes all of `bytes` at `offset` (pwrite, retrying short writes and EINTR).
    static func pwriteAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, offset: Int64, path: String) throws {
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                throw BlobIOError(operation: "write", path: path, code: errno)
            }
            done += n
        }
    }

    static func readAll(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, offset: Int64, path: String) throws {
        var done = 0
        while done < buffer.count {
            let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                throw BlobIOError(operation: "read", path: path, code: errno)
            }
            if n == 0 { throw BlobIOError(operation: "read (file shorter than expected)", path: path, code: EIO) }
            done += n
        }
    }
}
