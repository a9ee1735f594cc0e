import Proto
import RPC
import Runtime

/// The ItemService methods: decode → store (on its own thread) → events.
enum ItemServiceHandlers {
    /// Publishes an item event on a topic.
    typealias Publish = @Sendable (String, ItemEvent) -> Void

    /// Registers every ItemService method on `host`.
    ///
    /// - Parameter deleted: Called after each committed delete (wakes the cascade dispatcher).
    static func register(
        on host: ServiceHost, store: ItemStoreQueue, clock: any WallClock, deleted: @escaping @Sendable () -> Void
    ) {
        let server = host.server
        // Weak: the handlers live in the host's server, and must not keep the host alive.
        let host: Publish = { [weak host] topic, event in host?.publish(topic: topic, event) }
        server.register(ItemServiceRPC.createItem) { request, _ in
            let now = clock.nowMilliseconds()
            let (item, created) = try await run(store) { try $0.create(request, now: now) }
            if created { publish(host, EventTopic.itemCreated, item, now) }
            return item
        }
        server.register(ItemServiceRPC.getItem) { request, _ in
            try await run(store) { try $0.get(key: request.key) }
        }
        server.register(ItemServiceRPC.listItems) { request, _ in
            try await run(store) { try $0.list(request) }
        }
        server.register(ItemServiceRPC.updateItem) { request, _ in
            let now = clock.nowMilliseconds()
            let item = try await run(store) { try $0.update(request, now: now) }
            publish(host, EventTopic.itemUpdated, item, now)
            return item
        }
        server.register(ItemServiceRPC.deleteItem) { request, _ in
            let now = clock.nowMilliseconds()
            let item = try await run(store) { try $0.delete(key: request.key, now: now) }
            deleted()
            publish(host, EventTopic.itemDeleted, item, now)
            return DeleteItemResponse()
        }
        server.register(ItemServiceRPC.moveItem) { request, _ in
            try await run(store) { try $0.move(from: request.fromIndex, to: request.toIndex) }
            return MoveItemResponse()
        }
        server.register(ItemServiceRPC.attachPhoto) { request, _ in
            try await photoChange(host, store, clock, key: request.itemKey) { try $0.attachPhoto(request, now: $1) }
        }
        server.register(ItemServiceRPC.detachPhoto) { request, _ in
            try await photoChange(host, store, clock, key: request.itemKey) { try $0.detachPhoto(request, now: $1) }
        }
        server.register(ItemServiceRPC.setPrimaryPhoto) { request, _ in
            try await photoChange(host, store, clock, key: request.itemKey) { try $0.setPrimaryPhoto(request, now: $1) }
        }
        server.register(ItemServiceRPC.reorderPhotos) { request, _ in
            try await photoChange(host, store, clock, key: request.itemKey) { try $0.reorderPhotos(request, now: $1) }
        }
        server.register(ItemServiceRPC.stats) { _, _ in
            try await run(store) { try $0.stats() }
        }
    }

    /// A photo change; publishes item.updated only when the version moved.
    private static func photoChange(
        _ host: @escaping Publish, _ store: ItemStoreQueue, _ clock: any WallClock, key: String,
        _ body: @escaping @Sendable (ItemStore, Int64) throws -> Item
    ) async throws -> Item {
        let now = clock.nowMilliseconds()
        let (item, changed) = try await run(store) { store in
            // Compared on the store's thread, so no other change can slip in between.
            let before = try? store.get(key: key).version
            let item = try body(store, now)
            return (item, item.version != before)
        }
        if changed { publish(host, EventTopic.itemUpdated, item, now) }
        return item
    }

    /// Runs `body` on the store's thread and turns the store's refusals into status codes.
    static func run<T: Sendable>(_ store: ItemStoreQueue, _ body: @escaping @Sendable (ItemStore) throws -> T) async throws -> T {
        do {
            return try await store.perform(body)
        } catch let error as ItemStoreError {
            throw rpcError(error)
        }
    }

    static func rpcError(_ error: ItemStoreError) -> RPCError {
        switch error {
        case let .invalidArgument(message): .invalidArgument(message)
        case let .notFound(message): .notFound(message)
        case let .outOfRange(message): .outOfRange(message)
        case let .aborted(message): .aborted(message)
        case let .failedPrecondition(message): .failedPrecondition(message)
        case .closed: .unavailable("item-service is stopping")
        }
    }

    private static func publish(_ host: Publish, _ topic: String, _ item: Item, _ now: Int64) {
        var event = ItemEvent()
        event.key = item.key
        event.item = item
        event.atMs = now
        host(topic, event)
    }
}
