import Foundation
import RPC
import Runtime
import ZMQ

/// Composes item-service: its data folder, RPC server and event publisher.
public enum ItemServiceHost {
    /// The folder under the data root that only item-service touches.
    public static func dataFolder(_ configuration: ItemServiceConfiguration) -> String {
        (configuration.dataDirectory as NSString).appendingPathComponent("items")
    }

    /// A host serving Health (and, as they land, the ItemService and capture JobQueue methods).
    public static func make(
        _ configuration: ItemServiceConfiguration, context: Context, logger: Logger
    ) throws -> ServiceHost {
        try FileManager.default.createDirectory(
            atPath: dataFolder(configuration), withIntermediateDirectories: true)
        return try ServiceHost(
            name: "item-service", context: context, rpcEndpoints: [configuration.rpcEndpoint],
            eventEndpoints: [configuration.eventsEndpoint], maxMessageBytes: configuration.maxMessageBytes,
            logger: logger)
    }
}
