import Clients
import Foundation
import Proto
import RPC
import ZMQ

/// The payloads every client of `homepwner-bench load` sends.
struct LoadPayloads: Sendable {
    /// Real JPEGs of Tests/Fixtures/exif-orientation (18 photos, 245 to 353 KB).
    let photos: [[UInt8]]
    /// A real JPEG followed by bytes after its end marker, 16 MiB in all (as a motion photo's
    /// video follows its JPEG): stored whole, rendered from its JPEG.
    let large: [UInt8]
    /// The photo captures of source LIBRARY name, in the library folder.
    let libraryPhoto = "photo.jpg"

    static let largeBytes = 16 << 20

    static func load(repository: String) throws -> LoadPayloads {
        // Not Pillow's fixtures: some have scans that do not decode (a rendition of them is 9).
        let folder = repository + "/Tests/Fixtures/exif-orientation"
        var photos: [[UInt8]] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: folder).sorted() where name.hasSuffix(".jpg") {
            photos.append(Array(try Data(contentsOf: URL(fileURLWithPath: folder + "/" + name))))
        }
        guard let first = photos.first else { throw ThumbsBenchmark.Failure("no JPEG in \(folder)") }
        var large = first
        var generator = SystemRandomNumberGenerator()
        large.reserveCapacity(largeBytes)
        while large.count < largeBytes {
            let word = generator.next() as UInt64
            withUnsafeBytes(of: word) { large.append(contentsOf: $0.prefix(largeBytes - large.count)) }
        }
        return LoadPayloads(photos: photos, large: large)
    }
}

/// One of the clients: its own two connections (item-service, image-service), the items and
/// images it made, and a weighted mix of calls on them until `until`.
struct LoadClient {
    enum Operation: CaseIterable {
        case health, createItem, getItem, listItems, updateItem, moveItem, deleteItem
        case putSmall, putLarge, uploadLarge, getImage, getRendition, listImages, deleteImage
        case capture, getCaptureJob, enqueueThumbnails, getBatch

        /// Calls a client makes of each, out of about 100.
        var weight: Int {
            switch self {
            case .health: 4
            case .createItem: 5
            case .getItem: 12
            case .listItems: 6
            case .updateItem: 8
            case .moveItem: 3
            case .deleteItem: 3
            case .putSmall: 8
            case .putLarge: 1
            case .uploadLarge: 1
            case .getImage: 8
            case .getRendition: 14
            case .listImages: 3
            case .deleteImage: 4
            case .capture: 3
            case .getCaptureJob: 5
            case .enqueueThumbnails: 2
            case .getBatch: 3
            }
        }
    }

    struct Image {
        let key: String
        let owner: String
        let large: Bool
        var attached: Bool
    }

    let index: Int
    let clientCount: Int
    let clients: HomepwnerClients
    let recorder: LoadRecorder
    let payloads: LoadPayloads
    var items: [String] = []
    var images: [Image] = []
    var captures: [(job: String, item: String)] = []
    var batches: [String] = []
    var generator = SystemRandomNumberGenerator()

    /// The server's budget for a call, and how much longer the client waits for its reply.
    static let timeout: UInt32 = 10_000, largeTimeout: UInt32 = 30_000, grace: UInt32 = 5_000
    static let renditionSizes: [Int32] = [48, 64, 128, 160, 256, 320, 512, 800, 1024, 1600]

    init(index: Int, of clientCount: Int, context: Context, endpoints: ServiceEndpoints, recorder: LoadRecorder, payloads: LoadPayloads) throws {
        self.index = index
        self.clientCount = clientCount
        self.clients = try HomepwnerClients(context: context, endpoints: endpoints, configuration: .init(connectWaitMilliseconds: 10_000))
        self.recorder = recorder
        self.payloads = payloads
    }

    /// One call, timed; RESOURCE_EXHAUSTED with `retry_after_ms` is retried after that long
    /// (with the same idempotency key) and UNAVAILABLE after 100 ms, at most 5 attempts in all.
    /// Every attempt is recorded. Nil unless OK.
    static func call<Request, Response>(
        _ client: RPCClient, _ method: ProtoMethod<Request, Response>, _ request: Request,
        recorder: LoadRecorder, timeout: UInt32 = timeout
    ) async -> Response? {
        var options = CallOptions(
            timeoutMilliseconds: timeout, idempotencyKey: method.isReadOnly ? nil : UUID().uuidString.lowercased(), retry: .none)
        options.replyGraceMilliseconds = grace
        for attempt in 1...5 {
            let start = ContinuousClock.now
            do {
                let response = try await client.call(method, request, options: options)
                recorder.record(method.name, milliseconds: milliseconds(since: start), error: nil)
                return response
            } catch {
                recorder.record(method.name, milliseconds: milliseconds(since: start), error: error)
                guard attempt < 5 else { return nil }
                if error.code == .resourceExhausted, error.retryAfterMilliseconds > 0 {
                    recorder.honouredRetryAfter()
                    try? await Task.sleep(for: .milliseconds(Int(error.retryAfterMilliseconds)))
                } else if error.code == .unavailable {
                    try? await Task.sleep(for: .milliseconds(100))
                } else {
                    return nil
                }
            }
        }
        return nil
    }

