import CMapGuard
#if canImport(Glibc)
import Glibc
#endif

/// A read-only memory map of the first `count` bytes of an open file, unmapped on deinit.
///
/// Staged uploads are validated through one, in place: nothing copies them whole into the
/// heap, and their pages belong to the page cache, which the kernel can take back. The files
/// mapped are never changed in place (an upload is claimed while it is read), so the bytes
/// cannot shift underneath.
///
/// A page the kernel cannot supply (the file cut short under the map, a disk's read error)
/// would raise SIGBUS and kill image-service (issue 27, 15a). The map is guarded (CMapGuard):
/// such a page reads as zeros and the fault is recorded; `readBack` throws it, so what was
/// read from a failed map is never trusted.
final class MappedFile {
    /// The mapped bytes; valid while this object lives.
    let bytes: UnsafeRawBufferPointer
    private let path: String
    private let guardSlot: Int32

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
        self.path = path
        // -1 when every slot is taken: then the map is read as before, unguarded.
        guardSlot = hp_map_guard_enter(address, count)
    }

    /// The offset of the first byte the map could not supply, or nil when every read so far
    /// was of the file's bytes.
    var firstFault: Int64? {
        let offset = hp_map_guard_fault(guardSlot)
        return offset < 0 ? nil : offset
    }

    /// `body` over the bytes; throws `BlobIOError` (EIO) when any page it read could not be
    /// read from the file, whatever `body` returned or threw.
    func readBack<T>(_ body: (UnsafeRawBufferPointer) throws -> T) throws -> T {
        let result = Result { try body(bytes) }
        if let offset = firstFault {
            throw BlobIOError(
                operation: "read through a map (a page at byte \(offset) of \(bytes.count) could not be read: the file was cut short or the disk failed)",
                path: path, code: EIO)
        }
        return try result.get()
    }

    deinit {
        hp_map_guard_leave(guardSlot)
        munmap(UnsafeMutableRawPointer(mutating: bytes.baseAddress), bytes.count)
    }
}
