import Synchronization

/// Where the bytes libavformat reads come from (`MovieInput`'s read callback is the one reader
/// of both): a movie in memory (`MemoryMovieSource`), or one read in ranges from where it is
/// kept (`RangedMovieSource`), so a movie larger than the memory it may use still gets a poster.
protocol MovieSource: AnyObject {
    /// The movie's size in bytes (what `AVSEEK_SIZE` answers).
    var size: Int64 { get }

    /// Copies bytes from `offset` (0 ≤ `offset` < `size`) into `buffer`, as many as fit and
    /// the source has at hand (at least one), and returns how many. Bytes it takes from where
    /// the movie is kept are first handed to `admit` (`MovieLimits.maxBytes`), which throws to
    /// refuse them; a fetch that has not returned by `deadline` is stopped for `.time`.
    func read(
        at offset: Int64, into buffer: UnsafeMutableRawBufferPointer, deadline: ContinuousClock.Instant,
        admit: (Int) throws(MovieReadStop) -> Void
    ) throws(MovieReadStop) -> Int
}

/// Why a read of a movie's source was refused: a limit of `MovieLimits`, or the bytes could not
/// be read from where the movie is kept.
enum MovieReadStop: Error, Equatable {
    /// `MovieLimits.maxBytes`: more bytes would be taken from the source.
    case bytes
    /// `MovieLimits.maxIndexBytes` (this many bytes): opening the container would read more.
    case index(Int64)
    /// `MovieLimits.seconds`: the time budget is spent.
    case time
    /// A fetch failed, as it says.
    case failed(String)
}

/// A movie in memory: each read copies from it and takes those bytes from the limit.
final class MemoryMovieSource: MovieSource {
    private let data: UnsafeRawBufferPointer

    init(_ data: UnsafeRawBufferPointer) {
        self.data = data
    }

    var size: Int64 { Int64(data.count) }

    func read(
        at offset: Int64, into buffer: UnsafeMutableRawBufferPointer, deadline: ContinuousClock.Instant,
        admit: (Int) throws(MovieReadStop) -> Void
    ) throws(MovieReadStop) -> Int {
        let count = min(buffer.count, data.count - Int(offset))
        try admit(count)
        buffer.baseAddress!.copyMemory(from: data.baseAddress!.advanced(by: Int(offset)), byteCount: count)
        return count
    }
}

/// What a `RangedMovieSource.Fetch` throws when the deadline it was given passed before the
/// bytes came: the poster search stops for its time budget (`MovieLimits.seconds`).
public struct MovieFetchTimedOut: Error, Sendable {
    public init() {}
}

/// A movie read in ranges from where it is kept (the image service's ranged GetImage), never
/// whole: aligned blocks of `blockBytes` fetched as libavformat's reads reach them, the last
/// `cachedBlocks` of them kept (least recently used dropped first), so what it holds is at
/// most `cacheBytes` whatever the movie's size. A poster needs the container's index (an MP4's
/// `moov`, first or last) and the first seconds of media: a few blocks of a movie of gigabytes.
///
/// `fetch` is called on the thread that runs the demuxer and returns the bytes asked for, all
/// of them (blocking that thread until they come, or throwing); each block fetched counts
/// whole against `MovieLimits.maxBytes`, and again when it is fetched again after it left the
/// cache. Used by one demuxer at a time (the worker opens the movie for its headers, then for
/// its poster, one after the other); the cache outlives both, so the second finds the index
/// read by the first.
public final class RangedMovieSource: MovieSource, Sendable {
    /// Fetches `count` bytes at `offset`, returning before `deadline` or throwing
    /// `MovieFetchTimedOut`; any other error is the read's failure, told in
    /// `MovieError.Kind.unreadable`.
    public typealias Fetch = @Sendable (_ offset: Int64, _ count: Int, _ deadline: ContinuousClock.Instant) throws -> [UInt8]

    /// The block read at a time: the image service checks a ranged read's 1 MiB blocks whole,
    /// so an aligned block is read from its disk and checked once.
    public static let defaultBlockBytes = 1 << 20
    /// The blocks kept: the index's, and the media's of each stream as the demuxer alternates
    /// between them (video and audio stored apart), with room to spare.
    public static let defaultCachedBlocks = 4

    public let size: Int64
    public let blockBytes: Int
    public let cachedBlocks: Int
    private let fetch: Fetch
    private let state = Mutex(State())

    private struct State {
        /// The blocks held, least recently used first.
        var blocks: [(index: Int64, bytes: [UInt8])] = []
        var fetches = 0
        var bytesFetched: Int64 = 0
    }

    /// A source of the `size` bytes `fetch` reads, in blocks of `blockBytes`, `cachedBlocks` of
    /// them kept.
    public init(
        size: Int64, blockBytes: Int = RangedMovieSource.defaultBlockBytes, cachedBlocks: Int = RangedMovieSource.defaultCachedBlocks,
        fetch: @escaping Fetch
    ) {
        self.size = max(0, size)
        self.blockBytes = max(1, blockBytes)
        self.cachedBlocks = max(1, cachedBlocks)
        self.fetch = fetch
    }

    /// The most the cache holds.
    public var cacheBytes: Int { blockBytes * cachedBlocks }

    /// The blocks fetched so far, and their bytes (every fetch counted, a block fetched again
    /// after it left the cache too).
    public var fetched: (blocks: Int, bytes: Int64) { state.withLock { ($0.fetches, $0.bytesFetched) } }

    func read(
        at offset: Int64, into buffer: UnsafeMutableRawBufferPointer, deadline: ContinuousClock.Instant,
        admit: (Int) throws(MovieReadStop) -> Void
    ) throws(MovieReadStop) -> Int {
        let index = offset / Int64(blockBytes), start = index * Int64(blockBytes)
        let held = state.withLock { state -> [UInt8]? in
            guard let at = state.blocks.firstIndex(where: { $0.index == index }) else { return nil }
            let block = state.blocks.remove(at: at)
            state.blocks.append(block)
            return block.bytes
        }
        let block: [UInt8]
        if let held {
            block = held
        } else {
            let count = Int(min(Int64(blockBytes), size - start))
            try admit(count)
            let bytes: [UInt8]
            do {
                bytes = try fetch(start, count, deadline)
            } catch is MovieFetchTimedOut {
                throw MovieReadStop.time
            } catch {
                throw MovieReadStop.failed("reading bytes \(start)–\(start + Int64(count) - 1) of its \(size) failed: \(error)")
            }
            guard bytes.count == count else {
                throw MovieReadStop.failed("reading bytes \(start)–\(start + Int64(count) - 1) of its \(size) returned \(bytes.count) bytes")
            }
            block = bytes
            state.withLock { state in
                state.fetches += 1
                state.bytesFetched += Int64(count)
                state.blocks.append((index, bytes))
                if state.blocks.count > cachedBlocks { state.blocks.removeFirst(state.blocks.count - cachedBlocks) }
            }
        }
        let from = Int(offset - start)
        let count = min(buffer.count, block.count - from)
        block.withUnsafeBytes { bytes in
            buffer.baseAddress!.copyMemory(from: bytes.baseAddress!.advanced(by: from), byteCount: count)
        }
        return count
    }
}
