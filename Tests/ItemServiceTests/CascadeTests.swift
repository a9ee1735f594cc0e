import Foundation
import ItemService
import Proto
import RPC
import Runtime
import SQLite
import Locking
import Testing

/// The delete cascade against a small fake image service that records what it was asked.
@Suite struct CascadeTests {
    /// Images per owner; DeleteImagesForOwner removes them and records the call, ListImages
    /// answers the keys in `owned`, StatImage the owners in `stat`.
    final class FakeImageService: Sendable {
        let images: Locked<[String: Int64]>
        let owned: [String: [String]]
        let stat: [String: String]
        /// Owners whose DeleteImagesForOwner answers INTERNAL.
        let failing: Set<String>
        /// Answers as an image service from before `attached_keys` and `owner_deleted`: OK,
        /// without `owner_deleted_recorded`.
        let older: Bool
        /// DeleteImagesForOwner waits for `release` (at most 30 s) before it answers.
        let holds: Bool
        let release = WakeSignal()
        let calls = Locked<[String]>([])
        let requests = Locked<[DeleteImagesForOwnerRequest]>([])
        let deleted = Locked<[String: Int64]>([:])

        init(
            images: [String: Int64], owned: [String: [String]] = [:], stat: [String: String] = [:], failing: Set<String> = [],
            older: Bool = false, holds: Bool = false
        ) {
            self.images = Locked(images)
            self.owned = owned
            self.stat = stat
            self.failing = failing
            self.older = older
            self.holds = holds
        }

        func start(_ endpoint: String) throws -> RPCServer {
            let server = try RPCServer(
                context: testContext, configuration: .init(endpoints: [endpoint], processName: "image-service"), logger: testLogger)
            server.register(ImageServiceRPC.deleteImagesForOwner) { [self] request, _ in
                calls.withLock { $0.append(request.ownerKey) }
                if holds { await release.wait(timeoutMilliseconds: 30_000) }
                if failing.contains(request.ownerKey) { throw RPCError.internal("injected failure for owner \(request.ownerKey)") }
                requests.withLock { $0.append(request) }
                let count = images.withLock { $0.removeValue(forKey: request.ownerKey) ?? 0 }
                deleted.withLock { $0[request.ownerKey, default: 0] += count }
                var response = DeleteImagesForOwnerResponse()
                response.deletedCount = count
                response.ownerDeletedRecorded = request.ownerDeleted && !older
                return response
            }
            server.register(ImageServiceRPC.listImages) { [owned] request, _ in
                var response = ListImagesResponse()
                response.images = (owned[request.ownerKey] ?? []).map { key in
                    var info = ImageInfo()
                    info.key = key
                    info.ownerKey = request.ownerKey
                    return info
                }
                return response
            }
            server.register(ImageServiceRPC.statImage) { [stat] request, _ in
                guard let owner = stat[request.key] else { throw RPCError.notFound("key \(request.key): no such image") }
                var info = ImageInfo()
                info.key = request.key
                info.ownerKey = owner
                return info
            }
            try server.start()
            return server
        }
    }

    /// Items and deletes written straight into the service's database before it starts.
    static func prepareDatabase(_ folder: TemporaryFolder, _ body: (ItemStore) throws -> Void) throws {
        try FileManager.default.createDirectory(atPath: folder.path + "/data/items", withIntermediateDirectories: true)
        let store = try ItemStore(path: folder.path + "/data/items/items.db")
        try body(store)
        try store.close()
    }

    static func attach(_ store: ItemStore, _ image: String, to item: Item) throws {
        var attach = AttachPhotoRequest()
        attach.itemKey = item.key
        attach.imageKey = image
        _ = try store.attachPhoto(attach, now: 2)
    }

    func pending(_ client: RPCClient) async throws -> Int64 {
        try await client.call(ItemServiceRPC.stats, ItemStatsRequest(), options: .init(timeoutMilliseconds: 10_000)).pendingCascades
    }

    @Test func deleteAnswersWhileImagesAreDownAndTheCascadeArrivesOnceAfterRestarts() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        var host = try startItemService(in: folder)
        defer { host.stop() }
        let client = try itemClient(folder)
        defer { client.close() }
        let doomed = try await client.call(ItemServiceRPC.createItem, createRequest("Rusty Spork"))
        let kept = try await client.call(ItemServiceRPC.createItem, createRequest("Shiny Mac"))
        let fake = FakeImageService(images: [doomed.key: 3, kept.key: 2])

        var delete = DeleteItemRequest()
        delete.key = doomed.key
        _ = try await client.call(ItemServiceRPC.deleteItem, delete)
        #expect(try await pending(client) == 1)

        // The item service restarts with the cascade still owed: the outbox is on disk.
        host.stop()
        host = try startItemService(in: folder)
        #expect(try await pending(client) == 1)

