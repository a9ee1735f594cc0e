import Movie
import Synchronization
import Testing
import TestSupport

/// Posters of movies read in ranges (`RangedMovieSource`), as the thumbnail worker reads them
/// from the image service: only aligned 1 MiB blocks are fetched, as the demuxer reaches them,
/// a few kept; the poster is the one made from the bytes in memory; every fetch counts against
/// `MovieLimits.maxBytes`, the container's opening against `maxIndexBytes`; a read that fails
/// or does not come in time is named.
@Suite struct RangedPosterTests {
    /// A source over `movie` whose fetches are recorded (offset and count each).
    final class Recorded: Sendable {
        let movie: [UInt8]
        let fetches = Mutex<[(offset: Int64, count: Int)]>([])

        init(_ movie: [UInt8]) {
            self.movie = movie
        }

        func source(cachedBlocks: Int = RangedMovieSource.defaultCachedBlocks) -> RangedMovieSource {
            RangedMovieSource(size: Int64(movie.count), cachedBlocks: cachedBlocks) { [self] offset, count, _ in
                fetches.withLock { $0.append((offset, count)) }
                return Array(movie[Int(offset)..<Int(offset) + count])
            }
        }

        var fetched: [(offset: Int64, count: Int)] { fetches.withLock { $0 } }
    }

