import Proto

/// One attached photo: its role, what the image service holds under its key, and the
/// thumbnail to show (when the report shows them and the photo has one).
public struct ClaimPhoto: Sendable {
    /// The image key.
    public let key: String
    /// What it shows.
    public let role: PhotoRole
    /// The image as StatImage describes it (GetRendition's `source` when a thumbnail came with
    /// it); nil when the image service has no such image any more.
    public let info: ImageInfo?
    /// The upright JPEG thumbnail, as GetRendition answered it; nil when none was asked for
    /// or the image has none (a document, a movie, HEIC).
    public let thumbnail: Thumbnail?
    /// Why there is no thumbnail when one was asked for ("a PDF document"), else nil.
    public let unshown: String?

    /// A thumbnail's JPEG and size in pixels.
    public struct Thumbnail: Sendable {
        /// The JPEG, as the service sent it.
        public let jpeg: [UInt8]
        /// Pixels across (upright).
        public let width: Int
        /// Pixels down (upright).
        public let height: Int

        /// A thumbnail of `width` × `height` pixels.
        public init(jpeg: [UInt8], width: Int, height: Int) {
            self.jpeg = jpeg
            self.width = width
            self.height = height
        }
    }

    /// A photo as gathered.
    public init(key: String, role: PhotoRole, info: ImageInfo?, thumbnail: Thumbnail?, unshown: String?) {
        self.key = key
        self.role = role
        self.info = info
        self.thumbnail = thumbnail
        self.unshown = unshown
    }

    /// The 64 hex digits of the original's SHA-256; empty when it is gone.
    public var sha256: String {
        guard let checksum = info?.checksum, checksum.hasPrefix("sha256:") else { return "" }
        return String(checksum.dropFirst("sha256:".count))
    }

    /// A PDF (a receipt, a manual): listed and linked, never drawn.
    public var isDocument: Bool {
        info?.mediaType == .document || info?.contentType == "application/pdf"
    }

    /// The original's file name in an HTML export and the CSV: "<sha256>.<ext>"; empty when
    /// the image is gone.
    public var originalFileName: String {
        let digest = sha256
        guard !digest.isEmpty, let info else { return "" }
        return digest + "." + Self.fileExtension(of: info.contentType)
    }

    /// The thumbnail's file name in an HTML export: "<key>.jpg".
    public var thumbnailFileName: String { key + ".jpg" }

    /// The caption of a role: Photo, Serial plate, Receipt, Manual, Damage, Other.
    public static func caption(of role: PhotoRole) -> String {
        switch role {
        case .serialPlate: "Serial plate"
        case .receipt: "Receipt"
        case .manual: "Manual"
        case .damage: "Damage"
        case .other: "Other"
        default: "Photo"
        }
    }

    /// This photo's caption.
    public var caption: String { Self.caption(of: role) }

    /// The file extension for a content type the image service sniffs ("jpg", "pdf", "mov").
    public static func fileExtension(of contentType: String) -> String {
        switch contentType.lowercased() {
        case "image/jpeg": "jpg"
        case "image/png": "png"
        case "image/heic": "heic"
        case "image/avif": "avif"
        case "application/pdf": "pdf"
        case "video/mp4": "mp4"
        case "video/quicktime": "mov"
        case "video/3gpp": "3gp"
        case "video/webm": "webm"
        case "video/x-matroska": "mkv"
        case "video/x-msvideo": "avi"
        default: "bin"
        }
    }

    /// What the photo is, in words, for a line that lists it instead of showing it.
    public var kindText: String {
        guard let info else { return "missing" }
        if isDocument { return "PDF document" }
        if info.mediaType == .movie { return "movie (\(info.contentType))" }
        return info.contentType
    }
}
