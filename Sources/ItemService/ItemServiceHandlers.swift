import Proto
import RPC
import Runtime

/// The ItemService methods: decode → store (on its own thread) → events.
enum ItemServiceHandlers {
    /// Publishes an event (events.proto) on a topic.
    typealias Publish = @Sendable (String, any ProtoMessage) -> Void

    /// Registers every ItemService method on `host`.
    ///
    /// - Parameters:
    ///   - reader: The read-only connection GetValuation and GetReadiness run on.
    ///   - photoCheck: Asks the image service about each photo AttachPhoto is to attach.
    ///   - deleted: Called after each committed delete (wakes the cascade runner).
    static func register(
        on host: ServiceHost, store: ItemStoreQueue, reader: ItemReaderQueue, clock: any WallClock, photoCheck: PhotoCheck,
        deleted: @escaping @Sendable () -> Void
    ) {
        let server = host.server
        // Weak: the handlers live in the host's server, and must not keep the host alive.
        // Events are published on the store's thread right before the reply, which wakes the
        // RPC I/O thread (it sends the event, then the reply): no wake-up of their own.
        let host: Publish = { [weak host] topic, event in host?.publish(topic: topic, event, wakeIOThread: false) }
        onStore(server, ItemServiceRPC.createItem, store) { request, store in
            let now = clock.nowMilliseconds()
            return (try store.create(request, now: now), now)
        } finish: { result in
            let ((item, created), now) = result
            if created { publish(host, EventTopic.itemCreated, item, now) }
            return item
        }
        onStore(server, ItemServiceRPC.getItem, store) { request, store in
            try store.get(key: request.key, asOf: request.asOf)
        } finish: { $0 }
        onStore(server, ItemServiceRPC.listItems, store) { request, store in
            try store.list(request)
        } finish: { $0 }
        onStore(server, ItemServiceRPC.updateItem, store) { request, store in
            let now = clock.nowMilliseconds()
            return (try store.update(request, now: now), now)
        } finish: { item, now in
            publish(host, EventTopic.itemUpdated, item, now)
            return item
        }
        onStore(server, ItemServiceRPC.deleteItem, store) { request, store in
            let now = clock.nowMilliseconds()
            return (try store.delete(key: request.key, now: now), now)
        } finish: { item, now in
            deleted()
            publish(host, EventTopic.itemDeleted, item, now)
            return DeleteItemResponse()
        }
        onStore(server, ItemServiceRPC.moveItem, store) { request, store in
            try store.move(from: request.fromIndex, to: request.toIndex, now: clock.nowMilliseconds())
        } finish: { MoveItemResponse() }
        attachPhoto(server, host, store, clock, photoCheck)
        detachPhoto(server, host, store, clock)
        photoChange(server, ItemServiceRPC.setPrimaryPhoto, host, store, clock, key: \.itemKey) {
            try $0.setPrimaryPhoto($1, now: $2)
        }
        photoChange(server, ItemServiceRPC.reorderPhotos, host, store, clock, key: \.itemKey) {
            try $0.reorderPhotos($1, now: $2)
        }
        onStore(server, ItemServiceRPC.stats, store) { _, store in
            try store.stats()
        } finish: { $0 }
        photoChange(server, ItemServiceRPC.setPhotoRole, host, store, clock, key: \.itemKey) {
            try $0.setPhotoRole($1, now: $2)
        }
        registerInventory(on: server, host, store: store, reader: reader, clock: clock)
    }

