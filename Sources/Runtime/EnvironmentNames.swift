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
    /// Prometheus scrape endpoints (`--metrics`; unset or empty: none), one per executable, and
    /// `homepwner up`'s one for the whole suite.
    public static let itemMetrics = "HOMEPWNER_ITEM_METRICS"
    public static let imageMetrics = "HOMEPWNER_IMAGE_METRICS"
    public static let captureWorkerMetrics = "HOMEPWNER_CAPTURE_WORKER_METRICS"
    public static let thumbnailWorkerMetrics = "HOMEPWNER_THUMBNAIL_WORKER_METRICS"
    public static let upMetrics = "HOMEPWNER_METRICS"
    /// Overrides ``Defaults/captureWorkerHealth``.
    public static let captureWorkerHealth = "HOMEPWNER_CAPTURE_WORKER_RPC"
    /// Overrides ``Defaults/thumbnailWorkerHealth``.
    public static let thumbnailWorkerHealth = "HOMEPWNER_THUMBNAIL_WORKER_RPC"
    /// Jobs a worker runs at once (`--concurrency`; 0 = one per core).
    public static let workerConcurrency = "HOMEPWNER_WORKER_CONCURRENCY"
    /// The lease a worker takes jobs with (`--lease-ms`; 0 = the queue's default).
    public static let workerLeaseMilliseconds = "HOMEPWNER_WORKER_LEASE_MS"
    public static let workerMemoryMegabytes = "HOMEPWNER_WORKER_MEMORY_MB"
    /// The longest a worker lets one job run before it stops it and fails it (`--max-job-ms`).
    public static let workerMaxJobMilliseconds = "HOMEPWNER_WORKER_MAX_JOB_MS"
    /// item-service: a database to copy when none exists yet (`--seed-db`).
    public static let itemSeedDB = "HOMEPWNER_ITEM_SEED_DB"
    /// image-service: the cache budget in bytes; 0 = a fraction of the memory limit.
    public static let imageCacheBytes = "HOMEPWNER_IMAGE_CACHE_BYTES"
    /// image-service: the largest width × height accepted in an image header.
    public static let imageMaxPixels = "HOMEPWNER_IMAGE_MAX_PIXELS"
    /// image-service: the largest chunked upload in bytes.
    public static let imageMaxUploadBytes = "HOMEPWNER_IMAGE_MAX_UPLOAD_BYTES"
    /// image-service: the largest PDF document accepted, in bytes (`--max-document-bytes`).
    public static let imageMaxDocumentBytes = "HOMEPWNER_IMAGE_MAX_DOCUMENT_BYTES"
    /// image-service: the largest stored JPEG a rendition is made from, in bytes.
    public static let imageMaxRenditionSourceBytes = "HOMEPWNER_IMAGE_MAX_RENDITION_SOURCE_BYTES"
    /// image-service: the largest pixel buffer a PNG is decoded into (width × height × 4), in bytes.
    public static let imageMaxDecodedBytes = "HOMEPWNER_IMAGE_MAX_DECODED_BYTES"
    /// image-service and thumbnail-worker: the colour a PNG's transparency is composited on
    /// in its renditions and thumbnails (`RRGGBB`); one variable, so both make the same pixels.
    public static let pngBackground = "HOMEPWNER_PNG_BACKGROUND"
    /// thumbnail-worker: the most of a movie read to find its poster, in MiB (`--movie-max-read-mb`).
    public static let movieMaxReadMegabytes = "HOMEPWNER_MOVIE_MAX_READ_MB"
    /// image-service: seconds before an idle chunked upload is dropped.
    public static let imageUploadExpirySeconds = "HOMEPWNER_IMAGE_UPLOAD_EXPIRY_SECONDS"
    /// image-service: the thumbnail sizes queued for each stored JPEG ("64,256,1024"; "" for none).
    public static let imageThumbnailSizes = "HOMEPWNER_THUMBNAIL_SIZES"
    /// image-service: seconds a start's quarantine folder is kept (0 = for good).
    public static let imageQuarantineRetentionSeconds = "HOMEPWNER_IMAGE_QUARANTINE_RETENTION_SECONDS"
    /// Services with job queues: seconds DONE jobs are kept (0 = for good).
    public static let jobDoneRetentionSeconds = "HOMEPWNER_JOB_DONE_RETENTION_SECONDS"
    /// Services with job queues: seconds DEAD jobs are kept (0 = for good).
    public static let jobDeadRetentionSeconds = "HOMEPWNER_JOB_DEAD_RETENTION_SECONDS"
    /// Services with job queues: seconds finished batches are kept (0 = for good).
    public static let jobBatchRetentionSeconds = "HOMEPWNER_JOB_BATCH_RETENTION_SECONDS"
    /// The photo library folder capture reads from (`CaptureSources.libraryDirectory`).
    public static let captureLibrary = "HOMEPWNER_CAPTURE_LIBRARY"
    /// The command that takes a photo (`CaptureSources.cameraCommand`).
    public static let captureCamera = "HOMEPWNER_CAPTURE_CAMERA"
    /// How long the camera command may run, in milliseconds.
    public static let captureCameraTimeout = "HOMEPWNER_CAPTURE_CAMERA_TIMEOUT_MS"
    /// Whether SaveToAlbum may write into the library's album folder.
    public static let captureAlbumWritable = "HOMEPWNER_CAPTURE_ALBUM_WRITABLE"
    /// The colour outside a circle edit (capture-worker).
    public static let captureEditBackground = "HOMEPWNER_CAPTURE_EDIT_BACKGROUND"
    /// CURVE (docs/protocol.md §16): the servers' secret key file (`--server-secret-key`).
    public static let serverSecretKey = "HOMEPWNER_SERVER_SECRET_KEY"
    /// The allowed-keys file servers admit clients from (`--allowed-keys`).
    public static let allowedKeys = "HOMEPWNER_ALLOWED_KEYS"
    /// A client's own secret key file (`--client-secret-key`; the CLI's too).
    public static let clientSecretKey = "HOMEPWNER_CLIENT_SECRET_KEY"
    /// The servers' public key, a file or Z85 (`--server-key`).
    public static let serverKey = "HOMEPWNER_SERVER_KEY"
    /// "1": bind non-loopback addresses without keys (`--insecure`).
    public static let insecure = "HOMEPWNER_INSECURE"
    /// The bearer token file a scrape endpoint asks for (`--metrics-token-file`).
    public static let metricsTokenFile = "HOMEPWNER_METRICS_TOKEN_FILE"
}
