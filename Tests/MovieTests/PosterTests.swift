import JPEG
import Movie
import Testing
import TestSupport

/// Posters of movies ffmpeg makes at test time: the frame at 1 s, past black frames, from a
/// short movie, in MP4, MOV (HEVC) and Matroska, upright in every display-matrix orientation;
/// checked by their pixels.
@Suite struct PosterTests {
    @Test func anMP4PosterIsTheColouredFrameAtOneSecondAfterABlackFirstSecond() throws {
        let movie = try TestMovies.quadrants(blackUntil: 1)
        let poster = try Movie.poster(of: movie)
        #expect(poster.info.codec == "h264")
        #expect(poster.info.container.hasPrefix("mov"))
        #expect((poster.info.width, poster.info.height, poster.info.orientation) == (320, 240, 1))
        #expect((poster.image.width, poster.image.height) == (320, 240))
        #expect(abs(poster.time - 1.0) < 0.001)
        #expect(!poster.skippedBlack && !poster.allBlack)
        #expect(MoviePixels.mismatches(poster.image) == [])
        #expect(poster.framesDecoded >= 1 && poster.framesDecoded <= 26)
    }

    @Test func aBlackFrameAtOneSecondIsPassedForTheFirstFrameThatIsNot() throws {
        let movie = try TestMovies.quadrants(seconds: 4, blackUntil: 2.2)
        let poster = try Movie.poster(of: movie)
        #expect(poster.skippedBlack)
        // The first frame at or past 2.2 s at 25 fps.
        #expect(abs(poster.time - 2.2) < 0.001)
        #expect(MoviePixels.mismatches(poster.image) == [])
    }

    @Test func anAllBlackMovieKeepsTheFrameAtOneSecond() throws {
        let movie = try TestMovies.quadrants(seconds: 2, blackUntil: 5)
        let poster = try Movie.poster(of: movie)
        #expect(poster.allBlack)
        #expect(abs(poster.time - 1.0) < 0.001)
        #expect(MoviePixels.mean(poster.image) < 5)
    }

    @Test func theBlackFramesLookedAtAreBounded() throws {
        let movie = try TestMovies.quadrants(seconds: 4, blackUntil: 3)
        // 10 black frames past 1 s, then the first one is kept.
        let poster = try Movie.poster(of: movie, limits: MovieLimits(maxBlackFrames: 10))
        #expect(poster.allBlack)
        #expect(abs(poster.time - 1.0) < 0.001)
        #expect(poster.framesDecoded <= 26 + 11)
    }

    @Test func aMovieShorterThanOneSecondGivesItsLastFrame() throws {
        let movie = try TestMovies.quadrants(seconds: 0.6, blackUntil: 0)
        let poster = try Movie.poster(of: movie)
        #expect(abs(poster.time - 0.56) < 0.001)  // frame 14 of 15 at 25 fps
        #expect(MoviePixels.mismatches(poster.image) == [])
    }

    @Test func aMOVInHEVCGivesItsPoster() throws {
        let movie = try TestMovies.quadrants(codec: "libx265", format: "mov")
        let demuxer = movie.withUnsafeBytes { Movie.demuxer(for: UnsafeRawBufferPointer(rebasing: $0.prefix(16))) }
        #expect(demuxer == "mov")
        let poster = try Movie.poster(of: movie)
        #expect(poster.info.codec == "hevc")
        #expect(MoviePixels.mismatches(poster.image) == [])
    }

    @Test func aMatroskaInVP9GivesItsPoster() throws {
        let movie = try TestMovies.quadrants(codec: "libvpx-vp9", format: "matroska", extra: ["-deadline", "realtime", "-cpu-used", "8"])
        let poster = try Movie.poster(of: movie)
        #expect(poster.info.codec == "vp9")
        #expect(poster.info.container.hasPrefix("matroska"))
        #expect(MoviePixels.mismatches(poster.image) == [])
    }

    @Test func aPortraitPhoneVideoIsTurnedUprightByItsDisplayMatrix() throws {
        // ffmpeg 5.1's rotate=90 writes the matrix (0 -1 / 1 0): shown turned a quarter
        // counter-clockwise, as ffmpeg itself shows it (its top on the left).
        let movie = try TestMovies.quadrants(rotate: 90)
        let poster = try Movie.poster(of: movie)
        #expect(poster.info.orientation == 8)
        #expect((poster.image.width, poster.image.height) == (240, 320))
        #expect(MoviePixels.mismatches(poster.image, orientation: 8) == [])
        // Red (the scene's top left) at the bottom left.
        let bottomLeft = poster.image.pixel(x: 60, y: 240 * poster.image.height / 320)
        #expect(bottomLeft.r > 200 && bottomLeft.g < 60 && bottomLeft.b < 60)
    }

    /// The display matrix's 2×2 part of each EXIF orientation (x' = a·x + c·y, y' = b·x + d·y).
    static let matrices: [(orientation: Int, a: Int32, b: Int32, c: Int32, d: Int32)] = [
        (1, 1, 0, 0, 1), (2, -1, 0, 0, 1), (3, -1, 0, 0, -1), (4, 1, 0, 0, -1),
        (5, 0, 1, 1, 0), (6, 0, 1, -1, 0), (7, 0, -1, -1, 0), (8, 0, -1, 1, 0),
    ]

    @Test(arguments: PosterTests.matrices.map(\.orientation))
    func everyQuarterTurnAndMirrorOfTheDisplayMatrixIsUndone(orientation: Int) throws {
        let m = Self.matrices[orientation - 1]
        let movie = try TestMovies.withMatrix(try TestMovies.quadrants(), m.a, m.b, m.c, m.d)
        let poster = try Movie.poster(of: movie)
        #expect(poster.info.orientation == orientation)
        #expect((poster.image.width, poster.image.height) == (orientation >= 5 ? (240, 320) : (320, 240)))
        #expect(MoviePixels.mismatches(poster.image, orientation: orientation) == [])
    }

    @Test func thumbnailsOfAMovieAreJPEGsOfItsPosterAtEachSize() throws {
        let movie = try TestMovies.quadrants(width: 640, height: 480, rotate: 90)
        let outputs = try Thumbnailer().thumbnails(ofMovie: movie, sizes: [64, 256, 1024].map { Thumbnailer.Target(longestEdge: $0) })
        #expect(outputs.map { "\($0.width)x\($0.height)" } == ["48x64", "192x256", "480x640"])
        for output in outputs {
            #expect(output.data.starts(with: [0xFF, 0xD8]))
            let decoded = try JPEG.decode(output.data)
            #expect((decoded.width, decoded.height) == (output.width, output.height))
            #expect(MoviePixels.mismatches(decoded, orientation: 8, tolerance: 48) == [])
        }
        let bytes = try Thumbnailer().workingBytes(ofMovie: movie, sizes: [Thumbnailer.Target(longestEdge: 1024)])
        // The read buffer, the demuxer's index (what it read to open this small movie: all of
        // it), ten frames, the RGB poster and its upright copy, the 1024 (no larger than the poster).
        let index = try Movie.info(of: movie).indexBytes
        #expect(index > 0 && index <= Int64(movie.count))
        #expect(bytes == (64 << 10) + Int(index) * Movie.indexMemoryPerByte + 640 * 480 * 21 + 480 * 640 * 3)
    }
}
