import Foundation
import ImageService
import Proto
import RPC
import Runtime
import Testing
import TestSupport
@testable import ThumbnailWorker
import ZMQ

/// How the thumbnail worker reads an original: one GetImage of the whole blob, or ranged reads
/// that fit the service's replies when it is larger than one.
@Suite struct ThumbnailJobHandlerTests {
    /// An image service with `maxMessageBytes` on ipc in a temporary folder, and the handler's
    /// connection to it.
    final class Service {
        let folder: String
        let context: Context
        let composition: ServiceComposition
        let connection: ClientConnection

        init(maxMessageBytes: Int) throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("hp-handler-\(UUID().uuidString.prefix(8))").path
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            context = try Context(ioThreads: 1)
            let configuration = ImageServiceConfiguration(
                rpcEndpoint: "ipc://\(folder)/image.sock", eventsEndpoint: "ipc://\(folder)/events.sock",
                dataDirectory: folder + "/data", maxMessageBytes: maxMessageBytes, watchMemoryPressure: false, thumbnailSizes: [])
            composition = try ImageServiceHost.make(configuration, context: context, logger: Logger(label: "image-service", level: .warning))
            try composition.start()
            connection = ClientConnection(
                name: "handler-test", context: context, endpoint: configuration.rpcEndpoint,
                configuration: .init(connectWaitMilliseconds: 10_000, maxMessageBytes: maxMessageBytes))
            try connection.start()
        }

        func stop() {
            connection.stop()
            composition.stop()
            try? FileManager.default.removeItem(atPath: folder)
        }

        func put(_ data: [UInt8]) async throws -> ImageInfo {
            var request = PutImageRequest()
            request.data = data
            return try await connection.client.call(ImageServiceRPC.putImage, request, options: .init(timeoutMilliseconds: 30_000))
        }

        func thumbnails(of key: String, sizes: [Int32]) async throws -> ThumbnailResult {
            var payload = ThumbnailJob()
            payload.imageKey = key
            payload.sizes = sizes
            var job = Job()
            job.jobId = "1"
            job.queue = "thumbnails"
            job.payload = payload.serializedBytes()
            let handler = ThumbnailJobHandler(connection: connection, maker: ThumbnailWorkerHost.makeThumbnails)
            return try ThumbnailResult(serializedBytes: try await handler.run(job))
        }
    }

    @Test func anOriginalLargerThanOneReplyIsReadInRangesThatFitTheServicesReplies() async throws {
        // 1 MiB frames: a reply holds at most 960 KiB, and the worker's 8 MiB ranges are refused
        // too until it halves them to 512 KiB.
        let service = try Service(maxMessageBytes: 1 << 20)
        defer { service.stop() }
        let photo = try Fixtures.orientationPhoto("Landscape_1.jpg")
        let large = JPEGSplice.inserting(JPEGSplice.metadata(totalBytes: 1_000_000 - photo.count), beforeFrameOf: photo)
        #expect(large.count == 1_000_000)
        let stored = try await service.put(large)
        let made = try await service.thumbnails(of: stored.key, sizes: [64, 256])
        #expect(made.thumbnails.map(\.size) == [64, 256])
        // The same pixels as from the bytes in hand: the whole original was read, in order.
        let expected = try ThumbnailWorkerHost.makeThumbnails(large, [64, 256])
        #expect(made.thumbnails.map(\.data) == expected.map(\.data))
    }

    @Test func anOriginalThatFitsOneReplyIsReadWholeAndAGoneOneIsNoThumbnails() async throws {
        let service = try Service(maxMessageBytes: 1 << 20)
        defer { service.stop() }
        let photo = try Fixtures.orientationPhoto("Landscape_1.jpg")
        let stored = try await service.put(photo)
        let made = try await service.thumbnails(of: stored.key, sizes: [64])
        #expect(made.thumbnails.map(\.data) == (try ThumbnailWorkerHost.makeThumbnails(photo, [64])).map(\.data))
        let gone = try await service.thumbnails(of: UUID().uuidString.lowercased(), sizes: [64])
        #expect(gone.thumbnails.isEmpty)
    }
}
