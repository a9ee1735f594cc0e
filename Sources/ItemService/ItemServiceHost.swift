import Foundation
import RPC
import Runtime
import ZMQ

/// Composes item-service: its data folder, store, RPC handlers, events and delete cascade.
public enum ItemServiceHost {
    /// The folder under the data root that only item-service touches.
    public static func dataFolder(_ configuration: ItemServiceConfiguration) -> String {
        (configuration.dataDirectory as NSString).appendingPathComponent("items")
    }

    /// The database file.
    public static func databasePath(_ configuration: ItemServiceConfiguration) -> String {
        (dataFolder(configuration) as NSString).appendingPathComponent("items.db")
    }

    /// A host serving Health and ItemService, publishing item events and delivering the
    /// delete cascade to the image service (which AttachPhoto asks about each new photo too);
    /// stopping the host stops the cascade and closes the store.
    public static func make(
        _ configuration: ItemServiceConfiguration, context: Context, logger: Logger,
        clock: any WallClock = SystemClock(), cascadeBackoff: CascadeDispatcher.Backoff = .init()
    ) throws -> ServiceHost {
        try FileManager.default.createDirectory(
            atPath: dataFolder(configuration), withIntermediateDirectories: true)
        let store = try ItemStoreQueue(path: databasePath(configuration), seedPath: configuration.seedDatabase)
        let host: ServiceHost
        let imageClient: RPCClient
        do {
            host = try ServiceHost(
                name: "item-service", context: context, rpcEndpoints: [configuration.rpcEndpoint],
                eventEndpoints: [configuration.eventsEndpoint], maxMessageBytes: configuration.maxMessageBytes,
                logger: logger)
            imageClient = try RPCClient(
                context: context, endpoint: configuration.imageServiceEndpoint,
                configuration: .init(connectWaitMilliseconds: 500))
        } catch {
            store.close()
            throw error
        }
        let cascade = CascadeDispatcher(
            store: store, client: imageClient, logger: logger.with(["part": "cascade"]), backoff: cascadeBackoff, clock: clock)
        ItemServiceHandlers.register(
            on: host, store: store, clock: clock, photoCheck: PhotoCheck(client: imageClient), deleted: { cascade.kick() })
        cascade.start()
        let resources = Resources(store: store, cascade: cascade)
        host.addStopAction { resources.close() }
        return host
    }

    /// The store and the cascade, closed once: when the host stops, or when a host that
    /// never started (a failed bind) is released.
    final class Resources: Sendable {
        let store: ItemStoreQueue
        let cascade: CascadeDispatcher

        init(store: ItemStoreQueue, cascade: CascadeDispatcher) {
            self.store = store
            self.cascade = cascade
        }

        func close() {
            cascade.stop()
            store.close()
        }

        deinit { close() }
    }
}