        let images = try fake.start(folder.endpoint("image"))
        defer { images.stop() }
        let end = ContinuousClock.now + .seconds(30)
        while try await pending(client) > 0 && ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(50)) }
        #expect(try await pending(client) == 0)
        #expect(fake.deleted.withLock { $0 } == [doomed.key: 3])
        #expect(fake.images.withLock { $0 } == [kept.key: 2])
        // Delivered once: one run of the image service's handler, for the deleted item alone.
        #expect(fake.calls.withLock { $0 } == [doomed.key])

        // Once confirmed, a restart owes nothing and asks nothing more.
        let callsBefore = fake.calls.withLock { $0.count }
        host.stop()
        host = try startItemService(in: folder)
        #expect(try await pending(client) == 0)
        #expect(fake.calls.withLock { $0.count } == callsBefore)
    }

    @Test func rowsBehindAHundredFailingOnesAreDelivered() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        // 150 deletes owed at start; the image service refuses the oldest 100 every time.
        var keys: [String] = []
        try Self.prepareDatabase(folder) { store in
            for index in 0..<150 {
                let key = try store.create(createRequest("Item \(index)"), now: 1).item.key
                _ = try store.delete(key: key, now: 2)
                keys.append(key)
            }
        }
        let fake = FakeImageService(images: Dictionary(uniqueKeysWithValues: keys.map { ($0, 1) }), failing: Set(keys.prefix(100)))
        let images = try fake.start(folder.endpoint("image"))
        defer { images.stop() }
        let host = try startItemService(in: folder)
        defer { host.stop() }
        let client = try itemClient(folder)
        defer { client.close() }

        let later = Set(keys.suffix(50))
        let end = ContinuousClock.now + .seconds(60)
        while fake.deleted.withLock({ Set($0.keys) }) != later && ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(fake.deleted.withLock { Set($0.keys) } == later, "only these were delivered: \(fake.deleted.withLock { $0.count })")
        // The fake records a delete as it answers it; the row leaves the outbox just after.
        let drainEnd = ContinuousClock.now + .seconds(10)
        while try await pending(client) != 100 && ContinuousClock.now < drainEnd {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(try await pending(client) == 100)
        // The failing rows are still tried, not given up (after their backoff: waited for, bounded).
        func triesOfTheOldest() -> Int { fake.calls.withLock { $0 }.filter { $0 == keys[0] }.count }
        let retryEnd = ContinuousClock.now + .seconds(30)
        while triesOfTheOldest() < 2 && ContinuousClock.now < retryEnd { try await Task.sleep(for: .milliseconds(50)) }
        #expect(triesOfTheOldest() >= 2)
    }

    @Test func theCascadeNamesPhotosHeldOnlyByTheItemAndDetachesItsImagesFromOtherItems() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let (mine, onlyHere, shared, kept) = (
            UUID().uuidString.lowercased(), UUID().uuidString.lowercased(), UUID().uuidString.lowercased(), UUID().uuidString.lowercased()
        )
        var doomed = Item(), other = Item()
        // As data written before AttachPhoto checked owners could be: the doomed item's own image
        // shown by another item too.
        try Self.prepareDatabase(folder) { store in
            doomed = try store.create(createRequest("Doomed"), now: 1).item
            other = try store.create(createRequest("Other"), now: 1).item
            for image in [mine, onlyHere, shared] { try Self.attach(store, image, to: doomed) }
            for image in [mine, shared, kept] { try Self.attach(store, image, to: other) }
            _ = try store.delete(key: doomed.key, now: 3)
        }
        let fake = FakeImageService(images: [doomed.key: 1], owned: [doomed.key: [mine]])
        let images = try fake.start(folder.endpoint("image"))
        defer { images.stop() }
        let host = try startItemService(in: folder)
        defer { host.stop() }
        let client = try itemClient(folder)
        defer { client.close() }
        let end = ContinuousClock.now + .seconds(30)
        while try await pending(client) > 0 && ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(20)) }
        #expect(try await pending(client) == 0)

        let requests = fake.requests.withLock { $0 }
        #expect(requests.map(\.ownerKey) == [doomed.key])
        #expect(requests.first?.attachedKeys == [onlyHere] && requests.first?.ownerDeleted == true)
        var get = GetItemRequest()
        get.key = other.key
        let after = try await client.call(ItemServiceRPC.getItem, get)
        #expect(after.photoKeys == [shared, kept] && after.primaryPhotoKey == shared && after.version == 5)
    }

    /// The cascades owed as the item service left them: failed attempts and last_error of each
    /// QUEUED or RUNNING job, by id.
    static func outbox(_ folder: TemporaryFolder) throws -> [(attempts: Int64, lastError: String)] {
        let db = try Database(path: folder.path + "/data/items/items.db", mode: .readOnly)
        defer { try? db.close() }
        return try db.query("""
            SELECT (SELECT count(*) FROM job_errors WHERE job_id = jobs.id), last_error FROM jobs
            WHERE queue = 'cascade' AND state IN (1, 2) ORDER BY id
            """).map { ($0[0].int64Value ?? -1, $0[1].stringValue ?? "") }
    }

    @Test func anOlderImageServiceThatAnswersOKWithoutRecordingTheOwnerLeavesTheCascadeOwedUntilItIsUpgraded() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let onlyHere = UUID().uuidString.lowercased()
        var doomed = Item()
        try Self.prepareDatabase(folder) { store in
            doomed = try store.create(createRequest("Doomed"), now: 1).item
            try Self.attach(store, onlyHere, to: doomed)
            _ = try store.delete(key: doomed.key, now: 3)
        }
        // A rolling upgrade, item-service first: the image service skips attached_keys and
        // owner_deleted as unknown fields, deletes the owner's own images and answers OK.
        let older = FakeImageService(images: [doomed.key: 2], older: true)
        var images = try older.start(folder.endpoint("image"))
        let collector = LogCollector()
        let host = try startItemService(
            in: folder, logger: Logger(label: "item-service", level: .info, sink: .collecting(collector)))
        defer { host.stop() }
        let client = try itemClient(folder)
        defer { client.close() }

        // Until the row has been answered twice (the retry is replayed from the image service's
        // idempotency cache), or is gone.
        let end = ContinuousClock.now + .seconds(30)
        while try (Self.outbox(folder).first?.attempts ?? 0) < 2, try await pending(client) > 0, ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(older.calls.withLock { !$0.isEmpty && $0.allSatisfy { $0 == doomed.key } }, "the older image service was asked")
        #expect(try await pending(client) == 1, "the cascade is still owed: the photo attached only to the item was not deleted")
        let expected = "image-service at \(folder.endpoint("image")) is older than this item-service: it does not record deleted owners; upgrade it"
        let rows = try Self.outbox(folder)
        #expect(rows.count == 1 && rows[0].attempts >= 2 && rows[0].lastError == expected, "\(rows)")
        let warnings = collector.lines.filter { $0.contains(" warning ") && $0.contains("cascade not delivered; will retry") }
        #expect(!warnings.isEmpty && warnings.allSatisfy { $0.contains("upgrade it") && $0.contains(doomed.key) }, "\(collector.lines)")

        // Upgraded on the same endpoint: the next attempt is the whole cascade, and the row goes.
        images.stop()
        let upgraded = FakeImageService(images: [:])
        images = try upgraded.start(folder.endpoint("image"))
        defer { images.stop() }
        let upgradeEnd = ContinuousClock.now + .seconds(30)
        while try await pending(client) > 0 && ContinuousClock.now < upgradeEnd { try await Task.sleep(for: .milliseconds(20)) }
        #expect(try await pending(client) == 0)
        let requests = upgraded.requests.withLock { $0 }
        #expect(requests.map(\.ownerKey) == [doomed.key] && requests.first?.attachedKeys == [onlyHere] && requests.first?.ownerDeleted == true)
    }

    @Test func cascadeSurvivesTheImageServiceGoingDownBetweenDeletes() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let host = try startItemService(in: folder)
        defer { host.stop() }
        let client = try itemClient(folder)
        defer { client.close() }
        var keys: [String] = []
        for index in 0..<6 { keys.append(try await client.call(ItemServiceRPC.createItem, createRequest("Item \(index)")).key) }
        let fake = FakeImageService(images: Dictionary(uniqueKeysWithValues: keys.map { ($0, 1) }))
        var images = try fake.start(folder.endpoint("image"))
        var delete = DeleteItemRequest()
        for key in keys.prefix(3) {
            delete.key = key
            _ = try await client.call(ItemServiceRPC.deleteItem, delete)
        }
        var end = ContinuousClock.now + .seconds(30)
        while try await pending(client) > 0 && ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(20)) }
        #expect(try await pending(client) == 0)

        images.stop()
        for key in keys.suffix(3) {
            delete.key = key
            _ = try await client.call(ItemServiceRPC.deleteItem, delete)
        }
        #expect(try await pending(client) == 3)
        images = try fake.start(folder.endpoint("image"))
        defer { images.stop() }
        end = ContinuousClock.now + .seconds(30)
        while try await pending(client) > 0 && ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(20)) }
        #expect(try await pending(client) == 0)
        #expect(fake.deleted.withLock { $0 } == Dictionary(uniqueKeysWithValues: keys.map { ($0, 1) }))
        #expect(fake.images.withLock { $0 }.isEmpty)
    }
}
