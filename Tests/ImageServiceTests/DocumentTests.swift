import Digest
import Foundation
import JobQueue
import Proto
import RPC
import Runtime
import Testing
import TestSupport
@testable import ImageService
import RPCTestSupport

/// PDF documents: sniffed from their bytes, held to their own size limit, stored and served as
/// any blob, never rendered or made into thumbnails.
@Suite struct DocumentTests {
    /// A host for `folder` on real sockets, with `maxDocumentBytes`.
    static func start(_ folder: TemporaryFolder, maxDocumentBytes: Int64 = ImageStoreLimits.defaultMaxDocumentBytes) throws -> ServiceComposition {
        var configuration = ImageServiceConfiguration(
            rpcEndpoint: ImageServiceHostTests.rpcEndpoint(folder), eventsEndpoint: "ipc://\(folder.path)/events.sock",
            dataDirectory: folder.path + "/data", watchMemoryPressure: false)
        configuration.maxDocumentBytes = maxDocumentBytes
        let host = try ImageServiceHost.make(configuration, context: hostTestContext, logger: testLogger)
        try host.start()
        return host
    }

    /// Begins an upload of `data` (declaring `mediaType`) and appends it in `chunk`-byte pieces;
    /// returns the upload's id, ready to commit.
    static func upload(_ client: RPCClient, _ data: [UInt8], chunk: Int, mediaType: MediaType = .unspecified) async throws -> String {
        var begin = BeginUploadRequest()
        begin.totalSize = Int64(data.count)
        begin.ownerKey = "item"
        begin.mediaType = mediaType
        let ticket = try await client.call(ImageServiceRPC.beginUpload, begin)
        var offset = 0
        while offset < data.count {
            var append = AppendUploadRequest()
            append.uploadId = ticket.uploadId
            append.offset = Int64(offset)
            append.data = Array(data[offset..<min(data.count, offset + chunk)])
            offset = Int(try await client.call(ImageServiceRPC.appendUpload, append).receivedBytes)
        }
        return ticket.uploadId
    }

    static func commit(_ client: RPCClient, _ uploadID: String) async throws -> ImageInfo {
        var commit = CommitUploadRequest()
        commit.uploadId = uploadID
        return try await client.call(ImageServiceRPC.commitUpload, commit, options: .init(retry: .none))
    }

    static func get(_ client: RPCClient, _ key: String) async throws -> GetImageResponse {
        var get = GetImageRequest()
        get.key = key
        return try await client.call(ImageServiceRPC.getImage, get)
    }

    static func rendition(_ client: RPCClient, _ key: String) async throws -> GetRenditionResponse {
        var rendition = GetRenditionRequest()
        rendition.key = key
        rendition.width = 100
        rendition.height = 100
        return try await client.call(ImageServiceRPC.getRendition, rendition)
    }

    static func enqueue(_ client: RPCClient, keys: [String] = [], all: Bool = false) async throws -> EnqueueThumbnailsResponse {
        var enqueue = EnqueueThumbnailsRequest()
        enqueue.keys = keys
        enqueue.all = all
        return try await client.call(ImageServiceRPC.enqueueThumbnails, enqueue)
    }

    @Test func aPDFPutOrUploadedIsADocumentServedByteForByteAndNeverRendered() async throws {
        let folder = try TemporaryFolder()
        let host = try Self.start(folder)
        defer { host.stop() }
        let client = try ImageServiceHostTests.client(folder)
        defer { client.close() }

        let receipt = SamplePDF.make()
        var put = PutImageRequest()
        put.data = receipt
        put.ownerKey = "item"
        let putInfo = try await client.call(ImageServiceRPC.putImage, put)
        // Chunked, in pieces that split its header and its trailer.
        let manual = SamplePDF.make(lines: ["Toaster manual", "Page 1"], padding: 20_000, version: "1.7")
        let uploaded = try await Self.commit(client, try await Self.upload(client, manual, chunk: 3001))

        for (info, data) in [(putInfo, receipt), (uploaded, manual)] {
            #expect(info.mediaType == .document && info.contentType == "application/pdf")
            #expect(info.width == 0 && info.height == 0 && info.orientation == 0 && info.kind == .original)
            #expect(info.sizeBytes == Int64(data.count) && info.checksum == SHA256.checksum(data) && info.ownerKey == "item")
            let read = try await Self.get(client, info.key)
            #expect(read.data == data && read.info == info)
            var stat = StatImageRequest()
            stat.key = info.key
            #expect(try await client.call(ImageServiceRPC.statImage, stat) == info)
            let refused = await rpcError { try await Self.rendition(client, info.key) }
            #expect(refused?.code == .failedPrecondition)
            #expect(refused?.message == "image \(info.key) is application/pdf; renditions are made from JPEG, PNG and HEIC images only")
        }
        var documents = ListImagesRequest()
        documents.mediaType = .document
        #expect(try await client.call(ImageServiceRPC.listImages, documents).images == [putInfo, uploaded])
        var images = ListImagesRequest()
        images.mediaType = .image
        #expect(try await client.call(ImageServiceRPC.listImages, images).images.isEmpty)
    }

