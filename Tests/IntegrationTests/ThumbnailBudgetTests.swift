import Movie
import Proto
import Synchronization
import Testing
import TestSupport
@testable import ThumbnailWorker
import WorkerRuntime

/// The thumbnail worker's memory budget applies before it reads an original (issue 27, defect
/// 10): it reads only the segments a thumbnail is made from (metadata it does not use is
/// skipped by its length, unread), and an original whose needed bytes alone exceed the budget
/// fails its job permanently, naming the limit, without being read.
@Suite struct ThumbnailBudgetTests {
    typealias Service = ThumbnailJobHandlerTests.Service

    /// A handler with one slot and `budgetBytes`, whose maker records the size of each JPEG it
    /// is given (what the worker held of the original).
    static func handler(_ service: Service, budgetBytes: Int, given: Shared<[Int]>) -> ThumbnailJobHandler {
        ThumbnailJobHandler(
            connection: service.connection, slots: ComputeSlots(count: 1, budgetBytes: budgetBytes),
            weigher: ThumbnailWorkerHost.workingBytes
        ) { jpeg, sizes in
            given.withLock { $0.append(jpeg.count) }
            return try ThumbnailWorkerHost.makeThumbnails(jpeg, sizes)
        }
    }

    /// `photo` with `padding` bytes of XMP (APP1) before its frame, stored in `service`.
    static func padded(_ photo: [UInt8], _ padding: Int, in service: Service) async throws -> (bytes: [UInt8], key: String) {
        let padded = JPEGSplice.inserting(JPEGSplice.metadata(totalBytes: padding), beforeFrameOf: photo)
        return (padded, try await service.put(padded).key)
    }

    @Test func metadataPaddingIsSkippedUnreadSoAPaddedOriginalIsMadeWithinTheBudget() async throws {
        let service = try Service(maxMessageBytes: 64 << 20)
        defer { service.stop() }
        // 24 MB before the frame: twelve times the worker's budget.
        let photo = try Fixtures.orientationPhoto("Landscape_6.jpg")
        let (padded, key) = try await Self.padded(photo, 24_000_000, in: service)
        let given = Shared<[Int]>([])
        let handler = Self.handler(service, budgetBytes: 2 << 20, given: given)
        let made = try ThumbnailResult(serializedBytes: try await handler.run(Service.job(key, sizes: [64, 256])))
        // What the maker was given is the photo's own segments, not the padding.
        #expect(given.value.count == 1)
        #expect(given.value.allSatisfy { $0 <= photo.count }, "the maker was given \(given.value) bytes of a \(padded.count)-byte original")
        // And the thumbnails are those of the original, the EXIF orientation and all.
        let expected = try ThumbnailWorkerHost.makeThumbnails(padded, [64, 256])
        #expect(made.thumbnails.map(\.data) == expected.map(\.data))
        #expect(made.thumbnails.map { [$0.width, $0.height] } == expected.map { [$0.width, $0.height] })
    }

    @Test func anOriginalWhoseScansExceedTheBudgetFailsPermanentlyNamingTheLimitUnread() async throws {
        let service = try Service(maxMessageBytes: 64 << 20)
        defer { service.stop() }
        let (padded, key) = try await Self.padded(try Fixtures.orientationPhoto("Landscape_1.jpg"), 8_000_000, in: service)
        let given = Shared<[Int]>([])
        let handler = Self.handler(service, budgetBytes: 100_000, given: given)
        var failure: JobFailure?
        do {
            _ = try await handler.run(Service.job(key, sizes: [64]))
        } catch {
            failure = error as? JobFailure
        }
        let message = failure?.message ?? ""
        #expect(failure?.permanent == true, "\(String(describing: failure))")
        #expect(message.contains("image \(key)"), "\(message)")
        #expect(message.contains("100000 bytes (--memory-mb)"), "\(message)")
        #expect(message.contains("of its \(padded.count) bytes"), "\(message)")
        #expect(given.value.isEmpty, "the maker ran on \(given.value) bytes")
    }

    @Test func aMovieJobIsWeighedByItsBlocksAndItsDecodeNotByItsSize() throws {
        let movies = MovieThumbnails()
        var costs: [Int] = []
        for seconds in [1.0, 4.0] {
            let movie = try TestMovies.noisyQuadrants(seconds: seconds)
            let source = RangedMovieSource(size: Int64(movie.count)) { offset, count, _ in Array(movie[Int(offset)..<Int(offset) + count]) }
            costs.append(movies.workingBytes(try Movie.info(of: source), source: source, sizes: [64, 256]))
        }
        // 4 MiB of blocks, the read buffer, a 640×480 decode (6.4 MB) and a small index, for a
        // movie of 8 MB and one of 33 MB alike.
        #expect(costs.allSatisfy { $0 > 10 << 20 && $0 < 13 << 20 }, "\(costs)")
        #expect(abs(costs[1] - costs[0]) < 1 << 20, "\(costs)")
    }

    @Test func aMovieWhoseIndexIsOverItsShareOfTheBudgetFailsForGoodNamingTheBudget() async throws {
        let service = try Service(maxMessageBytes: 64 << 20)
        defer { service.stop() }
        // 8 MiB of small boxes before its index, read through to reach it: over the 1.3 MiB
        // (a twelfth) an index may take of a budget of 16 MiB.
        let movie = try TestMovies.withFreeBoxesBeforeIndex(try TestMovies.quadrants(), count: 256, boxBytes: 32 << 10)
        let key = try await service.put(movie).key
        let handler = ThumbnailJobHandler(
            connection: service.connection, slots: ComputeSlots(count: 1, budgetBytes: 16 << 20), maker: ThumbnailWorkerHost.makeThumbnails)
        var failure: JobFailure?
        do {
            _ = try await handler.run(Service.job(key, sizes: [64]))
        } catch {
            failure = error as? JobFailure
        }
        #expect(failure?.permanent == true, "\(String(describing: failure))")
        #expect(
            failure?.message
                == "image \(key) cannot be made into thumbnails within this worker's memory budget: movie is over the index limit: opening its container read more than 1398101 bytes before its index was whole (MovieLimits.maxIndexBytes: the demuxer holds the index in memory while the poster is found); this worker allows 1/12 of its budget of 16777216 bytes (--memory-mb)")
    }
}
