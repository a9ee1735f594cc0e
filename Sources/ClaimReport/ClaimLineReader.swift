#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a text file a line at a time through a 64 KiB buffer.
final class ClaimLineReader {
    private let descriptor: Int32
    private let path: String
    private var pending: [UInt8] = []
    private var ended = false

    init(path: String) throws(ClaimReportError) {
        self.path = path
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw ClaimReportError(.writeFailed, "cannot read \(path): \(ClaimFile.reason(errno))") }
    }

    deinit { _ = close(descriptor) }

    /// The next line without its "\n"; nil at the end.
    func next() throws(ClaimReportError) -> String? {
        while true {
            if let newline = pending.firstIndex(of: 0x0A) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                return line
            }
            if ended {
                guard !pending.isEmpty else { return nil }
                defer { pending = [] }
                return String(decoding: pending, as: UTF8.self)
            }
            var chunk = [UInt8](repeating: 0, count: 64 << 10)
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw ClaimReportError(.writeFailed, "cannot read \(path): \(ClaimFile.reason(errno))")
            }
            if count == 0 { ended = true } else { pending.append(contentsOf: chunk[..<count]) }
        }
    }
}
