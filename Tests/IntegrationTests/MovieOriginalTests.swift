import Foundation
import JPEG
import Proto
import RPC
import RPCTestSupport
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

    /// The image service (thumbnails at 64 and 256) and a thumbnail worker, and a client.
    static func launch(_ folder: String) throws -> (client: RPCClient, stop: () -> Void) {
        let rpc = "ipc://\(folder)/images.sock", health = "ipc://\(folder)/worker.sock"
        let service = try ExecutableTests.launch(
            "image-service",
            ["--rpc", rpc, "--events", "ipc://\(folder)/events.sock", "--data-dir", folder + "/data", "--thumbnail-sizes", "64,256"],
            endpoint: rpc)
        let worker = try ExecutableTests.launch(
            "thumbnail-worker", ["--rpc", health, "--image-service", rpc, "--concurrency", "2"], endpoint: health)
        let client = try RPCClient(context: ExecutableTests.context, endpoint: rpc, configuration: .init(connectWaitMilliseconds: 10_000))
        return (client, {
            client.close()
            for process in [worker.process, service.process] where process.isRunning { process.terminate() }
        })
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
        let (client, stop) = try Self.launch(folder)
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
        let (client, stop) = try Self.launch(folder)
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
        var list = ListJobsRequest()
        list.queue = "thumbnails"
        list.state = .dead
        var dead: [Job] = []
        let end = ContinuousClock.now + .seconds(90)
        while dead.count < cases.count && ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(100))
            dead = try await client.call(JobQueueRPC.listJobs, list, options: Self.patient).jobs
        }
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
