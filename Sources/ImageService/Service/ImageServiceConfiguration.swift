import Foundation
import JPEG
import Media
import JobQueue
import Runtime

/// Settings of image-service, from flags and HOMEPWNER_* variables.
public struct ImageServiceConfiguration: Sendable {
    /// The ROUTER endpoint for RPC.
    public var rpcEndpoint: String
    /// The PUB endpoint for events.
    public var eventsEndpoint: String
    /// The data root; the service keeps its files in `<dataDirectory>/images`.
    public var dataDirectory: String
    /// The frame size limit.
    public var maxMessageBytes: Int
    /// The cache's byte budget; 0 = an eighth of the memory limit of the machine or cgroup (at most 2 GiB).
    public var cacheBudgetBytes: Int
    /// Largest width × height of a JPEG, PNG or HEIC accepted.
    public var maxPixels: Int
    /// Largest chunked upload.
    public var maxUploadBytes: Int64
    /// Largest stored JPEG a rendition is made from, and largest arithmetic-coded JPEG accepted.
    public var maxRenditionSourceBytes: Int64
    /// Largest PDF document accepted (PutImage or chunked upload).
    public var maxDocumentBytes: Int64 = ImageStoreLimits.defaultMaxDocumentBytes
    /// Largest pixel buffer a PNG is decoded into (width × height × 4), checked from its header.
    public var maxDecodedBytes: Int = DecodeOptions.defaultMaxDecodedBytes
    /// What a PNG's transparency is composited on in its renditions.
    public var pngBackground: RGBColor = .white
    /// Idle uploads are dropped after this many seconds.
    public var uploadExpirySeconds: Int
    /// Whether PSI and cgroup monitors feed the cache (tests drive it themselves).
    public var watchMemoryPressure: Bool
    /// The thumbnail sizes (longest edge) queued for each stored JPEG; empty: none.
    public var thumbnailSizes: [Int]
    /// A start's quarantine folder is removed this long after it (`ImageStoreLimits.keepQuarantine`: never).
    public var quarantineRetentionMilliseconds: Int64 = ImageStoreLimits.defaultQuarantineRetentionMilliseconds
    /// How long the `thumbnails` queue keeps what finished.
    public var jobRetention = JobRetention()

    /// A configuration; every value has the protocol's default.
    public init(
        rpcEndpoint: String = Defaults.imageRPC, eventsEndpoint: String = Defaults.imageEvents,
        dataDirectory: String = Defaults.dataDir,
        maxMessageBytes: Int = Defaults.maxMessageBytes,
        cacheBudgetBytes: Int = 0, maxPixels: Int = 100_000_000, maxUploadBytes: Int64 = 4 << 30,
        uploadExpirySeconds: Int = 900, watchMemoryPressure: Bool = true,
        maxRenditionSourceBytes: Int64 = 256 << 20, thumbnailSizes: [Int] = ThumbnailQueue.defaultSizes
    ) {
        self.thumbnailSizes = thumbnailSizes
        self.rpcEndpoint = rpcEndpoint
        self.eventsEndpoint = eventsEndpoint
        self.dataDirectory = dataDirectory
        self.maxMessageBytes = maxMessageBytes
        self.cacheBudgetBytes = cacheBudgetBytes
        self.maxPixels = maxPixels
        self.maxUploadBytes = maxUploadBytes
        self.uploadExpirySeconds = uploadExpirySeconds
        self.maxRenditionSourceBytes = maxRenditionSourceBytes
        self.watchMemoryPressure = watchMemoryPressure
    }

    /// The cache budget in force: the configured one, or the default share of the memory limit.
    public var effectiveCacheBudgetBytes: Int {
        if cacheBudgetBytes > 0 { return cacheBudgetBytes }
        return Int(min(memoryLimitBytes() / 8, 2 << 30))
    }

