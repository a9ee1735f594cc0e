import RPC
import Runtime
import ZMQ

/// Where the services answer; every value overridable by flag or HOMEPWNER_* variable.
public struct ServiceEndpoints: Sendable, Hashable {
    /// item-service RPC (ROUTER).
    public var itemRPC: String
    /// item-service events (PUB).
    public var itemEvents: String
    /// image-service RPC (ROUTER).
    public var imageRPC: String
    /// image-service events (PUB).
    public var imageEvents: String
    /// capture-worker Health.
    public var captureWorkerHealth: String
    /// thumbnail-worker Health.
    public var thumbnailWorkerHealth: String

    /// Endpoints; the defaults are the loopback ports of docs/protocol.md.
    public init(
        itemRPC: String = Defaults.itemRPC, itemEvents: String = Defaults.itemEvents,
        imageRPC: String = Defaults.imageRPC, imageEvents: String = Defaults.imageEvents,
        captureWorkerHealth: String = Defaults.captureWorkerHealth,
        thumbnailWorkerHealth: String = Defaults.thumbnailWorkerHealth
    ) {
        self.itemRPC = itemRPC
        self.itemEvents = itemEvents
        self.imageRPC = imageRPC
        self.imageEvents = imageEvents
        self.captureWorkerHealth = captureWorkerHealth
        self.thumbnailWorkerHealth = thumbnailWorkerHealth
    }

    /// One set of endpoints as ipc sockets in `folder` (tests and the embedded suite).
    public static func ipc(in folder: String) -> ServiceEndpoints {
        ServiceEndpoints(
            itemRPC: "ipc://\(folder)/item.sock", itemEvents: "ipc://\(folder)/item-events.sock",
            imageRPC: "ipc://\(folder)/image.sock", imageEvents: "ipc://\(folder)/image-events.sock",
            captureWorkerHealth: "ipc://\(folder)/capture-worker.sock",
            thumbnailWorkerHealth: "ipc://\(folder)/thumbnail-worker.sock")
    }
}

/// A connected client per service of the suite.
public final class HomepwnerClients: Sendable {
    /// item-service: ItemService, CaptureService, JobQueue "capture", Health.
    public let items: RPCClient
    /// image-service: ImageService, JobQueue "thumbnails", Health.
    public let images: RPCClient

    /// Connects (in the background) to both services.
    public init(context: Context, endpoints: ServiceEndpoints, configuration: RPCClient.Configuration = .init()) throws {
        items = try RPCClient(context: context, endpoint: endpoints.itemRPC, configuration: configuration)
        images = try RPCClient(context: context, endpoint: endpoints.imageRPC, configuration: configuration)
    }

    /// Closes both connections.
    public func close() {
        items.close()
        images.close()
    }
}
