import Foundation
import JPEG
import Proto
import RPC
import RPCTestSupport
import Runtime
import Testing
import TestSupport

/// Movies end to end, through the image-service and thumbnail-worker executables: made at test
/// time by ffmpeg, stored untouched, their poster frames made into thumbnails by the worker
/// (upright, past a black first second, of a short movie) and served by GetRendition; hostile
/// movies fail their jobs for good, naming what is wrong, and the worker keeps working.
@Suite struct MovieOriginalTests {
    static let patient = CallOptions(timeoutMilliseconds: 30_000)

    /// A movie of the test: what it is stored as, the scene's orientation in its poster, and
    /// its poster's size at 256.
    struct Case {
        let name: String
        let movie: [UInt8]
        let type: String
        let orientation: Int
        let size: [Int32]
    }

    /// The image service (thumbnails at 64 and 256) and a thumbnail worker given `workerArguments`
    /// too, and a client.
    static func launch(
        _ folder: String, workerArguments: [String] = [], workerEnvironment: [String: String] = [:]
    ) throws -> (client: RPCClient, worker: Process, stop: () -> Void) {
        let rpc = "ipc://\(folder)/images.sock", health = "ipc://\(folder)/worker.sock"
        let service = try ExecutableTests.launch(
            "image-service",
            ["--rpc", rpc, "--events", "ipc://\(folder)/events.sock", "--data-dir", folder + "/data", "--thumbnail-sizes", "64,256"],
            endpoint: rpc)
        let worker = try ExecutableTests.launch(
            "thumbnail-worker", ["--rpc", health, "--image-service", rpc, "--concurrency", "2"] + workerArguments, endpoint: health,
            environment: workerEnvironment)
        let client = try RPCClient(context: ExecutableTests.context, endpoint: rpc, configuration: .init(connectWaitMilliseconds: 10_000))
        return (client, worker.process, {
            client.close()
            for process in [worker.process, service.process] where process.isRunning { process.terminate() }
        })
    }

