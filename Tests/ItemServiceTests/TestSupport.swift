import Foundation
import ItemService
import JobQueue
import Proto
import RPC
import Runtime
import ZMQ

/// One context for the tests of this target; sockets are per test.
let testContext = try! Context(ioThreads: 1)

/// Logs go nowhere unless HOMEPWNER_TEST_LOGS is set.
let testLogger = Logger(
    label: "test", level: ProcessInfo.processInfo.environment["HOMEPWNER_TEST_LOGS"] == nil ? .critical : .debug)

/// A fresh temporary folder, removed by `remove()`.
struct TemporaryFolder {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("hp-items-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }

    /// An ipc endpoint inside the folder.
    func endpoint(_ name: String) -> String { "ipc://\(path)/\(name).sock" }
}

/// item-service's composition on ipc endpoints in `folder`, started.
func startItemService(
    in folder: TemporaryFolder, imageEndpoint: String? = nil, clock: any WallClock = SystemClock(),
    cascadeRetry: JobRetryPolicy = fastCascadeRetry, logger: Logger = testLogger
) throws -> ServiceComposition {
    let configuration = ItemServiceConfiguration(
        rpcEndpoint: folder.endpoint("item"), eventsEndpoint: folder.endpoint("item-events"),
        dataDirectory: folder.path + "/data", imageServiceEndpoint: imageEndpoint ?? folder.endpoint("image"))
    let host = try ItemServiceHost.make(configuration, context: testContext, logger: logger, clock: clock, cascadeRetry: cascadeRetry)
    try host.start()
    return host
}

/// The cascade's retry policy in tests: its own, but from 50 ms doubling to 300 ms.
let fastCascadeRetry = JobRetryPolicy(
    maxAttempts: CascadeQueue.retry.maxAttempts, baseDelayMilliseconds: 50, factor: 2, maxDelayMilliseconds: 300,
    jitter: CascadeQueue.retry.jitter)

/// The cascades owed in `store`, in the order of the deletes: each job's request.
func owedCascades(_ store: ItemStore) throws -> [DeleteImagesForOwnerRequest] {
    var list = ListJobsRequest()
    list.queue = CascadeQueue.name
    list.state = .queued
    return try store.jobs.list(list).jobs.reversed().map { try DeleteImagesForOwnerRequest(serializedBytes: $0.payload) }
}

/// A client of the item service in `folder`.
func itemClient(_ folder: TemporaryFolder) throws -> RPCClient {
    try RPCClient(context: testContext, endpoint: folder.endpoint("item"))
}


/// The ItemStoreError a store call threw, or nil.
func storeError<T>(_ body: () throws -> T) -> ItemStoreError? {
    do {
        _ = try body()
        return nil
    } catch let error as ItemStoreError {
        return error
    } catch {
        return .failedPrecondition("not an ItemStoreError: \(error)")
    }
}

func createRequest(_ name: String, serial: String = "", value: Int64 = 0, key: String = "") -> CreateItemRequest {
    var request = CreateItemRequest()
    request.name = name
    request.serialNumber = serial
    request.valueInDollars = value
    request.key = key
    return request
}

/// Every item in manual order, following page tokens.
func allItems(_ store: ItemStore, pageSize: Int32 = 1000) throws -> [Item] {
    var items: [Item] = []
    var request = ListItemsRequest()
    request.pageSize = pageSize
    repeat {
        let page = try store.list(request)
        items += page.items
        request.pageToken = page.nextPageToken
    } while !request.pageToken.isEmpty
    return items
}
