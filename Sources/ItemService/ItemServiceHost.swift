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

    /// item-service's parts, in start order: the store, the image service's client, the delete
    /// cascade (to the image service, which AttachPhoto asks about each new photo too), and the
    /// host serving Health and ItemService and publishing item events. Nothing is opened, bound
    /// or started until the composition starts.
    public static func make(
        _ configuration: ItemServiceConfiguration, context: Context, logger: Logger,
        clock: any WallClock = SystemClock(), cascadeBackoff: CascadeDispatcher.Backoff = .init()
    ) throws -> ServiceComposition {
        try FileManager.default.createDirectory(
            atPath: dataFolder(configuration), withIntermediateDirectories: true)
        let store = ItemStoreQueue(path: databasePath(configuration), seedPath: configuration.seedDatabase)
        let images = ClientConnection(
            name: "image-service-client", context: context, endpoint: configuration.imageServiceEndpoint,
            configuration: .init(connectWaitMilliseconds: 500))
        let cascade = CascadeDispatcher(
            store: store, connection: images, logger: logger.with(["part": "cascade"]), backoff: cascadeBackoff, clock: clock)
        let host = try ServiceHost(
            name: "item-service", context: context, rpcEndpoints: [configuration.rpcEndpoint],
            eventEndpoints: [configuration.eventsEndpoint], maxMessageBytes: configuration.maxMessageBytes,
            logger: logger)
        ItemServiceHandlers.register(
            on: host, store: store, clock: clock, photoCheck: PhotoCheck(connection: images), deleted: { cascade.kick() })
        return ServiceComposition([store, images, cascade, host])
    }
}
