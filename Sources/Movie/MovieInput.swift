import CAV

/// The movie's bytes as libavformat reads them: a custom `AVIOContext` whose read and seek
/// callbacks take them from a `MovieSource` (memory, or ranged reads; no file, no protocol, no
/// network of libavformat's own), counting what the source takes from where the movie is kept
/// against `MovieLimits.maxBytes` and, while the container is opened, what the demuxer reads
/// against `MovieLimits.maxIndexBytes`; and the interrupt callback that stops any read once the
/// time budget is spent. Lives while the format context that reads it does.
final class MovieInput {
    /// How much libavformat asks for at a time.
    static let bufferBytes = 64 << 10

    private let source: any MovieSource
    private var position: Int64 = 0
    /// Bytes handed to the demuxer so far.
    private(set) var bytesRead: Int64 = 0
    /// Bytes the source took from where the movie is kept: those handed over, for a movie in
    /// memory; whole blocks, for a ranged one (`MovieLimits.maxBytes`).
    private(set) var bytesFetched: Int64 = 0
    let maxBytes: Int64
    /// While set (the container being opened), the most bytes the demuxer may read.
    var maxBytesRead: Int64?
    /// When the time budget ends.
    let deadline: ContinuousClock.Instant
    /// Set when a read was refused or failed, so the error names why.
    private(set) var stopped: MovieReadStop?
    /// The AVIO context (its buffer `av_malloc`ed), freed by `close()`.
    private(set) var context: UnsafeMutablePointer<AVIOContext>?

    init(_ source: any MovieSource, maxBytes: Int64, deadline: ContinuousClock.Instant) {
        self.source = source
        self.maxBytes = maxBytes
        self.deadline = deadline
    }

    /// The source's size in bytes.
    var size: Int64 { source.size }

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
            stopped = stopped ?? .time
            return true
        }
        return false
    }

    /// The interrupt callback's argument and function for `AVFormatContext.interrupt_callback`.
    var interrupt: AVIOInterruptCB {
        AVIOInterruptCB(callback: { opaque in MovieInput.from(opaque).expired() ? 1 : 0 }, opaque: Unmanaged.passUnretained(self).toOpaque())
    }

    /// The first `count` bytes (fewer in a shorter movie), for the container's signature: read
    /// from the source as the demuxer's reads are (its limits apply), not handed to it.
    func head(_ count: Int) throws(MovieReadStop) -> [UInt8] {
        var head = [UInt8](repeating: 0, count: Int(min(Int64(count), size)))
        var filled = 0
        while filled < head.count {
            let got = head.withUnsafeMutableBytes { bytes -> Result<Int, MovieReadStop> in
                do throws(MovieReadStop) {
                    return .success(try take(at: Int64(filled), into: UnsafeMutableRawBufferPointer(rebasing: bytes[filled...])))
                } catch {
                    return .failure(error)
                }
            }
            filled += try got.get()
        }
        return head
    }

    private static func from(_ opaque: UnsafeMutableRawPointer?) -> MovieInput {
        Unmanaged<MovieInput>.fromOpaque(opaque!).takeUnretainedValue()
    }

    /// Bytes at `offset` from the source into `buffer` (as many as it has at hand), within the
    /// limits; records why it stopped.
    private func take(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws(MovieReadStop) -> Int {
        if expired() { throw .time }
        do throws(MovieReadStop) {
            return try source.read(at: offset, into: buffer, deadline: deadline) { (bytes) throws(MovieReadStop) in
                guard bytesFetched + Int64(bytes) <= maxBytes else { throw .bytes }
                bytesFetched += Int64(bytes)
            }
        } catch {
            stopped = stopped ?? error
            throw error
        }
    }

    private func read(into buffer: UnsafeMutablePointer<UInt8>?, size: Int) -> Int32 {
        guard let buffer, size > 0 else { return 0 }
        var count = Int(min(Int64(size), source.size - position))
        guard count > 0 else { return homepwner_averror_eof() }
        if let limit = maxBytesRead {
            guard bytesRead < limit else {
                stopped = stopped ?? .index(limit)
                return homepwner_averror_exit()
            }
            count = Int(min(Int64(count), limit - bytesRead))
        }
        let got: Int
        do {
            got = try take(at: position, into: UnsafeMutableRawBufferPointer(start: buffer, count: count))
        } catch {
            return homepwner_averror_exit()
        }
        position += Int64(got)
        bytesRead += Int64(got)
        return Int32(got)
    }

    private func seek(_ offset: Int64, whence: Int32) -> Int64 {
        let size = source.size
        if whence & homepwner_seek_size() != 0 { return size }
        let base: Int64 = switch whence & 3 {
        case 0: 0  // SEEK_SET
        case 1: position  // SEEK_CUR
        case 2: size  // SEEK_END
        default: -1
        }
        guard base >= 0 else { return -1 }
        let (target, overflow) = base.addingReportingOverflow(offset)
        guard !overflow, target >= 0, target <= size else { return -1 }
        position = target
        return target
    }
}