    @Test func aPDFGetsNoThumbnailJobAndEnqueueThumbnailsRefusesOrSkipsIt() async throws {
        let folder = try TemporaryFolder()
        let host = try Self.start(folder)
        defer { host.stop() }
        let client = try ImageServiceHostTests.client(folder)
        defer { client.close() }
        var put = PutImageRequest()
        put.data = SamplePDF.make()
        let document = try await client.call(ImageServiceRPC.putImage, put)
        // A JPEG after it: its job is the queue's one (a job for the PDF would be there first).
        put.data = try Samples.jpeg()
        let photo = try await client.call(ImageServiceRPC.putImage, put)
        #expect(try await ThumbnailQueueTests.stats(client).ready == 1)
        var lease = LeaseRequest()
        lease.queue = ThumbnailQueue.name
        lease.workerId = "test"
        lease.maxJobs = 10
        let jobs = try await client.call(JobQueueRPC.lease, lease).jobs
        #expect(try jobs.map { try ThumbnailJob(serializedBytes: $0.payload).imageKey } == [photo.key])

        let refused = await rpcError { try await Self.enqueue(client, keys: [document.key]) }
        #expect(refused?.code == .failedPrecondition)
        #expect(refused?.message == "keys: thumbnails are made from JPEG, PNG and HEIC originals and edits and MP4, MOV, 3GP, Matroska and WebM movies only, not from \(document.key) (ORIGINAL, application/pdf)")
        // Every image: the photo's job is running, and the PDF is not looked at.
        let everything = try await Self.enqueue(client, all: true)
        #expect(everything.enqueued == 0 && everything.alreadyPending == 1 && everything.alreadyDone == 0)
    }