    /// The error `body` throws; nil when it returns.
    static func refusal(_ body: () throws(MovieError) -> Void) -> MovieError? {
        do throws(MovieError) {
            try body()
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: [false, true])
    func aLargeMovieGetsTheSamePosterFromAFewBlocksWithItsIndexLastOrFirst(faststart: Bool) throws {
        let movie = try TestMovies.noisyQuadrants(seconds: 4, extra: faststart ? ["-movflags", "+faststart"] : [])
        #expect(movie.count > 24 << 20)
        let boxes = try TestMovies.topLevelBoxes(movie).map(\.type)
        #expect(faststart ? boxes.firstIndex(of: "moov")! < boxes.firstIndex(of: "mdat")! : boxes.last == "moov", "\(boxes)")
        let recorded = Recorded(movie)
        let source = recorded.source()
        let info = try Movie.info(of: source)
        #expect((info.width, info.height, info.codec) == (640, 480, "h264"))
        #expect(info.indexBytes > 0 && info.indexBytes < 1 << 20, "\(info.indexBytes)")
        let poster = try Movie.poster(of: source)
        let inMemory = try Movie.poster(of: movie)
        #expect(poster.image.pixels == inMemory.image.pixels)
        #expect(abs(poster.time - 1.0) < 0.001)
        #expect(MoviePixels.mismatches(poster.image, tolerance: 48) == [])
        // Every fetch an aligned block, whole (the last one to the end).
        let fetched = recorded.fetched
        let block = Int64(RangedMovieSource.defaultBlockBytes)
        #expect(fetched.allSatisfy { $0.offset % block == 0 && Int64($0.count) == min(block, Int64(movie.count) - $0.offset) })
        // The index and the first second (26 frames of about 330 KB, from the key frame at 0)
        // of a movie of more than 24 MiB: about a third of it.
        let bytes = fetched.reduce(0) { $0 + $1.count }
        #expect(bytes < movie.count / 2, "fetched \(bytes) of \(movie.count) bytes")
        #expect(poster.bytesRead <= Int64(bytes) && poster.bytesRead > 4 << 20, "\(poster.bytesRead)")
        #expect(source.fetched.bytes == Int64(bytes) && source.fetched.blocks == fetched.count)
    }

    @Test func aMovieInOneBlockIsFetchedOnceForItsHeadersAndItsPoster() throws {
        let movie = try TestMovies.quadrants()
        #expect(movie.count < RangedMovieSource.defaultBlockBytes)
        let recorded = Recorded(movie)
        let source = recorded.source()
        _ = try Movie.info(of: source)
        let poster = try Movie.poster(of: source)
        #expect(MoviePixels.mismatches(poster.image) == [])
        #expect(recorded.fetched.map(\.offset) == [0])
        #expect(recorded.fetched.map(\.count) == [movie.count])
        // The poster's own reads all came from the cache.
        #expect(poster.bytesRead == 0)
    }

    @Test func theBlocksFetchedAreBoundedByMaxBytesWithTheIndexLast() throws {
        // The first second alone is about 8 MB: past 4 MiB the next block is refused.
        let movie = try TestMovies.noisyQuadrants(seconds: 3)
        let recorded = Recorded(movie)
        let refused = Self.refusal { () throws(MovieError) in _ = try Movie.poster(of: recorded.source(), limits: MovieLimits(maxBytes: 4 << 20)) }
        let error = try #require(refused)
        #expect(error.kind == .overLimit)
        #expect(error.description == "movie is over a poster limit: finding its poster read more than 4194304 bytes (MovieLimits.maxBytes)")
        let bytes = recorded.fetched.reduce(0) { $0 + $1.count }
        #expect(bytes <= 4 << 20 && bytes > 2 << 20, "fetched \(bytes)")
    }

    @Test func aCacheOfOneBlockRefetchesWhatItDroppedAndTheLimitCountsEveryFetch() throws {
        let movie = try TestMovies.noisyQuadrants(seconds: 2)
        let four = Recorded(movie), one = Recorded(movie)
        let poster = try Movie.poster(of: four.source())
        let again = try Movie.poster(of: one.source(cachedBlocks: 1))
        #expect(again.image.pixels == poster.image.pixels)
        // With one block held, the index's block and the media's take turns.
        #expect(one.fetched.count > four.fetched.count, "\(one.fetched.count) fetches, \(four.fetched.count) with four blocks")
        #expect(again.bytesRead == Int64(one.fetched.reduce(0) { $0 + $1.count }))
        #expect(Set(one.fetched.map(\.offset)).count < one.fetched.count)
    }

    @Test func boxesReadThroughBeforeTheIndexAreBoundedByMaxIndexBytes() throws {
        // 8 MiB of 32 KiB `free` boxes before a `moov` at the end: each is read through, not
        // seeked past, so opening the container reads all of them first.
        let movie = try TestMovies.withFreeBoxesBeforeIndex(try TestMovies.quadrants(), count: 256, boxBytes: 32 << 10)
        let recorded = Recorded(movie)
        let refused = Self.refusal { () throws(MovieError) in _ = try Movie.info(of: recorded.source(), limits: MovieLimits(maxIndexBytes: 2 << 20)) }
        let error = try #require(refused)
        #expect(error.kind == .indexOverLimit(limit: 2 << 20))
        #expect(error.description == "movie is over the index limit: opening its container read more than 2097152 bytes before its index was whole (MovieLimits.maxIndexBytes: the demuxer holds the index in memory while the poster is found)")
        #expect(recorded.fetched.reduce(0) { $0 + $1.count } <= 3 << 20)
        // Under the default 64 MiB the same movie opens, having read through them.
        let info = try Movie.info(of: Recorded(movie).source())
        #expect(info.indexBytes > 8 << 20, "\(info.indexBytes)")
        // The same limit holds for a movie in memory.
        var inMemory: MovieError?
        do throws(MovieError) { _ = try Movie.poster(of: movie, limits: MovieLimits(maxIndexBytes: 2 << 20)) } catch { inMemory = error }
        #expect(inMemory == error)
    }

    @Test func aReadThatFailsIsNamedAndOneThatDoesNotComeInTimeIsTheTimeBudget() throws {
        // Its index first: the first block holds it, the media goes on into the second.
        let movie = try TestMovies.noisyQuadrants(seconds: 2, extra: ["-movflags", "+faststart"])
        struct Refused: Error, CustomStringConvertible {
            var description: String { "14 UNAVAILABLE: the image service is restarting" }
        }
        // The first block reads; the second does not.
        let failing = RangedMovieSource(size: Int64(movie.count)) { offset, count, _ in
            guard offset == 0 else { throw Refused() }
            return Array(movie[0..<count])
        }
        let failed = Self.refusal { () throws(MovieError) in _ = try Movie.poster(of: failing) }
        let error = try #require(failed)
        #expect(error.kind == .unreadable)
        #expect(error.description == "movie is not readable: reading bytes 1048576–2097151 of its \(movie.count) failed: 14 UNAVAILABLE: the image service is restarting")
        let short = RangedMovieSource(size: Int64(movie.count)) { offset, count, _ in Array(movie[Int(offset)..<Int(offset) + count - 1]) }
        let shortened = Self.refusal { () throws(MovieError) in _ = try Movie.info(of: short) }
        #expect(shortened?.description == "movie is not readable: reading bytes 0–1048575 of its \(movie.count) returned 1048575 bytes")
        let late = RangedMovieSource(size: Int64(movie.count)) { offset, count, _ in
            guard offset == 0 else { throw MovieFetchTimedOut() }
            return Array(movie[0..<count])
        }
        let timedOut = Self.refusal { () throws(MovieError) in _ = try Movie.poster(of: late) }
        #expect(timedOut?.description == "movie is over a poster limit: finding its poster took longer than its time budget (MovieLimits.seconds)")
    }
}
