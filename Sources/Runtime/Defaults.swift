/// Default endpoints and settings shared by every Homepwner process.
///
/// Each can be overridden by the environment variable named in ``EnvironmentNames`` or by a flag.
public enum Defaults {
    /// The item service's RPC endpoint (ROUTER).
    public static let itemRPC = "tcp://127.0.0.1:5551"
    /// The item service's event endpoint (PUB).
    public static let itemEvents = "tcp://127.0.0.1:5561"
    /// The image service's RPC endpoint (ROUTER).
    public static let imageRPC = "tcp://127.0.0.1:5552"
    /// The image service's event endpoint (PUB).
    public static let imageEvents = "tcp://127.0.0.1:5562"
    /// The capture worker's health/RPC endpoint.
    public static let captureWorkerHealth = "tcp://127.0.0.1:5553"
    /// The thumbnail worker's health/RPC endpoint.
    public static let thumbnailWorkerHealth = "tcp://127.0.0.1:5554"
    /// The directory holding databases and image files.
    public static let dataDir = "./data"
    /// The largest message, in bytes, a process accepts (64 MiB).
    public static let maxMessageBytes = 64 * 1024 * 1024
}
