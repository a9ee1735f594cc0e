import Digest
import Foundation
import Proto
import RPC
import Runtime
import Testing
import ZMQ
@testable import ImageService
import RPCTestSupport

/// A ZeroMQ context for the host tests of this target.
let hostTestContext = try! Context(ioThreads: 1)

@Suite struct ImageServiceHostTests {
    /// Where `start` serves RPC for `folder`.
    static func rpcEndpoint(_ folder: TemporaryFolder) -> String { "ipc://\(folder.path)/rpc.sock" }

    /// A client of the host `start` made for `folder`.
    static func client(_ folder: TemporaryFolder) throws -> RPCClient {
        try RPCClient(context: hostTestContext, endpoint: rpcEndpoint(folder))
    }

    static func start(
        _ folder: TemporaryFolder, maxMessageBytes: Int = 64 << 20, cacheBudgetBytes: Int = 8 << 20
    ) throws -> ServiceComposition {
        let configuration = ImageServiceConfiguration(
            rpcEndpoint: rpcEndpoint(folder), eventsEndpoint: "ipc://\(folder.path)/events.sock",
            dataDirectory: folder.path + "/data", maxMessageBytes: maxMessageBytes, cacheBudgetBytes: cacheBudgetBytes,
            watchMemoryPressure: false)
        let host = try ImageServiceHost.make(configuration, context: hostTestContext, logger: testLogger)
        try host.start()
        return host
    }

    @Test func aFactoryOnlyCalledOpensNothingAndAStartedOneClosesWhatItOpened() async throws {
        let folder = try TemporaryFolder()
        let configuration = ImageServiceConfiguration(
            rpcEndpoint: Self.rpcEndpoint(folder), eventsEndpoint: "ipc://\(folder.path)/events.sock",
            dataDirectory: folder.path + "/data", watchMemoryPressure: false)
        let idle = try ImageServiceHost.make(configuration, context: hostTestContext, logger: testLogger)
        #expect(idle.services.map { $0.name } == ["fault-watch", "image-store", "backup-snapshots", "job-sweeper", "image-taken-at-backfill", "image-upload-reaper", "image-cache-pressure", "image-service"])
        let store = try #require(idle.first(ImageStore.self))
        // Its writer's thread would have created (and reconciled) the index.
        let index = folder.path + "/data/images/images.db"
        #expect(!FileManager.default.fileExists(atPath: index))
        #expect(idle.host.rpcEndpoints.isEmpty)
        #expect(await storeError { try await store.list() } == .failedPrecondition("the image store is closed (stopping)"))
        idle.stop()

        let running = try ImageServiceHost.make(configuration, context: hostTestContext, logger: testLogger)
        try running.start()
        let client = try Self.client(folder)
        defer { client.close() }
        var put = PutImageRequest()
        put.data = try Samples.jpeg(width: 16, height: 16)
        let stored = try await client.call(ImageServiceRPC.putImage, put)
        #expect(FileManager.default.fileExists(atPath: index + "-wal"))
        running.stop()
        // Both connections closed: the last one checkpointed the WAL and removed it.
        #expect(!FileManager.default.fileExists(atPath: index + "-wal"))
        let again = try Self.start(folder)
        defer { again.stop() }
        var get = GetImageRequest()
        get.key = stored.key
        #expect(try await client.call(ImageServiceRPC.getImage, get, options: .init(timeoutMilliseconds: 10_000)).info == stored)
    }

    @Test func storedAndDeletedImagesArePublishedAsEvents() async throws {
        let folder = try TemporaryFolder()
        let host = try Self.start(folder)
        defer { host.stop() }
        let client = try Self.client(folder)
        defer { client.close() }
        let subscriber = try Socket(hostTestContext, .sub)
        defer { subscriber.close() }
        try subscriber.subscribe(Array("image.".utf8))
        try subscriber.connect("ipc://\(folder.path)/events.sock")

        var received: [(String, ImageEvent)] = []
        func drain() throws {
            while let frames = try subscriber.receive(dontWait: true) {
                received.append((String(decoding: frames[0], as: UTF8.self), try ImageEvent(serializedBytes: frames[1])))
            }
        }
        // A subscription takes effect asynchronously: put until the first event arrives.
        var stored: [ImageInfo] = []
        while received.isEmpty && stored.count < 200 {
            var put = PutImageRequest()
            put.data = try Samples.jpeg(width: 16 + stored.count, height: 16)
            put.ownerKey = "owner"
            stored.append(try await client.call(ImageServiceRPC.putImage, put))
            try await Task.sleep(for: .milliseconds(20))
            try drain()
        }
        let last = try #require(stored.last)
        var delete = DeleteImageRequest()
        delete.key = last.key
        _ = try await client.call(ImageServiceRPC.deleteImage, delete)
        let end = ContinuousClock.now + .seconds(10)
        while received.last?.0 != EventTopic.imageDeleted && ContinuousClock.now < end {
            try drain()
            try await Task.sleep(for: .milliseconds(10))
        }
        let mine = received.filter { $0.1.key == last.key }
        #expect(mine.map(\.0) == [EventTopic.imageStored, EventTopic.imageDeleted])
        #expect(mine.first?.1.info == last && mine.last?.1.info == last)
    }

