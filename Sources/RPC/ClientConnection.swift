import Runtime
import Locking
import ZMQ

/// A part's client of another process (item-service's of the image service): a service of its
/// composition, so the client and its I/O thread exist from `start()` to `stop()` and a factory
/// that is only called starts no thread.
///
/// Services started after it (handlers, the cascade) read ``client``.
public final class ClientConnection: LifecycleService {
    public let name: String
    private let context: Context
    private let endpoint: String
    private let configuration: RPCClient.Configuration
    private let opened = Locked<RPCClient?>(nil)

    /// A connection to `endpoint`, made by ``start()``.
    public init(name: String, context: Context, endpoint: String, configuration: RPCClient.Configuration = .init()) {
        self.name = name
        self.context = context
        self.endpoint = endpoint
        self.configuration = configuration
    }

    /// Creates the client (it connects in the background).
    public func start() throws {
        let client = try RPCClient(context: context, endpoint: endpoint, configuration: configuration)
        opened.withLock { $0 = client }
    }

    /// Closes the client: calls in flight and later fail with CANCELLED.
    public func stop() {
        opened.withLock { $0 }?.close()
    }

    /// The client, once ``start()`` returned (the services after this one in its composition);
    /// closed after ``stop()``.
    public var client: RPCClient {
        guard let client = opened.withLock({ $0 }) else {
            preconditionFailure("\(name): client used before start()")
        }
        return client
    }
}
