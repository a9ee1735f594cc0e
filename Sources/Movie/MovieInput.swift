import CAV

/// The movie's bytes as libavformat reads them: a custom `AVIOContext` whose read and seek
/// callbacks copy from memory (no file, no protocol, no network), counting what is read
/// against `MovieLimits.maxBytes`, and the interrupt callback that stops any read once the
/// time budget is spent. Lives while the format context that reads it does.
final class MovieInput {
    /// How much libavformat asks for at a time.
    static let bufferBytes = 64 << 10

    private let data: UnsafeRawBufferPointer
    private var position = 0
    /// Bytes handed to the demuxer so far.
    private(set) var bytesRead: Int64 = 0
    let maxBytes: Int64
    /// When the time budget ends.
    let deadline: ContinuousClock.Instant
    /// Set when a read was refused for `maxBytes` or the deadline, so the error names it.
    private(set) var stoppedFor: String?
    /// The AVIO context (its buffer `av_malloc`ed), freed by `close()`.
    private(set) var context: UnsafeMutablePointer<AVIOContext>?

    init(_ data: UnsafeRawBufferPointer, maxBytes: Int64, deadline: ContinuousClock.Instant) {
        self.data = data
        self.maxBytes = maxBytes
        self.deadline = deadline
    }

    /// Makes the AVIO context; nil when memory runs out.
    func open() -> UnsafeMutablePointer<AVIOContext>? {
        guard let buffer = hp_av_malloc(Self.bufferBytes) else { return nil }
        let opaque = Unmanaged.passUnretained(self).toOpaque()
        context = hp_avio_alloc_context(
            buffer.assumingMemoryBound(to: UInt8.self), Int32(Self.bufferBytes), 0, opaque,
            { opaque, buffer, size in MovieInput.from(opaque).read(into: buffer, size: Int(size)) }, nil,
            { opaque, offset, whence in MovieInput.from(opaque).seek(offset, whence: whence) })
        if context == nil { hp_av_free(buffer) }
        return context
    }

    /// Frees the AVIO context and its buffer (which libavformat may have replaced).
    func close() {
        guard context != nil else { return }
        hp_av_freep(&context!.pointee.buffer)
        hp_avio_context_free(&context)
    }

    /// Whether the time budget is spent; records it.
    func expired() -> Bool {
        if ContinuousClock.now >= deadline {
            stoppedFor = stoppedFor ?? "time"
            return true
        }
        return false
    }

    /// The interrupt callback's argument and function for `AVFormatContext.interrupt_callback`.
    var interrupt: AVIOInterruptCB {
        AVIOInterruptCB(callback: { opaque in MovieInput.from(opaque).expired() ? 1 : 0 }, opaque: Unmanaged.passUnretained(self).toOpaque())
    }

    private static func from(_ opaque: UnsafeMutableRawPointer?) -> MovieInput {
        Unmanaged<MovieInput>.fromOpaque(opaque!).takeUnretainedValue()
    }

    private func read(into buffer: UnsafeMutablePointer<UInt8>?, size: Int) -> Int32 {
        guard let buffer, size > 0 else { return 0 }
        if expired() { return homepwner_averror_exit() }
        let count = min(size, data.count - position)
        guard count > 0 else { return homepwner_averror_eof() }
        guard bytesRead + Int64(count) <= maxBytes else {
            stoppedFor = "bytes"
            return homepwner_averror_exit()
        }
        buffer.update(from: data.baseAddress!.advanced(by: position).assumingMemoryBound(to: UInt8.self), count: count)
        position += count
        bytesRead += Int64(count)
        return Int32(count)
    }

    private func seek(_ offset: Int64, whence: Int32) -> Int64 {
        if whence & homepwner_seek_size() != 0 { return Int64(data.count) }
        let base: Int64 = switch whence & 3 {
        case 0: 0  // SEEK_SET
        case 1: Int64(position)  // SEEK_CUR
        case 2: Int64(data.count)  // SEEK_END
        default: -1
        }
        guard base >= 0 else { return -1 }
        let (target, overflow) = base.addingReportingOverflow(offset)
        guard !overflow, target >= 0, target <= Int64(data.count) else { return -1 }
        position = Int(target)
        return target
    }
}