    @Test func putOverTheMessageLimitIsRefusedAndLeavesNothing() async throws {
        let folder = try TemporaryFolder()
        let host = try Self.start(folder, maxMessageBytes: 1 << 20)
        defer { host.stop() }
        let client = try Self.client(folder)
        defer { client.close() }
        var put = PutImageRequest()
        put.data = Samples.mp4((1 << 20) + 1000)
        let error = await rpcError { try await client.call(ImageServiceRPC.putImage, put, options: .init(retry: .none)) }
        #expect(error?.code == .invalidArgument && error?.message.contains("over the limit of 1048576 bytes") == true)
        // The chunked path takes it, in chunks the service names.
        var begin = BeginUploadRequest()
        begin.totalSize = Int64(put.data.count)
        let ticket = try await client.call(ImageServiceRPC.beginUpload, begin)
        #expect(ticket.maxChunkBytes == (1 << 20) - (64 << 10))
        var offset = 0
        while offset < put.data.count {
            var append = AppendUploadRequest()
            append.uploadId = ticket.uploadId
            append.offset = Int64(offset)
            append.data = Array(put.data[offset..<min(put.data.count, offset + Int(ticket.maxChunkBytes))])
            offset = Int(try await client.call(ImageServiceRPC.appendUpload, append).receivedBytes)
        }
        var commit = CommitUploadRequest()
        commit.uploadId = ticket.uploadId
        let info = try await client.call(ImageServiceRPC.commitUpload, commit)
        #expect(info.sizeBytes == Int64(put.data.count) && info.checksum == SHA256.checksum(put.data))
        let list = try await client.call(ImageServiceRPC.listImages, ListImagesRequest())
        #expect(list.images.map(\.key) == [info.key])
    }

    @Test func restartRecoversAndServesWhatWasAcknowledged() async throws {
        let folder = try TemporaryFolder()
        var host = try Self.start(folder)
        let client = try Self.client(folder)
        defer { client.close() }
        var put = PutImageRequest()
        put.data = try Samples.photo("Landscape_8.jpg")
        let info = try await client.call(ImageServiceRPC.putImage, put)
        // A chunked upload in flight when the process stops is resumed after the next start.
        var begin = BeginUploadRequest()
        begin.totalSize = 1000
        let upload = try await client.call(ImageServiceRPC.beginUpload, begin)
        var append = AppendUploadRequest()
        append.uploadId = upload.uploadId
        append.data = [1, 2, 3]
        _ = try await client.call(ImageServiceRPC.appendUpload, append)
        host.stop()
        host = try Self.start(folder)
        defer { host.stop() }
        var get = GetImageRequest()
        get.key = info.key
        #expect(try await client.call(ImageServiceRPC.getImage, get, options: .init(timeoutMilliseconds: 5000)).data == put.data)
        var resume = BeginUploadRequest()
        resume.resumeUploadId = upload.uploadId
        resume.totalSize = 5  // ignored with resume_upload_id
        let resumed = try await client.call(ImageServiceRPC.beginUpload, resume)
        #expect(resumed.uploadId == upload.uploadId && resumed.receivedBytes == 3 && resumed.maxChunkBytes == upload.maxChunkBytes)
        append.offset = 3
        #expect(try await client.call(ImageServiceRPC.appendUpload, append).receivedBytes == 6)
        var unknown = BeginUploadRequest()
        unknown.resumeUploadId = UUID().uuidString.lowercased()
        let gone = await rpcError { try await client.call(ImageServiceRPC.beginUpload, unknown) }
        #expect(gone?.code == .notFound)
        #expect(gone?.message == "upload_id \"\(unknown.resumeUploadId)\": no such upload (committed, aborted or expired)")
        let temporary = (try FileManager.default.contentsOfDirectory(atPath: folder.path + "/data/images/tmp"))
        #expect(temporary.isEmpty)
    }
}


@Suite struct EncodedReplyTests {
    @Test func directEncodingDecodesAsTheMessageProtobufCWouldWrite() throws {
        var info = ImageInfo()
        info.key = UUID().uuidString.lowercased()
        info.sizeBytes = 300_000
        info.checksum = "sha256:" + String(repeating: "a", count: 64)
        for data in [[UInt8](), [7], (0..<300_000).map { UInt8(truncatingIfNeeded: $0) }] {
            let encoded = EncodedReply<GetImageResponse>(message: info.serializedBytes(), data: data)
            var expected = GetImageResponse()
            expected.info = info
            expected.data = data
            #expect(try GetImageResponse(serializedBytes: encoded.serializedBytes()) == expected)
            #expect(encoded.serializedBytes() == expected.serializedBytes())
            // Written straight into the reply's body (a frame when large): the same bytes.
            #expect(MessageBody(encoding: encoded).bytes == expected.serializedBytes())
        }
    }
}
