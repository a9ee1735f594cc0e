#if canImport(Glibc)
import Glibc
#endif

/// A read-only memory map of the first `count` bytes of an open file, unmapped on deinit.
///
/// Staged uploads and stored blobs are validated and decoded through one, in place: nothing
/// copies them whole into the heap, and their pages belong to the page cache, which the
/// kernel can take back. The files mapped are never changed in place (a blob is renamed into
/// place whole; an upload is claimed while it is read), so the bytes cannot shift underneath.
final class MappedFile {
    /// The mapped bytes; valid while this object lives.
    let bytes: UnsafeRawBufferPointer

    /// Maps `count` (> 0) bytes of `fd` from its start; the descriptor may be closed afterwards.
    init(fd: Int32, count: Int, path: String) throws {
        precondition(count > 0, "cannot map an empty file (\(path))")
        let address = mmap(nil, count, PROT_READ, MAP_PRIVATE, fd, 0)
        // MAP_FAILED is ((void *)-1), a macro Swift does not import.
        guard let address, address != UnsafeMutableRawPointer(bitPattern: -1) else {
            throw BlobIOError(operation: "mmap", path: path, code: errno)
        }
        // Validation and decoding read front to back: read ahead, and drop pages behind.
        _ = madvise(address, count, MADV_SEQUENTIAL)
        bytes = UnsafeRawBufferPointer(start: address, count: count)
    }

    deinit {
        munmap(UnsafeMutableRawPointer(mutating: bytes.baseAddress), bytes.count)
    }
}
