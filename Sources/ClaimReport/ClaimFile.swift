#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `close(2)` and `write(2)`, named apart from the methods of the types below.
private func systemClose(_ descriptor: Int32) -> Int32 { close(descriptor) }
private func systemWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int { write(descriptor, bytes, count) }

/// A file written front to back through a 64 KiB buffer, so a report of any size holds no
/// more than that of it. Every failure names the path and the system's reason.
final class ClaimFile {
    let path: String
    private var descriptor: Int32
    private var buffer: [UInt8] = []
    private static let flushAt = 64 << 10

    /// Creates (or truncates) the file at `path`.
    init(creating path: String) throws(ClaimReportError) {
        self.path = path
        descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw ClaimReportError(.writeFailed, "cannot create \(path): \(Self.reason(errno))") }
        buffer.reserveCapacity(Self.flushAt)
    }

    deinit {
        if descriptor >= 0 { _ = systemClose(descriptor) }
    }

    func write(_ text: String) throws(ClaimReportError) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= Self.flushAt { try flush() }
    }

    func write(bytes: some Collection<UInt8>) throws(ClaimReportError) {
        buffer.append(contentsOf: bytes)
        if buffer.count >= Self.flushAt { try flush() }
    }

    func write(_ raw: UnsafeRawBufferPointer) throws(ClaimReportError) {
        try flush()
        try writeAll(raw)
    }

    func flush() throws(ClaimReportError) {
        guard !buffer.isEmpty else { return }
        let pending = buffer
        buffer.removeAll(keepingCapacity: true)
        try pending.withUnsafeBytes { raw in Result { () throws(ClaimReportError) in try writeAll(raw) } }.get()
    }

    /// Writes what is buffered and closes the file.
    func close() throws(ClaimReportError) {
        try flush()
        guard descriptor >= 0 else { return }
        let result = systemClose(descriptor)
        descriptor = -1
        guard result == 0 else { throw ClaimReportError(.writeFailed, "cannot write \(path): \(Self.reason(errno))") }
    }

    private func writeAll(_ raw: UnsafeRawBufferPointer) throws(ClaimReportError) {
        var offset = 0
        while offset < raw.count {
            let written = systemWrite(descriptor, raw.baseAddress! + offset, raw.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw ClaimReportError(.writeFailed, "cannot write \(path): \(Self.reason(errno))")
            }
            offset += written
        }
    }

    /// The system's words for `code` ("No space left on device").
    static func reason(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
