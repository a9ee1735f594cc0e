import JPEG
import JobQueue
import Proto

/// The limits the store enforces on what clients send.
public struct ImageStoreLimits: Sendable {
    /// Largest width × height a JPEG, PNG or HEIC header may declare (checked before anything is decoded).
    public var maxPixels: Int
    /// Largest pixel buffer a PNG is decoded into (width × height × 4), or a HEIC's decode holds
    /// (× 8, × 11 with alpha: `HEIFHeader.decodedBytes`), checked from its header before
    /// anything is decoded (`DecodeOptions.maxDecodedBytes`).
    public var maxDecodedBytes: Int = DecodeOptions.defaultMaxDecodedBytes
    /// What a PNG's transparent pixels are composited on in its renditions.
    public var pngBackground: RGBColor = .white
    /// Largest blob accepted through a chunked upload.
    public var maxUploadBytes: Int64
    /// Largest AppendUpload chunk.
    public var maxChunkBytes: Int
    /// An upload with no call for this long is dropped with its staged bytes.
    public var uploadExpiryMilliseconds: Int64
    /// Uploads one client (`RPCContext.peer`) may have open at once.
    public var maxOpenUploads: Int
    /// Uploads open at once in all (each holds a staging file open).
    public var maxOpenUploadsTotal: Int
    /// Largest stored JPEG, PNG or HEIC a rendition is made from (it is read and decoded whole), and
    /// largest arithmetic-coded JPEG, PNG or HEIC a put or upload accepts (it is decoded to be validated).
    public var maxRenditionSourceBytes: Int64
    /// Largest PDF document accepted, by PutImage or a chunked upload.
    public var maxDocumentBytes: Int64
    /// A start's quarantine folder is removed this long after that start (``keepQuarantine``:
    /// never): long enough to notice an images.db restored from an older copy and put its newer
    /// photos back.
    public var quarantineRetentionMilliseconds: Int64
    /// How long the `thumbnails` queue keeps DONE and DEAD jobs and finished batches.
    public var jobRetention: JobRetention

    /// A quarantine retention that keeps every folder.
    public static let keepQuarantine = JobRetention.keep
    /// 30 days.
    public static let defaultQuarantineRetentionMilliseconds: Int64 = 30 * 24 * 3600 * 1000

    /// 50 MiB: a scanned manual of a few hundred pages.
    public static let defaultMaxDocumentBytes: Int64 = 50 << 20

    /// Limits; every value has a default suited to phone photos, short videos and scanned receipts.
    public init(
        maxPixels: Int = 100_000_000, maxUploadBytes: Int64 = 4 << 30, maxChunkBytes: Int = 16 << 20,
        uploadExpiryMilliseconds: Int64 = 15 * 60 * 1000, maxOpenUploads: Int = 256,
        maxOpenUploadsTotal: Int = 1024, maxRenditionSourceBytes: Int64 = 256 << 20,
        maxDocumentBytes: Int64 = defaultMaxDocumentBytes,
        quarantineRetentionMilliseconds: Int64 = defaultQuarantineRetentionMilliseconds,
        jobRetention: JobRetention = JobRetention()
    ) {
        self.quarantineRetentionMilliseconds = quarantineRetentionMilliseconds
        self.jobRetention = jobRetention
        self.maxPixels = maxPixels
        self.maxUploadBytes = maxUploadBytes
        self.maxChunkBytes = maxChunkBytes
        self.uploadExpiryMilliseconds = uploadExpiryMilliseconds
        self.maxOpenUploads = maxOpenUploads
        self.maxOpenUploadsTotal = maxOpenUploadsTotal
        self.maxRenditionSourceBytes = maxRenditionSourceBytes
        self.maxDocumentBytes = maxDocumentBytes
    }
}

/// What a new image is, apart from its bytes (PutImage and BeginUpload fields).
public struct NewImage: Sendable {
    /// The owner (an item key); for derived images empty = the parent's owner.
    public var ownerKey = ""
    /// Empty = sniffed.
    public var contentType = ""
    /// ORIGINAL, EDITED or THUMBNAIL.
    public var kind: ImageKind = .original
    /// For EDITED and THUMBNAIL: the original.
    public var parentKey = ""
    /// Empty = a new UUID.
    public var key = ""
    /// For uploads: what the client says it sends; unspecified = sniffed.
    public var mediaType: MediaType = .unspecified

    /// A description of a new image; every field optional.
    public init(
        ownerKey: String = "", contentType: String = "", kind: ImageKind = .original, parentKey: String = "",
        key: String = "", mediaType: MediaType = .unspecified
    ) {
        self.ownerKey = ownerKey
        self.contentType = contentType
        self.kind = kind
        self.parentKey = parentKey
        self.key = key
        self.mediaType = mediaType
    }
}
