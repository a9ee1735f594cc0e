import JobQueue
import Proto

/// The `thumbnails` queue image-service serves: one job per stored ORIGINAL or EDITED JPEG, PNG or
/// HEIC, and per ORIGINAL movie in a container posters are made from (its poster frame's
/// thumbnails, made by the thumbnail worker), for all its sizes, enqueued in the transaction that
/// adds the image's row.
public enum ThumbnailQueue {
    /// The queue's name on the wire.
    public static let name = JobQueueSpec.thumbnails.name

    /// The sizes (longest edge) made when none are asked for: a list icon, a grid tile and a
    /// detail view.
    public static let defaultSizes = [64, 256, 1024]

    /// The sizes a thumbnail may be asked for at, and how many sizes one job makes.
    public static let sizeRange = 1...8192
    public static let maxSizes = 8

    /// The queue with the library's defaults (5 attempts over about 3 minutes, 30 s leases)
    /// and `retention` (by default DONE jobs kept 24 h, DEAD ones and finished batches a week):
    /// a thumbnail that fails five times is a poison image, not bad luck.
    static func configuration(retention: JobRetention = JobRetention()) -> JobQueueConfiguration {
        JobQueueConfiguration(name: name, retention: retention)
    }

    /// The content types of images thumbnails are made from.
    static let contentTypes = ["image/jpeg", "image/png", "image/heic"]

    /// The content types of movies whose poster frame thumbnails are made from: the containers
    /// the worker's demuxers read (ISO BMFF/QuickTime, Matroska/WebM; not AVI).
    static let movieContentTypes = ["video/mp4", "video/quicktime", "video/3gpp", "video/webm", "video/x-matroska"]

    /// Whether storing `info` makes thumbnails: a JPEG, PNG or HEIC original or edit, or a movie
    /// in `movieContentTypes` (not a thumbnail, AVIF, AVI or a PDF document).
    static func wants(_ info: ImageInfo) -> Bool {
        guard info.kind == .original || info.kind == .edited else { return false }
        switch info.mediaType {
        case .image: return contentTypes.contains(info.contentType)
        case .movie: return movieContentTypes.contains(info.contentType)
        default: return false
        }
    }

    /// The SQL condition `wants` is in the `images` table (aliased `i`), for the pages of
    /// `EnqueueThumbnails` with `all`.
    static var wantedSQL: String {
        func list(_ types: [String]) -> String { types.map { "'\($0)'" }.joined(separator: ",") }
        return "((i.media_type = \(MediaType.image.rawValue) AND i.content_type IN (\(list(contentTypes))))"
            + " OR (i.media_type = \(MediaType.movie.rawValue) AND i.content_type IN (\(list(movieContentTypes)))))"
    }

    /// One pending job per image and set of sizes: the image as stored now (its key and
    /// generation), so a key deleted and stored again while its job runs gets a job of its own
    /// instead of sharing the old bytes' one.
    static func dedupeKey(_ imageKey: String, generation: Int64, sizes: [Int]) -> String {
        "image:\(imageKey)@\(generation):" + sizes.map(String.init).joined(separator: ",")
    }

    /// The job's payload.
    static func payload(_ imageKey: String, generation: Int64, sizes: [Int]) -> [UInt8] {
        var job = ThumbnailJob()
        job.imageKey = imageKey
        job.imageGeneration = generation
        job.sizes = sizes.map { Int32($0) }
        return job.serializedBytes()
    }
}