    /// The dead jobs of the thumbnails queue once there are `count` (or 90 s went by).
    static func deadJobs(_ client: RPCClient, count: Int) async throws -> [Job] {
        var list = ListJobsRequest()
        list.queue = "thumbnails"
        list.state = .dead
        var dead: [Job] = []
        let end = ContinuousClock.now + .seconds(90)
        while dead.count < count && ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(100))
            dead = try await client.call(JobQueueRPC.listJobs, list, options: patient).jobs
        }
        return dead
    }

    static func put(_ data: [UInt8], _ client: RPCClient) async throws -> ImageInfo {
        var put = PutImageRequest()
        put.data = data
        put.ownerKey = "item-movie"
        return try await client.call(ImageServiceRPC.putImage, put, options: patient)
    }

    static func thumbnails(_ client: RPCClient, count: Int) async throws -> [ImageInfo] {
        var list = ListImagesRequest()
        list.kind = .thumbnail
        list.pageSize = 100
        let end = ContinuousClock.now + .seconds(90)
        var thumbnails: [ImageInfo] = []
        while thumbnails.count < count && ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(100))
            thumbnails = try await client.call(ImageServiceRPC.listImages, list, options: patient).images
        }
        return thumbnails
    }

    static func pixels(_ key: String, _ client: RPCClient) async throws -> RGBImage {
        var get = GetImageRequest()
        get.key = key
        return try JPEG.decode(try await client.call(ImageServiceRPC.getImage, get, options: patient).data)
    }

    @Test func moviesGetUprightPosterThumbnailsFromTheWorkerAndRenditionsFromThem() async throws {
        let folder = try ExecutableTests.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (client, _, stop) = try Self.launch(folder)
        defer { stop() }
        let movies = [
            Case(name: "mp4, black first second", movie: try TestMovies.quadrants(), type: "video/mp4", orientation: 1, size: [256, 192]),
            Case(
                name: "mov hevc", movie: try TestMovies.quadrants(codec: "libx265", format: "mov"), type: "video/quicktime", orientation: 1,
                size: [256, 192]),
            Case(
                name: "portrait", movie: try TestMovies.quadrants(rotate: 90), type: "video/mp4", orientation: 8,
                size: [192, 256]),
            Case(name: "short", movie: try TestMovies.quadrants(seconds: 0.5, blackUntil: 0), type: "video/mp4", orientation: 1, size: [256, 192]),
        ]
        var stored: [ImageInfo] = []
        for each in movies {
            let name = each.name, movie = each.movie, type = each.type
            let info = try await Self.put(movie, client)
            #expect(info.mediaType == .movie && info.contentType == type, "\(name): \(info)")
            var get = GetImageRequest()
            get.key = info.key
            #expect(try await client.call(ImageServiceRPC.getImage, get, options: Self.patient).data == movie, "\(name): stored untouched")
            stored.append(info)
        }
        let thumbnails = try await Self.thumbnails(client, count: 2 * movies.count)
        #expect(thumbnails.count == 2 * movies.count)
        for index in stored.indices {
            let info = stored[index], name = movies[index].name, orientation = movies[index].orientation, size = movies[index].size
            let mine = thumbnails.filter { $0.parentKey == info.key }.sorted { $0.width * $0.height < $1.width * $1.height }
            #expect(mine.map { [$0.width, $0.height] }.last == size, "\(name): \(mine.map { [$0.width, $0.height] })")
            for thumbnail in mine {
                #expect(thumbnail.contentType == "image/jpeg" && thumbnail.orientation <= 1)
                let image = try await Self.pixels(thumbnail.key, client)
                let off = MoviePixelChecks.mismatches(image, orientation: orientation)
                #expect(off.isEmpty, "\(name) \(image.width)×\(image.height): \(off)")
            }
            // A rendition of a poster size is that poster; another is rendered from the largest.
            var rendition = GetRenditionRequest()
            rendition.key = info.key
            rendition.width = 256
            rendition.height = 256
            let served = try await client.call(ImageServiceRPC.getRendition, rendition, options: Self.patient)
            let servedKey = served.info?.key ?? "", servedSource = served.source?.key ?? "", largestKey = mine.last?.key ?? "none"
            #expect(servedKey == largestKey, "\(name)")
            #expect(servedSource == info.key, "\(name)")
            rendition.width = 100
            rendition.height = 100
            rendition.mode = .fill
            let filled = try await client.call(ImageServiceRPC.getRendition, rendition, options: Self.patient)
            let filledInfo = filled.info ?? ImageInfo(), filledSource = filled.source ?? ImageInfo(), filledData = filled.data
            #expect(filledInfo.key == info.key && filledInfo.kind == .thumbnail && filledInfo.parentKey == info.key, "\(name)")
            #expect(filledInfo.width == 100 && filledInfo.height == 100 && filledSource.mediaType == .movie, "\(name)")
            let image = try JPEG.decode(filledData)
            #expect((image.width, image.height) == (100, 100))
        }
    }

    @Test func hostileMoviesFailTheirJobsForGoodNamingTheProblemAndTheWorkerKeepsWorking() async throws {
        let folder = try ExecutableTests.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (client, _, stop) = try Self.launch(folder)
        defer { stop() }
        let good = try TestMovies.quadrants()
        let ftyp = Int(good[0]) << 24 | Int(good[1]) << 16 | Int(good[2]) << 8 | Int(good[3])
        var random = SplitMix64(seed: 3)
        let cases: [(String, [UInt8], String)] = [
            ("cut in half", Array(good.prefix(good.count / 2)), "movie is damaged: its ISO BMFF/QuickTime container does not parse"),
            ("random after ftyp", Array(good.prefix(ftyp)) + (0..<50_000).map { _ in UInt8(truncatingIfNeeded: random.next()) },
             "movie is damaged: its ISO BMFF/QuickTime container does not parse"),
            ("65535×65535", try TestMovies.withSampleEntrySize(good, width: 65535, height: 65535),
             "movie is over the pixel limit: its video stream 0 (h264) of 65535×65535 = 4294836225 pixels is over the limit of 100000000 pixels (--max-pixels)"),
            ("audio only", try TestMovies.make(["-f", "lavfi", "-i", "sine=d=1", "-c:a", "aac", "-f", "mp4"]),
             "movie is without a video stream: it has no video stream to take a poster from (its streams: audio aac)"),
        ]
        var keys: [String: String] = [:]
        for (name, data, _) in cases {
            let info = try await Self.put(data, client)
            #expect(info.mediaType == .movie, "\(name)")
            keys[info.key] = name
        }
        let dead = try await Self.deadJobs(client, count: cases.count)
        #expect(dead.count == cases.count)
        for job in dead {
            let key = try ThumbnailJob(serializedBytes: job.payload).imageKey
            let name = try #require(keys[key])
            let message = try #require(cases.first { $0.0 == name }).2
            #expect(job.lastError.hasPrefix("image \(key) cannot be made into thumbnails: \(message)"), "\(name): \(job.lastError)")
            #expect(job.errors.count == 1, "\(name): failed for good at its first attempt")
            var rendition = GetRenditionRequest()
            rendition.key = key
            rendition.width = 64
            rendition.height = 64
            let refused = await rpcError { try await client.call(ImageServiceRPC.getRendition, rendition, options: Self.patient) }
            #expect(refused?.code == .failedPrecondition && refused?.message.contains("a movie whose poster has not been made yet") == true)
        }
        // The worker is still there: a good movie gets its posters.
        let info = try await Self.put(good, client)
        let thumbnails = try await Self.thumbnails(client, count: 2)
        #expect(thumbnails.filter { $0.parentKey == info.key }.count == 2)
    }
}

