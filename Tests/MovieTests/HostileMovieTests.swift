import Movie
import Testing
import TestSupport

/// Movies a poster must not be made from, each refused with its own kind and a message naming
/// what is wrong, before anything is decoded where a header tells: cut short, random bytes
/// behind an `ftyp`, a size claim over the pixel limit, no video, a codec not decoded, AVI,
/// and every limit of `MovieLimits`.
@Suite struct HostileMovieTests {
    /// The error `Movie.poster` throws for `movie` under `limits`; nil when it makes a poster.
    static func refusal(_ movie: [UInt8], limits: MovieLimits = MovieLimits()) -> MovieError? {
        do throws(MovieError) {
            _ = try Movie.poster(of: movie, limits: limits)
            return nil
        } catch {
            return error
        }
    }

    @Test func aMovieCutInHalfBeforeItsIndexIsDamaged() throws {
        let movie = try TestMovies.quadrants()
        let refused = Self.refusal(Array(movie.prefix(movie.count / 2)))
        let error = try #require(refused)
        #expect(error.kind == .damaged)
        #expect(error.message.contains("ISO BMFF/QuickTime container does not parse"))
        #expect(error.message.contains("no readable moov box"))
    }

    @Test func aFastStartMovieCutInHalfIsTruncatedByItsOwnIndex() throws {
        let movie = try TestMovies.quadrants(width: 640, height: 480, extra: ["-movflags", "+faststart"])
        let cut = Array(movie.prefix(movie.count / 2))
        let refused = Self.refusal(cut)
        let error = try #require(refused)
        #expect(error.kind == .truncated)
        #expect(error.message.contains("but the data has \(cut.count) bytes"))
        #expect(error.description.hasPrefix("movie is truncated: its index places samples of stream 0 up to byte "))
    }

    @Test func randomBytesAfterAnFtypBoxAreDamaged() throws {
        let movie = try TestMovies.quadrants()
        let ftypSize = Int(movie[0]) << 24 | Int(movie[1]) << 16 | Int(movie[2]) << 8 | Int(movie[3])
        var random = SplitMix64(seed: 31)
        let hostile = Array(movie.prefix(ftypSize)) + (0..<100_000).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        let refused = Self.refusal(hostile)
        let error = try #require(refused)
        #expect(error.kind == .damaged)
        #expect(error.message.contains("does not parse"))
    }

    @Test func aSampleEntryClaimingHugeDimensionsIsRefusedBeforeDecoding() throws {
        let movie = try TestMovies.withSampleEntrySize(try TestMovies.quadrants(), width: 65535, height: 65535)
        let refused = Self.refusal(movie)
        let error = try #require(refused)
        #expect(error.kind == .tooManyPixels(width: 65535, height: 65535, limit: 100_000_000))
        #expect(error.message == "its video stream 0 (h264) of 65535×65535 = 4294836225 pixels is over the limit of 100000000 pixels (--max-pixels)")
        // The same from the headers alone: what the worker weighs a job by.
        var probed: MovieError?
        do throws(MovieError) { _ = try Movie.info(of: movie) } catch { probed = error }
        #expect(probed == error)
    }

    @Test func aVideoOverALowerPixelLimitIsRefused() throws {
        let movie = try TestMovies.quadrants()
        let refused = Self.refusal(movie, limits: MovieLimits(maxPixels: 320 * 240 - 1))
        let error = try #require(refused)
        #expect(error.kind == .tooManyPixels(width: 320, height: 240, limit: 320 * 240 - 1))
    }

    @Test func aMovieWithoutVideoHasNoPoster() throws {
        let audio = try TestMovies.make(["-f", "lavfi", "-i", "sine=d=1", "-c:a", "aac", "-f", "mp4"])
        let refused = Self.refusal(audio)
        let error = try #require(refused)
        #expect(error.kind == .noVideoStream)
        #expect(error.message == "it has no video stream to take a poster from (its streams: audio aac)")
    }

    @Test func aCodecPostersAreNotDecodedFromIsNamed() throws {
        let movie = try TestMovies.quadrants(codec: "mpeg2video")
        let refused = Self.refusal(movie)
        let error = try #require(refused)
        #expect(error.kind == .unsupportedCodec("mpeg2video"))
        #expect(error.message.contains("its video stream 0 is mpeg2video; posters are decoded from av1, h264, hevc, mpeg4, vp8, vp9 only"))
    }

    @Test func anAVIIsNotAContainerPostersAreMadeFrom() throws {
        let movie = try TestMovies.quadrants(codec: "mpeg4", format: "avi")
        let refused = Self.refusal(movie)
        let error = try #require(refused)
        #expect(error.kind == .unsupportedContainer)
    }

    @Test func packetFrameByteAndTimeLimitsStopTheSearch() throws {
        let movie = try TestMovies.quadrants(seconds: 4, blackUntil: 3)
        let packetsRefusal = Self.refusal(movie, limits: MovieLimits(maxPackets: 5))
        let packets = try #require(packetsRefusal)
        #expect(packets.kind == .overLimit)
        #expect(packets.message.hasPrefix("no poster within 5 packets read (MovieLimits.maxPackets"))
        let framesRefusal = Self.refusal(movie, limits: MovieLimits(maxFrames: 3))
        let frames = try #require(framesRefusal)
        #expect(frames.message.hasPrefix("no poster within 3 decoded frames (MovieLimits.maxFrames"))
        let bytesRefusal = Self.refusal(movie, limits: MovieLimits(maxBytes: 1000))
        let bytes = try #require(bytesRefusal)
        #expect(bytes.message == "finding its poster read more than 1000 bytes (MovieLimits.maxBytes)")
        let timeRefusal = Self.refusal(movie, limits: MovieLimits(seconds: 0))
        let time = try #require(timeRefusal)
        #expect(time.message == "finding its poster took longer than its time budget (MovieLimits.seconds)")
    }
}