    @Test func aPDFOverTheDocumentLimitIsResourceExhaustedAndLeavesNothing() async throws {
        let folder = try TemporaryFolder()
        let pdf = SamplePDF.make(padding: 5000)
        let limit = Int64(pdf.count - 1)
        let host = try Self.start(folder, maxDocumentBytes: limit)
        defer { host.stop() }
        let client = try ImageServiceHostTests.client(folder)
        defer { client.close() }

        var put = PutImageRequest()
        put.data = pdf
        let putRefused = await rpcError { try await client.call(ImageServiceRPC.putImage, put, options: .init(retry: .none)) }
        #expect(putRefused?.code == .resourceExhausted)
        #expect(putRefused?.message == "data: PDF of \(pdf.count) bytes is over the document limit of \(limit) bytes (--max-document-bytes)")
        // Uploaded without saying what it is: refused once sniffed at commit, and discarded.
        let id = try await Self.upload(client, pdf, chunk: 1000)
        let commitRefused = await rpcError { try await Self.commit(client, id) }
        #expect(commitRefused?.code == .resourceExhausted)
        #expect(commitRefused?.message
            == "data: PDF of \(pdf.count) bytes is over the document limit of \(limit) bytes (--max-document-bytes); the upload is discarded")
        let gone = await rpcError { try await Self.commit(client, id) }
        #expect(gone?.code == .notFound)
        // Declared a PDF: refused at begin, before a byte is sent.
        var begin = BeginUploadRequest()
        begin.totalSize = Int64(pdf.count)
        begin.mediaType = .document
        let beginRefused = await rpcError { try await client.call(ImageServiceRPC.beginUpload, begin) }
        #expect(beginRefused?.code == .resourceExhausted)
        #expect(beginRefused?.message
            == "total_size \(pdf.count) is over the document limit of \(limit) bytes (--max-document-bytes) for the PDF declared")
        #expect(try await client.call(ImageServiceRPC.listImages, ListImagesRequest()).images.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path + "/data/images/uploads").isEmpty)

        // At the limit it is stored; a JPEG over it is not a document and is not held to it.
        put.data = SamplePDF.make(padding: 4992)
        #expect(put.data.count <= Int(limit))
        #expect(try await client.call(ImageServiceRPC.putImage, put).mediaType == .document)
        put.data = try Samples.jpeg(width: 400, height: 400)
        #expect(put.data.count > Int(limit))
        #expect(try await client.call(ImageServiceRPC.putImage, put).contentType == "image/jpeg")
    }

    @Test func aTruncatedPDFIsInvalidArgumentNamingTheMissingMarker() async throws {
        let folder = try TemporaryFolder()
        let host = try Self.start(folder)
        defer { host.stop() }
        let client = try ImageServiceHostTests.client(folder)
        defer { client.close() }
        let pdf = SamplePDF.make(padding: 10_000)
        let cut = Array(pdf.prefix(pdf.count / 2))

        var put = PutImageRequest()
        put.data = cut
        let putRefused = await rpcError { try await client.call(ImageServiceRPC.putImage, put, options: .init(retry: .none)) }
        #expect(putRefused?.code == .invalidArgument)
        #expect(putRefused?.message == "data: PDF is truncated: no %%EOF marker in its last 1024 bytes")
        let id = try await Self.upload(client, cut, chunk: 2000, mediaType: .document)
        let commitRefused = await rpcError { try await Self.commit(client, id) }
        #expect(commitRefused?.code == .invalidArgument)
        #expect(commitRefused?.message == "data: PDF is truncated: no %%EOF marker in its last 1024 bytes; the upload is discarded")
        #expect(try await client.call(ImageServiceRPC.listImages, ListImagesRequest()).images.isEmpty)
    }

    @Test func aDeclaredTypeMustMatchThePDFSniffed() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let pdf = SamplePDF.make()
        #expect(await storeError { try await store.put(pdf, NewImage(contentType: "image/jpeg")) }
            == .invalid("content_type \"image/jpeg\" does not match the data, which is application/pdf"))
        #expect(await storeError { try await store.put(try Samples.jpeg(), NewImage(contentType: "application/pdf")) }
            == .invalid("content_type \"application/pdf\" does not match the data, which is image/jpeg"))
        let id = try await store.beginUpload(NewImage(mediaType: .document), totalSize: 1000, checksum: "").uploadID
        let movie = Samples.mp4(1000 - 32)
        _ = try await store.appendUpload(id, offset: 0, data: movie)
        #expect(await storeError { try await store.commitUpload(id, checksum: "") }
            == .invalid("media_type DOCUMENT does not match the data, which is MOVIE (video/mp4); the upload is discarded"))
        let info = try await store.put(pdf, NewImage(contentType: "Application/PDF")).info
        #expect(info.mediaType == .document)
    }

    /// A JPEG behind a PDF header is a PDF: stored as sent, and never decoded (no rendition, no
    /// thumbnail job), so its JPEG is never trusted without the JPEG checks.
    @Test func aJPEGBehindAPDFHeaderIsStoredAsADocumentAndNeverDecoded() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let disguised = Array("%PDF-1.4\n".utf8) + (try Samples.jpeg()) + Array("\n%%EOF\n".utf8)
        let info = try await store.put(disguised, NewImage()).info
        #expect(info.mediaType == .document && info.contentType == "application/pdf" && info.width == 0)
        #expect(await storeError { try await store.rendition(info.key, width: 10, height: 10, mode: .fit) }
            == .failedPrecondition("image \(info.key) is application/pdf; renditions are made from JPEG, PNG and HEIC images only"))
        #expect(!ThumbnailQueue.wants(info))
        #expect(try await store.read(info) == disguised)
    }

    @Test func theDocumentLimitIsAFlagAndAVariableWithADefaultOf50MiB() throws {
        #expect(ImageStoreLimits().maxDocumentBytes == 50 << 20)
        #expect(ImageServiceConfiguration().maxDocumentBytes == 50 << 20)
        let option = try #require(ImageServiceConfiguration.options.first { $0.name == "max-document-bytes" })
        #expect(option.defaultValue == String(50 << 20) && option.env == "HOMEPWNER_IMAGE_MAX_DOCUMENT_BYTES")
        let parser = OptionParser(command: "image-service", summary: "", options: ImageServiceConfiguration.options)
        #expect(try ImageServiceConfiguration(parser.parse([], environment: [:])).maxDocumentBytes == 50 << 20)
        #expect(try ImageServiceConfiguration(parser.parse(["--max-document-bytes", "1000"], environment: [:])).maxDocumentBytes == 1000)
        let fromEnvironment = try parser.parse([], environment: ["HOMEPWNER_IMAGE_MAX_DOCUMENT_BYTES": "2000"])
        #expect(try ImageServiceConfiguration(fromEnvironment).maxDocumentBytes == 2000)
        #expect(throws: OptionError.invalidValue(option: "--max-document-bytes", value: "0", reason: "must be ≥ 1")) {
            try ImageServiceConfiguration(parser.parse(["--max-document-bytes", "0"], environment: [:]))
        }
    }
}
