import Foundation
import ImageService
import Proto
import RPC
import Runtime
import Synchronization
import Testing
import TestSupport
@testable import ThumbnailWorker
import WorkerRuntime
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

        /// A job of the thumbnails queue for `key` at `sizes`.
        static func job(_ key: String, sizes: [Int32], id: String = "1") -> Job {
            var payload = ThumbnailJob()
            payload.imageKey = key
            payload.sizes = sizes
            var job = Job()
            job.jobId = id
            job.queue = "thumbnails"
            job.payload = payload.serializedBytes()
            return job
        }

        func thumbnails(of key: String, sizes: [Int32]) async throws -> ThumbnailResult {
            let handler = ThumbnailJobHandler(connection: connection, maker: ThumbnailWorkerHost.makeThumbnails)
            return try ThumbnailResult(serializedBytes: try await handler.run(Self.job(key, sizes: sizes)))
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


    /// The makers below block their threads until told: threads of their own, not the shared
    /// pool (one thread per core). Started once, for the whole run.
    static let threads: BlockingPool = {
        let threads = BlockingPool(name: "handler-test", count: 8)
        threads.start()
        return threads
    }()

    @Test func withOneSlotASecondJobReadsItsOriginalWhileTheFirstIsMadeThenWaitsForTheSlot() async throws {
        let service = try Service(maxMessageBytes: 8 << 20)
        defer { service.stop() }
        let photo = try Fixtures.orientationPhoto("Landscape_6.jpg")
        let stored = try await service.put(photo)
        let slots = ComputeSlots(count: 1)
        let release = Shared(false)
        let making = Shared((now: 0, most: 0, calls: 0))
        let handler = ThumbnailJobHandler(connection: service.connection, slots: slots) { jpeg, sizes in
            let first = making.withLock { state -> Bool in
                state.now += 1
                state.most = max(state.most, state.now)
                state.calls += 1
                return state.calls == 1
            }
            defer { making.withLock { $0.now -= 1 } }
            if first { while !release.value { usleep(500) } }
            return try ThumbnailWorkerHost.makeThumbnails(jpeg, sizes)
        }
        let first = Task(executorPreference: Self.threads) { try await handler.run(Service.job(stored.key, sizes: [64], id: "1")) }
        #expect(try await eventually { making.withLock { $0.calls } == 1 })
        let second = Task(executorPreference: Self.threads) { try await handler.run(Service.job(stored.key, sizes: [64, 256], id: "2")) }
        // In line for the slot means its GetImage was answered: the read overlapped the first.
        #expect(try await eventually { slots.usage.waiting == 1 })
        #expect(making.withLock { $0.calls } == 1)
        release.withLock { $0 = true }
        let made = try [await first.value, await second.value].map { try ThumbnailResult(serializedBytes: $0) }
        #expect(made.map { $0.thumbnails.map(\.size) } == [[64], [64, 256]])
        #expect(making.withLock { $0.most } == 1, "two jobs were made at once in one slot")
    }

    @Test func aJobStoppedWhileItWaitsForASlotEndsCancelledNotAsAPoisonImage() async throws {
        let service = try Service(maxMessageBytes: 8 << 20)
        defer { service.stop() }
        let stored = try await service.put(try Fixtures.orientationPhoto("Landscape_1.jpg"))
        let slots = ComputeSlots(count: 1)
        let release = Shared(false)
        let handler = ThumbnailJobHandler(connection: service.connection, slots: slots) { jpeg, sizes in
            while !release.value { usleep(500) }
            return try ThumbnailWorkerHost.makeThumbnails(jpeg, sizes)
        }
        let first = Task(executorPreference: Self.threads) { try await handler.run(Service.job(stored.key, sizes: [64], id: "1")) }
        #expect(try await eventually { slots.usage.running == 1 })
        let second = Task(executorPreference: Self.threads) { try await handler.run(Service.job(stored.key, sizes: [64], id: "2")) }
        #expect(try await eventually { slots.usage.waiting == 1 })
        second.cancel()
        let outcome = await second.result
        // A JobFailure would send the job to DEAD as an image that cannot be made; a
        // cancellation is what the runner hands back.
        var cancelled = false
        if case .failure(let error) = outcome { cancelled = error is CancellationError }
        #expect(cancelled, "\(outcome)")
        release.withLock { $0 = true }
        _ = try await first.value
    }
}
