import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a document's bytes go: a file this writer opened, or a `FileHandle` the caller owns.
/// Bytes are gathered in a small buffer and written when it fills; large payloads (image
/// data) go straight through. Tracks the offset of the next byte, which the cross-reference
/// table needs, so the destination need not be seekable.
final class PDFOutput {
    private enum Destination {
        case descriptor(Int32)
        case handle(FileHandle)
        case closed
    }

    /// Bytes gathered before a write; also the most this output ever holds.
    static let bufferCapacity = 64 * 1024

    private var destination: Destination
    /// The path, or a description of the handle, for error messages.
    let name: String
    private var buffer: [UInt8] = []
    /// Bytes written or buffered so far: the offset the next byte lands at.
    private(set) var offset = 0
    /// The first write error: once the output is broken every later write reports it.
    private var failure: PDFError?

    /// Creates (or truncates) the file at `path`.
    init(path: String) throws(PDFError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            let code = errno
            throw PDFError(kind: .cannotCreate(errno: code), message: "cannot create PDF file \(path): \(Self.describe(errno: code))")
        }
        destination = .descriptor(descriptor)
        name = path
        buffer.reserveCapacity(Self.bufferCapacity)
    }

    /// Writes to `handle`, from its current position, and leaves it open.
    init(handle: FileHandle) {
        destination = .handle(handle)
        name = "file handle \(handle.fileDescriptor)"
        buffer.reserveCapacity(Self.bufferCapacity)
    }

    deinit {
        if case .descriptor(let descriptor) = destination { _ = systemClose(descriptor) }
    }

    /// Bytes held in memory, not yet written.
    var bufferedByteCount: Int { buffer.count }

    /// Appends `text` as UTF-8 (PDF syntax is ASCII; callers escape everything else).
    func write(_ text: String) throws(PDFError) {
        buffer.append(contentsOf: text.utf8)
        offset += text.utf8.count
        if buffer.count >= Self.bufferCapacity { try flush() }
    }

    /// Appends `bytes`, writing them directly when they are larger than the buffer.
    func write(bytes: [UInt8]) throws(PDFError) {
        if buffer.count + bytes.count <= Self.bufferCapacity {
            buffer.append(contentsOf: bytes)
            offset += bytes.count
            if buffer.count >= Self.bufferCapacity { try flush() }
            return
        }
        try flush()
        try bytes.withUnsafeBytes { raw in Result { () throws(PDFError) in try send(raw) } }.get()
        offset += bytes.count
    }

    /// Writes everything buffered.
    func flush() throws(PDFError) {
        guard !buffer.isEmpty else { return }
        try buffer.withUnsafeBytes { raw in Result { () throws(PDFError) in try send(raw) } }.get()
        buffer.removeAll(keepingCapacity: true)
    }

    /// Flushes and, for a file this output opened, closes it.
    func close() throws(PDFError) {
        try flush()
        if case .descriptor(let descriptor) = destination {
            destination = .closed
            guard systemClose(descriptor) == 0 else {
                let code = errno
                throw fail(PDFError(kind: .writeFailed(errno: code), message: "closing \(name) failed: \(Self.describe(errno: code))"))
            }
        }
    }

    private func send(_ raw: UnsafeRawBufferPointer) throws(PDFError) {
        if let failure { throw failure }
        switch destination {
        case .descriptor(let descriptor):
            var start = 0
            while start < raw.count {
                let written = systemWrite(descriptor, raw.baseAddress! + start, raw.count - start)
                if written < 0 {
                    let code = errno
                    if code == EINTR { continue }
                    throw fail(
                        PDFError(
                            kind: .writeFailed(errno: code),
                            message: "writing \(raw.count - start) bytes to \(name) at offset \(offset) failed: \(Self.describe(errno: code))"))
                }
                start += written
            }
        case .handle(let handle):
            do {
                try handle.write(contentsOf: Data(raw))
            } catch {
                throw fail(PDFError(kind: .writeFailed(errno: 0), message: "writing \(raw.count) bytes to \(name) failed: \(error)"))
            }
        case .closed:
            preconditionFailure("PDFOutput written after close")
        }
    }

    private func fail(_ error: PDFError) -> PDFError {
        failure = error
        return error
    }

    /// "Permission denied (errno 13)".
    static func describe(errno code: Int32) -> String {
        "\(String(cString: strerror(code))) (errno \(code))"
    }
}

// The methods above are named write and close, which hide the C functions inside the class.
private func systemWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, bytes, count)
}

private func systemClose(_ descriptor: Int32) -> Int32 {
    close(descriptor)
}