    /// The flags of the image-service executable.
    public static let options: [OptionSpec] = [
        OptionSpec(name: "rpc", env: EnvironmentNames.imageRPC, defaultValue: Defaults.imageRPC,
                   help: "RPC endpoint to bind (ROUTER)", valueName: "ENDPOINT"),
        OptionSpec(name: "events", env: EnvironmentNames.imageEvents, defaultValue: Defaults.imageEvents,
                   help: "event endpoint to bind (PUB)", valueName: "ENDPOINT"),
        OptionSpec(name: "data-dir", env: EnvironmentNames.dataDir, defaultValue: Defaults.dataDir,
                   help: "data root; images live in DIR/images", valueName: "DIR"),
        OptionSpec(name: "max-message-bytes", env: EnvironmentNames.maxMessageBytes,
                   defaultValue: String(Defaults.maxMessageBytes), help: "largest frame accepted", valueName: "BYTES"),
        OptionSpec(name: "cache-bytes", env: EnvironmentNames.imageCacheBytes, defaultValue: "0",
                   help: "image cache budget (0 = 1/8 of the memory limit, at most 2 GiB)", valueName: "BYTES"),
        DecodeLimitOption.maxPixels,
        OptionSpec(name: "max-upload-bytes", env: EnvironmentNames.imageMaxUploadBytes, defaultValue: String(4 << 30),
                   help: "largest chunked upload", valueName: "BYTES"),
        OptionSpec(name: "max-rendition-source-bytes", env: EnvironmentNames.imageMaxRenditionSourceBytes,
                   defaultValue: String(256 << 20), help: "largest stored JPEG, PNG or HEIC a rendition is made from, and largest arithmetic-coded JPEG, PNG or HEIC accepted", valueName: "BYTES"),
        OptionSpec(name: "max-document-bytes", env: EnvironmentNames.imageMaxDocumentBytes,
                   defaultValue: String(ImageStoreLimits.defaultMaxDocumentBytes), help: "largest PDF document accepted",
                   valueName: "BYTES"),
        DecodeLimitOption.maxDecodedBytes,
        pngBackgroundOption,
        OptionSpec(name: "upload-expiry", env: EnvironmentNames.imageUploadExpirySeconds, defaultValue: "900",
                   help: "seconds an idle upload is kept", valueName: "SECONDS"),
        OptionSpec(name: "thumbnail-sizes", env: EnvironmentNames.imageThumbnailSizes,
                   defaultValue: ThumbnailQueue.defaultSizes.map(String.init).joined(separator: ","),
                   help: "thumbnail sizes (longest edge, comma-separated) queued for each stored JPEG; \"\" for none",
                   valueName: "N,N,…"),
        OptionSpec(name: "quarantine-retention", env: EnvironmentNames.imageQuarantineRetentionSeconds,
                   defaultValue: String(ImageStoreLimits.defaultQuarantineRetentionMilliseconds / 1000),
                   help: "seconds a start's quarantine/ folder is kept (0 = for good)", valueName: "SECONDS"),
    ] + JobRetention.options

    /// `--png-background`, which thumbnail-worker takes too (one variable, so renditions and
    /// thumbnails of a PNG are the same pixels).
    public static let pngBackgroundOption = OptionSpec(
        name: "png-background", env: EnvironmentNames.pngBackground, defaultValue: RGBColor.white.description,
        help: "colour a PNG's transparent pixels are composited on in its renditions (RRGGBB)", valueName: "RRGGBB")

    /// The colour of a `--png-background` value: six hex digits, `#` optional.
    public static func pngBackground(_ options: ParsedOptions) throws -> RGBColor {
        let text = try options.string("png-background")
        guard let color = RGBColor(hex: text) else {
            throw OptionError.invalidValue(option: "--png-background", value: text, reason: "not a colour as RRGGBB (six hex digits, e.g. ffffff)")
        }
        return color
    }

    /// The sizes of a `--thumbnail-sizes` value: 1…8192 each, at most 8, no repeats, in order.
    static func thumbnailSizes(_ text: String) throws -> [Int] {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        if parts == [""] { return [] }
        var sizes: [Int] = []
        for part in parts {
            guard let size = Int(part), ThumbnailQueue.sizeRange.contains(size), !sizes.contains(size) else {
                throw OptionError.invalidValue(
                    option: "--thumbnail-sizes", value: text,
                    reason: "\"\(part)\" is not a new size in \(ThumbnailQueue.sizeRange.lowerBound)…\(ThumbnailQueue.sizeRange.upperBound)")
            }
            sizes.append(size)
        }
        guard sizes.count <= ThumbnailQueue.maxSizes else {
            throw OptionError.invalidValue(option: "--thumbnail-sizes", value: text, reason: "at most \(ThumbnailQueue.maxSizes) sizes")
        }
        return sizes.sorted()
    }

    /// Reads the parsed flags; refuses values outside their range.
    public init(_ options: ParsedOptions) throws {
        for (name, minimum) in [("cache-bytes", 0), ("max-pixels", 1), ("max-upload-bytes", 1), ("max-rendition-source-bytes", 1), ("max-document-bytes", 1), ("upload-expiry", 1)] {
            let value = try options.int(name)
            guard value >= minimum else {
                throw OptionError.invalidValue(option: "--\(name)", value: String(value), reason: "must be ≥ \(minimum)")
            }
        }
        self.init(
            rpcEndpoint: try options.string("rpc"), eventsEndpoint: try options.string("events"),
            dataDirectory: try options.string("data-dir"),
            maxMessageBytes: try options.int("max-message-bytes"),
            cacheBudgetBytes: try options.int("cache-bytes"), maxPixels: try options.int("max-pixels"),
            maxUploadBytes: Int64(try options.int("max-upload-bytes")),
            uploadExpirySeconds: try options.int("upload-expiry"),
            maxRenditionSourceBytes: Int64(try options.int("max-rendition-source-bytes")),
            thumbnailSizes: try Self.thumbnailSizes(try options.string("thumbnail-sizes")))
        maxDocumentBytes = Int64(try options.int("max-document-bytes"))
        maxDecodedBytes = try DecodeLimitOption.positive(options, DecodeLimitOption.maxDecodedBytes)
        pngBackground = try Self.pngBackground(options)
        quarantineRetentionMilliseconds = try JobRetention.milliseconds(options, "quarantine-retention")
        jobRetention = try JobRetention(options)
    }
}