    /// Locations, categories, the policy (inventory.proto): each one job on the store's thread,
    /// each change published (location.*, category.*, policy.updated); valuation and
    /// readiness, which read every item in scope, on the reader's.
    private static func registerInventory(
        on server: RPCServer, _ host: @escaping Publish, store: ItemStoreQueue, reader: ItemReaderQueue, clock: any WallClock
    ) {
        onStore(server, ItemServiceRPC.createLocation, store) { request, store in
            let now = clock.nowMilliseconds()
            return (try store.addLocation(request, now: now), now)
        } finish: { result, now in
            if result.created { host(EventTopic.locationCreated, locationEvent(result.location, now)) }
            return result.location
        }
        onStore(server, ItemServiceRPC.getLocation, store) { request, store in
            try store.getLocation(key: request.key)
        } finish: { $0 }
        onStore(server, ItemServiceRPC.listLocations, store) { request, store in
            try store.listLocations(request)
        } finish: { $0 }
        onStore(server, ItemServiceRPC.updateLocation, store) { request, store in
            let now = clock.nowMilliseconds()
            return (try store.updateLocation(request, now: now), now)
        } finish: { location, now in
            host(EventTopic.locationUpdated, locationEvent(location, now))
            return location
        }
        onStore(server, ItemServiceRPC.deleteLocation, store) { request, store in
            let now = clock.nowMilliseconds()
            return (try store.deleteLocation(key: request.key, now: now), now)
        } finish: { location, now in
            host(EventTopic.locationDeleted, locationEvent(location, now))
            return DeleteLocationResponse()
        }
        onStore(server, ItemServiceRPC.createCategory, store) { request, store in
            let now = clock.nowMilliseconds()
            return (try store.addCategory(request, now: now), now)
        } finish: { result, now in
            if result.created { host(EventTopic.categoryCreated, categoryEvent(result.category, now)) }
            return result.category
        }
        onStore(server, ItemServiceRPC.listCategories, store) { _, store in
            try store.listCategories()
        } finish: { $0 }
        onStore(server, ItemServiceRPC.updateCategory, store) { request, store in
            let now = clock.nowMilliseconds()
            return (try store.updateCategory(request, now: now), now)
        } finish: { category, now in
            host(EventTopic.categoryUpdated, categoryEvent(category, now))
            return category
        }
        onStore(server, ItemServiceRPC.deleteCategory, store) { request, store in
            let now = clock.nowMilliseconds()
            return (try store.deleteCategory(key: request.key, now: now), now)
        } finish: { category, now in
            host(EventTopic.categoryDeleted, categoryEvent(category, now))
            return DeleteCategoryResponse()
        }
        onStore(server, ItemServiceRPC.getPolicy, store) { _, store in
            try store.policy()
        } finish: { $0 }
        onStore(server, ItemServiceRPC.updatePolicy, store) { request, store in
            let now = clock.nowMilliseconds()
            return (try store.updatePolicy(request, now: now), now)
        } finish: { policy, now in
            var event = PolicyEvent()
            event.policy = policy
            event.atMs = now
            host(EventTopic.policyUpdated, event)
            return policy
        }
        onReader(server, ItemServiceRPC.getValuation, reader) { request, reader in
            try reader.valuation(request, now: clock.nowMilliseconds())
        }
        onReader(server, ItemServiceRPC.getReadiness, reader) { request, reader in
            try reader.readiness(request)
        }
        onReader(server, HistoryServiceRPC.getHistory, reader) { request, reader in
            try reader.history(request)
        }
        onReader(server, HistoryServiceRPC.verifyHistory, reader) { _, reader in
            try reader.verifyHistory()
        }
    }

    /// Registers `method` to run on the store's thread and reply from there once its
    /// transaction has committed: no hop through the task pool (two thread wake-ups fewer).
    ///
    /// - Parameters:
    ///   - work: Runs in the store's transaction.
    ///   - finish: Runs after the commit (events) and makes the response.
    private static func onStore<Request, Response, T: Sendable>(
        _ server: RPCServer, _ method: ProtoMethod<Request, Response>, _ store: ItemStoreQueue,
        _ work: @escaping @Sendable (Request, ItemStore) throws -> T,
        finish: @escaping @Sendable (T) -> Response
    ) {
        server.registerDeferred(method) { request, context, reply in
            store.submit({ store in
                // Queued past the call's deadline (its caller was answered 4): apply nothing.
                try context.checkDeadline()
                return try store.acting(as: context.historyActor) { try work(request, store) }
            }) { result in
                reply(result.map(finish))
            }
        }
    }

    private static func locationEvent(_ location: Location, _ now: Int64) -> LocationEvent {
        var event = LocationEvent()
        event.key = location.key
        event.location = location
        event.atMs = now
        return event
    }

    private static func categoryEvent(_ category: Category, _ now: Int64) -> CategoryEvent {
        var event = CategoryEvent()
        event.key = category.key
        event.category = category
        event.atMs = now
        return event
    }

    /// Registers the read `method` to run on the reader's thread and reply from there.
    private static func onReader<Request, Response: Sendable>(
        _ server: RPCServer, _ method: ProtoMethod<Request, Response>, _ reader: ItemReaderQueue,
        _ work: @escaping @Sendable (Request, ItemReader) throws -> Response
    ) {
        server.registerDeferred(method) { request, context, reply in
            reader.submit({ reader in
                try context.checkDeadline()
                return try work(request, reader)
            }, then: reply)
        }
    }