/// Movies larger than the worker's whole memory budget: their posters are found over ranged
/// reads of a few 1 MiB blocks, never holding the movie.
extension MovieOriginalTests {
    @Test(.enabled(
        if: !Sanitizer.any,
        "the worker's peak RSS is what this checks, and a sanitizer's shadow memory and allocator add to it"))
    func moviesLargerThanTheWorkersMemoryBudgetGetPostersWithTheIndexLastOrFirst() async throws {
        let folder = try ExecutableTests.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // About 40 MB each: two and a half times the budget of 16 MB.
        let indexLast = try TestMovies.noisyQuadrants(seconds: 5)
        let indexFirst = try TestMovies.make(["-i", "{input}", "-c", "copy", "-movflags", "+faststart", "-f", "mp4"], input: indexLast)
        #expect(try TestMovies.topLevelBoxes(indexLast).last?.type == "moov")
        #expect(try TestMovies.topLevelBoxes(indexFirst).map(\.type).prefix(2).contains("moov"))
        let (client, worker, stop) = try Self.launch(folder, workerArguments: ["--memory-mb", "16"])
        defer { stop() }
        // First a small movie: FFmpeg's libraries loaded (some 30 MB of them resident) and a
        // poster decoded, the worker's peak is what a movie costs it without its bytes.
        let small = try await Self.put(try TestMovies.quadrants(), client)
        #expect(try await Self.thumbnails(client, count: 2).filter { $0.parentKey == small.key }.count == 2)
        let before = ProcessMemory.of(pid: worker.processIdentifier).peakResidentBytes
        var keys: [String] = []
        for movie in [indexLast, indexFirst] {
            #expect(movie.count > 32 << 20)
            let info = try await Self.put(movie, client)
            #expect(info.mediaType == .movie && info.contentType == "video/mp4" && info.sizeBytes == Int64(movie.count))
            keys.append(info.key)
        }
        let thumbnails = try await Self.thumbnails(client, count: 6)
        let failed = thumbnails.count == 6 ? [] : try await Self.deadJobs(client, count: 1).map(\.lastError)
        #expect(thumbnails.count == 6, "\(failed)")
        for (key, name) in zip(keys, ["moov last", "moov first"]) {
            let mine = thumbnails.filter { $0.parentKey == key }.sorted { $0.width < $1.width }
            #expect(mine.map { [$0.width, $0.height] } == [[64, 48], [256, 192]], "\(name)")
            for thumbnail in mine {
                let image = try await Self.pixels(thumbnail.key, client)
                let off = MoviePixelChecks.mismatches(image, orientation: 1)
                #expect(off.isEmpty, "\(name) \(image.width)×\(image.height): \(off)")
            }
        }
        // Never held whole: two movies of 40 MB raised the worker's peak by far less than one
        // (their blocks, 4 MiB each at most, and a 640×480 decode)…
        let after = ProcessMemory.of(pid: worker.processIdentifier).peakResidentBytes
        #expect(before > 0 && after < before + (16 << 20), "thumbnail-worker's peak resident memory: \(before >> 20) MiB, then \(after >> 20) MiB")
        // …nor read whole: their index and first second (about 9 MB each) in 1 MiB blocks.
        let health = try RPCClient(context: ExecutableTests.context, endpoint: "ipc://\(folder)/worker.sock")
        defer { health.close() }
        let figures = try await health.call(MetricsRPC.stats, ProcessStatsRequest(), options: Self.patient).figures
        func figure(_ name: String) -> Double { figures.first { $0.name == name }?.value ?? -1 }
        #expect(figure("homepwner_worker_movie_posters_total") == 3)
        let blocks = figure("homepwner_worker_movie_blocks_fetched_total"), bytes = figure("homepwner_worker_movie_fetched_bytes_total")
        #expect(blocks >= 3 && bytes <= blocks * 1_048_576, "\(blocks) blocks, \(bytes) bytes")
        #expect(bytes < Double(indexLast.count + indexFirst.count) / 2, "fetched \(bytes) bytes of movies of \(indexLast.count + indexFirst.count)")
    }