    static func milliseconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
    }

    func itemCall<Request, Response>(_ method: ProtoMethod<Request, Response>, _ request: Request) async -> Response? {
        await Self.call(clients.items, method, request, recorder: recorder)
    }

    func imageCall<Request, Response>(
        _ method: ProtoMethod<Request, Response>, _ request: Request, timeout: UInt32 = timeout
    ) async -> Response? {
        await Self.call(clients.images, method, request, recorder: recorder, timeout: timeout)
    }

    mutating func pick() -> Operation {
        let total = Operation.allCases.reduce(0) { $0 + $1.weight }
        var roll = Int.random(in: 0..<total, using: &generator)
        for operation in Operation.allCases {
            roll -= operation.weight
            if roll < 0 { return operation }
        }
        return .health
    }

    mutating func run(until end: ContinuousClock.Instant) async {
        while ContinuousClock.now < end {
            await step(items.isEmpty ? .createItem : pick())
        }
    }

    mutating func step(_ operation: Operation) async {
        switch operation {
        case .health:
            _ = await Self.call(Bool.random(using: &generator) ? clients.items : clients.images, HealthRPC.check, HealthCheckRequest(), recorder: recorder)
        case .createItem:
            guard items.count < 4 else { return await step(.getItem) }
            var request = CreateItemRequest()
            request.name = "load \(index) \(UInt32.random(in: 0...UInt32.max, using: &generator))"
            request.valueInDollars = Int64.random(in: 0...5000, using: &generator)
            if let item = await itemCall(ItemServiceRPC.createItem, request) { items.append(item.key) }
        case .getItem:
            var request = GetItemRequest()
            request.key = items.randomElement(using: &generator)!
            _ = await itemCall(ItemServiceRPC.getItem, request)
        case .listItems:
            var request = ListItemsRequest()
            request.pageSize = 50
            request.sort = [ItemSort.manual, .name, .value, .created].randomElement(using: &generator)!
            _ = await itemCall(ItemServiceRPC.listItems, request)
        case .updateItem:
            var request = UpdateItemRequest()
            request.key = items.randomElement(using: &generator)!
            request.updateMask = ["value_in_dollars"]
            request.valueInDollars = Int64.random(in: 0...5000, using: &generator)
            _ = await itemCall(ItemServiceRPC.updateItem, request)
        case .moveItem:
            // Within the first 2 positions a client: each has 2 to 4 items.
            var request = MoveItemRequest()
            request.fromIndex = Int32.random(in: 0..<Int32(2 * clientCount), using: &generator)
            request.toIndex = Int32.random(in: 0..<Int32(2 * clientCount), using: &generator)
            _ = await itemCall(ItemServiceRPC.moveItem, request)
        case .deleteItem:
            let busy = Set(captures.map(\.item))
            guard items.count > 2, let key = items.filter({ !busy.contains($0) }).randomElement(using: &generator) else {
                return await step(.getItem)
            }
            var request = DeleteItemRequest()
            request.key = key
            if await itemCall(ItemServiceRPC.deleteItem, request) != nil {
                items.removeAll { $0 == key }
                images.removeAll { $0.owner == key }
                batches.removeAll()
            }
        case .putSmall:
            await putSmall()
        case .putLarge, .uploadLarge:
            await putLarge(chunked: operation == .uploadLarge)
        case .getImage:
            guard let image = images.randomElement(using: &generator) else { return await step(.putSmall) }
            var request = GetImageRequest()
            request.key = image.key
            _ = await imageCall(ImageServiceRPC.getImage, request, timeout: image.large ? Self.largeTimeout : Self.timeout)
        case .getRendition:
            guard let image = images.randomElement(using: &generator) else { return await step(.putSmall) }
            var request = GetRenditionRequest()
            request.key = image.key
            let size = Self.renditionSizes.randomElement(using: &generator)!
            request.width = size
            request.height = Bool.random(using: &generator) ? size : size * 3 / 4
            request.mode = Bool.random(using: &generator) ? .fit : .fill
            _ = await imageCall(ImageServiceRPC.getRendition, request, timeout: Self.largeTimeout)
        case .listImages:
            var request = ListImagesRequest()
            request.ownerKey = items.randomElement(using: &generator)!
            request.pageSize = 100
            _ = await imageCall(ImageServiceRPC.listImages, request)
        case .deleteImage:
            guard images.count > 4 || images.contains(where: \.large) else { return await step(.getImage) }
            let image = images.first(where: \.large) ?? images[0]
            await delete(image)
        case .capture:
            await capture()
        case .getCaptureJob:
            guard let pending = captures.first else { return await step(.getItem) }
            var request = GetCaptureJobRequest()
            request.jobId = pending.job
            if let job = await itemCall(CaptureServiceRPC.getCaptureJob, request)?.job, job.state == .done || job.state == .dead {
                captures.removeFirst()
                recorder.captureFinished(dead: job.state == .dead, error: job.error)
            }
        case .enqueueThumbnails:
            guard !images.isEmpty else { return await step(.putSmall) }
            var request = EnqueueThumbnailsRequest()
            request.keys = Array(images.shuffled(using: &generator).prefix(3).map(\.key))
            request.sizes = [96, 200]
            if let answer = await imageCall(ImageServiceRPC.enqueueThumbnails, request), !answer.batchId.isEmpty, batches.count < 8 {
                batches.append(answer.batchId)
            }
        case .getBatch:
            guard let batch = batches.first else { return await step(.getImage) }
            var request = GetBatchRequest()
            request.queue = JobQueueSpec.thumbnails.name
            request.batchId = batch
            if let answer = await imageCall(JobQueueRPC.getBatch, request), answer.pending == 0 {
                batches.removeFirst()
            }
        }
    }

    /// A photo stored for one of the items and attached to it.
    mutating func putSmall() async {
        var put = PutImageRequest()
        put.ownerKey = items.randomElement(using: &generator)!
        put.data = payloads.photos.randomElement(using: &generator)!
        guard let info = await imageCall(ImageServiceRPC.putImage, put) else { return }
        var image = Image(key: info.key, owner: put.ownerKey, large: false, attached: false)
        var attach = AttachPhotoRequest()
        attach.itemKey = put.ownerKey
        attach.imageKey = info.key
        attach.makePrimary = Bool.random(using: &generator)
        if let item = await itemCall(ItemServiceRPC.attachPhoto, attach) { image.attached = item.photoKeys.contains(info.key) }
        images.append(image)
    }

    /// A 16 MiB body, in one PutImage or a chunked upload of 4 MiB chunks; one kept at a time.
    mutating func putLarge(chunked: Bool) async {
        if let old = images.first(where: \.large) { await delete(old) }
        let owner = items.randomElement(using: &generator)!
        let key: String?
        if chunked {
            key = await upload(owner: owner)
        } else {
            var put = PutImageRequest()
            put.ownerKey = owner
            put.data = payloads.large
            key = await imageCall(ImageServiceRPC.putImage, put, timeout: Self.largeTimeout)?.key
        }
        if let key { images.append(Image(key: key, owner: owner, large: true, attached: false)) }
    }

    func upload(owner: String) async -> String? {
        var begin = BeginUploadRequest()
        begin.ownerKey = owner
        begin.totalSize = Int64(payloads.large.count)
        guard let started = await imageCall(ImageServiceRPC.beginUpload, begin) else { return nil }
        let chunk = min(4 << 20, Int(started.maxChunkBytes))
        var offset = 0
        while offset < payloads.large.count {
            var append = AppendUploadRequest()
            append.uploadId = started.uploadId
            append.offset = Int64(offset)
            append.data = Array(payloads.large[offset..<min(offset + chunk, payloads.large.count)])
            guard await imageCall(ImageServiceRPC.appendUpload, append, timeout: Self.largeTimeout) != nil else {
                var abort = AbortUploadRequest()
                abort.uploadId = started.uploadId
                _ = await imageCall(ImageServiceRPC.abortUpload, abort)
                return nil
            }
            offset += append.data.count
        }
        var commit = CommitUploadRequest()
        commit.uploadId = started.uploadId
        return await imageCall(ImageServiceRPC.commitUpload, commit, timeout: Self.largeTimeout)?.key
    }

    /// Detaches (when attached) and deletes an image.
    mutating func delete(_ image: Image) async {
        if image.attached {
            var detach = DetachPhotoRequest()
            detach.itemKey = image.owner
            detach.imageKey = image.key
            _ = await itemCall(ItemServiceRPC.detachPhoto, detach)
        }
        var request = DeleteImageRequest()
        request.key = image.key
        if await imageCall(ImageServiceRPC.deleteImage, request) != nil { images.removeAll { $0.key == image.key } }
    }

    /// A capture with a square edit: an uploaded photo (inline data) or the library's photo.
    mutating func capture() async {
        guard captures.count < 2 else { return await step(.getCaptureJob) }
        var request = CaptureRequest()
        request.itemKey = items.randomElement(using: &generator)!
        if Bool.random(using: &generator) {
            request.source = .upload
            request.data = payloads.photos.randomElement(using: &generator)!
        } else {
            request.source = .library
            request.sourcePath = payloads.libraryPhoto
        }
        var edit = Edit()
        edit.shape = .square
        edit.outputSize = [0, 256, 512].randomElement(using: &generator)!
        request.edit = edit
        if let job = await itemCall(CaptureServiceRPC.capture, request)?.job { captures.append((job.jobId, request.itemKey)) }
    }

    /// Deletes every item it made (their images go with them, by item-service's cascade).
    mutating func clean() async {
        for key in items {
            var request = DeleteItemRequest()
            request.key = key
            _ = await itemCall(ItemServiceRPC.deleteItem, request)
        }
        items.removeAll()
        images.removeAll()
    }
}