    /// A photo change; publishes item.updated only when the version moved.
    private static func photoChange<Request: ProtoMessage>(
        _ server: RPCServer, _ method: ProtoMethod<Request, Item>, _ host: @escaping Publish, _ store: ItemStoreQueue,
        _ clock: any WallClock, key: any KeyPath<Request, String> & Sendable,
        _ body: @escaping @Sendable (ItemStore, Request, Int64) throws -> Item
    ) {
        onStore(server, method, store) { request, store in
            try changeWork(request, store, clock, key: key, body)
        } finish: { finishChange(host, $0) }
    }

    /// AttachPhoto: a photo not attached yet is attached only once the image service has said
    /// it exists and belongs to the item (or to no owner), and not when the item holds its
    /// content (the checksum it said) already; one attached already is not asked about again (a
    /// repeat, or make_primary, works while the image service is down).
    private static func attachPhoto(
        _ server: RPCServer, _ host: @escaping Publish, _ store: ItemStoreQueue, _ clock: any WallClock, _ photoCheck: PhotoCheck
    ) {
        server.registerDeferred(ItemServiceRPC.attachPhoto) { request, context, reply in
            @Sendable func attach(checksum: String) {
                store.submit({ store in
                    // Queued (or checked with the image service) past the call's deadline: apply nothing.
                    try context.checkDeadline()
                    return try store.acting(as: context.historyActor) {
                        try changeWork(request, store, clock, key: \.itemKey) {
                            try $0.attachPhoto($1, checksum: checksum, now: $2)
                        }
                    }
                }) { result in
                    reply(result.map { finishChange(host, $0) })
                }
            }
            // The store's checks first (keys, item, room, a photo deleted with another item),
            // so what the item service can tell alone never waits for the image service.
            store.submit({ store in
                let keys = try store.photoToCheck(request)
                // A worker key attaches only what a capture job it holds stored (a photo the
                // item holds already is only made primary, or nothing).
                if let keys, context.callerIsWorker {
                    try store.checkCaptureHolds(itemKey: keys.itemKey, imageKey: keys.imageKey, now: clock.nowMilliseconds())
                }
                return keys
            }) { result in
                switch result {
                case .failure(let error):
                    reply(.failure(error))
                case .success(nil):
                    attach(checksum: "")
                case .success(let keys?):
                    Task(priority: RPCServer.handlerPriority) {
                        let info: ImageInfo
                        do {
                            // What is left of the call's deadline, less a moment for the attach itself.
                            info = try await photoCheck.check(
                                imageKey: keys.imageKey, itemKey: keys.itemKey,
                                budgetMilliseconds: context.remainingMilliseconds - 100)
                        } catch {
                            reply(.failure(error))
                            return
                        }
                        attach(checksum: info.checksum)
                    }
                }
            }
        }
    }

    /// DetachPhoto; a worker key's only of an image a capture job it holds for the item stored.
    private static func detachPhoto(_ server: RPCServer, _ host: @escaping Publish, _ store: ItemStoreQueue, _ clock: any WallClock) {
        server.registerDeferred(ItemServiceRPC.detachPhoto) { request, context, reply in
            store.submit({ store in
                try context.checkDeadline()
                return try store.acting(as: context.historyActor) {
                    try changeWork(request, store, clock, key: \.itemKey) { store, request, now in
                        if context.callerIsWorker {
                            try store.checkCaptureHolds(
                                itemKey: try ItemInput.key(request.itemKey, field: "item_key"),
                                imageKey: try ItemInput.key(request.imageKey, field: "image_key"), now: now)
                        }
                        return try store.detachPhoto(request, now: now)
                    }
                }
            }) { result in
                reply(result.map { finishChange(host, $0) })
            }
        }
    }

    /// A photo change's work in its store job; the version is compared in the same job, so no
    /// other change can slip in between.
    private static func changeWork<Request>(
        _ request: Request, _ store: ItemStore, _ clock: any WallClock, key: KeyPath<Request, String>,
        _ body: (ItemStore, Request, Int64) throws -> Item
    ) throws -> (Item, Bool, Int64) {
        let now = clock.nowMilliseconds()
        let before = try? store.get(key: request[keyPath: key]).version
        let item = try body(store, request, now)
        return (item, item.version != before, now)
    }

    private static func finishChange(_ host: Publish, _ change: (Item, Bool, Int64)) -> Item {
        let (item, changed, now) = change
        if changed { publish(host, EventTopic.itemUpdated, item, now) }
        return item
    }

    private static func publish(_ host: Publish, _ topic: String, _ item: Item, _ now: Int64) {
        var event = ItemEvent()
        event.key = item.key
        event.item = item
        event.atMs = now
        host(topic, event)
    }
}