    @Test func aMovieWhosePosterNeedsMoreThanTheReadLimitFailsForGoodNamingIt() async throws {
        let folder = try ExecutableTests.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // Its index last, and about 8 MB of media before its first second is decoded: more
        // than the 4 MiB this worker may read of a movie.
        let movie = try TestMovies.noisyQuadrants(seconds: 3)
        let (client, _, stop) = try Self.launch(folder, workerArguments: ["--movie-max-read-mb", "4"])
        defer { stop() }
        let info = try await Self.put(movie, client)
        let dead = try await Self.deadJobs(client, count: 1)
        let job = try #require(dead.first)
        #expect(try ThumbnailJob(serializedBytes: job.payload).imageKey == info.key)
        #expect(
            job.lastError == "image \(info.key) cannot be made into thumbnails: movie is over a poster limit: finding its poster read more than 4194304 bytes (MovieLimits.maxBytes)",
            "\(job.lastError)")
        #expect(job.errors.count == 1, "failed for good at its first attempt")
        // A movie within the limit still gets its poster from this worker.
        let good = try await Self.put(try TestMovies.quadrants(), client)
        let thumbnails = try await Self.thumbnails(client, count: 2)
        #expect(thumbnails.filter { $0.parentKey == good.key }.count == 2)
    }
}

/// The quadrant scene's colours in a poster (`TestMovies.quadrants`).
enum MoviePixelChecks {
    static func mismatches(_ image: RGBImage, orientation: Int, tolerance: Int = 48) -> [String] {
        let scene = RGBImage(width: 2, height: 2, pixels: TestMovies.quadrantColours.flatMap { [$0.r, $0.g, $0.b] }).oriented(orientation)
        var found: [String] = []
        for qy in 0..<2 {
            for qx in 0..<2 {
                let x = image.width * (2 * qx + 1) / 4, y = image.height * (2 * qy + 1) / 4
                let got = image.pixel(x: x, y: y), want = scene.pixel(x: qx, y: qy)
                if [(got.r, want.r), (got.g, want.g), (got.b, want.b)].contains(where: { abs(Int($0.0) - Int($0.1)) > tolerance }) {
                    found.append("(\(qx), \(qy)) is \(got), expected \(want)")
                }
            }
        }
        return found
    }
}
