import Foundation
import RPC
import Runtime
import ZMQ

/// Composes image-service: its data folder, RPC server and event publisher.
public enum ImageServiceHost {
    /// The folder under the data root that only image-service touches.
    public static func dataFolder(_ configuration: ImageServiceConfiguration) -> String {
        (configuration.dataDirectory as NSString).appendingPathComponent("images")
    }

    /// A host serving Health (and, as they land, the ImageService and capture JobQueue methods).
    public static func make(
        _ configuration: ImageServiceConfiguration, context: Context, logger: Logger
    ) throws -> ServiceHost {
        try FileManager.default.createDirectory(
            atPath: dataFolder(configuration), withIntermediateDirectories: true)
        return try ServiceHost(
            name: "image-service", context: context, rpcEndpoints: [configuration.rpcEndpoint],
            eventEndpoints: [configuration.eventsEndpoint], maxMessageBytes: configuration.maxMessageBytes,
            logger: logger)
    }
}
