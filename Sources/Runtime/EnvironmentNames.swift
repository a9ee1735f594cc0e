/// Names of the environment variables every Homepwner process reads; see ``Defaults`` for the values used when unset.
public enum EnvironmentNames {
    /// Overrides ``Defaults/itemRPC``.
    public static let itemRPC = "HOMEPWNER_ITEM_RPC"
    /// Overrides ``Defaults/itemEvents``.
    public static let itemEvents = "HOMEPWNER_ITEM_EVENTS"
    /// Overrides ``Defaults/imageRPC``.
    public static let imageRPC = "HOMEPWNER_IMAGE_RPC"
    /// Overrides ``Defaults/imageEvents``.
    public static let imageEvents = "HOMEPWNER_IMAGE_EVENTS"
    /// Overrides ``Defaults/dataDir``.
    public static let dataDir = "HOMEPWNER_DATA_DIR"
    /// The minimum ``LogLevel`` to emit, by name (case-insensitive).
    public static let logLevel = "HOMEPWNER_LOG_LEVEL"
    /// Overrides ``Defaults/maxMessageBytes``.
    public static let maxMessageBytes = "HOMEPWNER_MAX_MESSAGE_BYTES"
    /// Overrides ``Defaults/captureWorkerHealth``.
    public static let captureWorkerHealth = "HOMEPWNER_CAPTURE_WORKER_RPC"
    /// Overrides ``Defaults/thumbnailWorkerHealth``.
    public static let thumbnailWorkerHealth = "HOMEPWNER_THUMBNAIL_WORKER_RPC"
}
