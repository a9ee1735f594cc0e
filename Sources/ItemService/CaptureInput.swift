import Capture
import Proto
import Runtime

/// The checks of a Capture request that need neither its photo nor the store: each failure
/// names the field and the value. What only the photo can tell (a crop outside it, bytes that
/// are no photo) fails the job instead, in the worker.
enum CaptureInput {
    /// The largest edited output, in pixels of its longest edge.
    static let maxOutputSize: Int32 = 8192
    /// The largest zoom.
    static let maxZoom = 64.0

    /// Refuses a request that can never succeed here: an unknown or unavailable source, bytes
    /// and key together or neither, a library path that leaves the library, a bad edit.
    static func check(_ request: CaptureRequest, sources: CaptureSources) throws(ItemStoreError) {
        switch request.source {
        case .upload:
            let hasData = !request.data.isEmpty, hasKey = !request.imageKey.isEmpty
            guard hasData != hasKey else {
                throw .invalidArgument(hasData
                    ? "an upload capture takes data or image_key, not both"
                    : "an upload capture needs data (at most \(CaptureQueue.maxInlineBytes) bytes) or the image_key of a committed chunked upload")
            }
            if hasKey { _ = try ItemInput.key(request.imageKey, field: "image_key") }
            guard request.data.count <= CaptureQueue.maxInlineBytes else {
                throw .invalidArgument(
                    "data is \(request.data.count) bytes, over the \(CaptureQueue.maxInlineBytes) a Capture carries inline; store it with a chunked upload (BeginUpload) and capture its image_key")
            }
        case .library, .recent:
            guard sources.libraryDirectory != nil else {
                throw .failedPrecondition(
                    "no photo library is configured, so the \(request.source == .library ? "library" : "recent") source is unavailable; start item-service and capture-worker with --library DIR (HOMEPWNER_CAPTURE_LIBRARY)")
            }
            if request.source == .library, let problem = CaptureSources.problem(withLibraryPath: request.sourcePath) {
                throw .invalidArgument(problem)
            }
            if request.source == .recent, !request.sourcePath.isEmpty {
                throw .invalidArgument("the recent source takes no source_path: it picks the newest photo (got \"\(request.sourcePath)\")")
            }
        case .camera:
            guard sources.cameraCommand != nil else {
                throw .failedPrecondition(
                    "no camera is configured; capture from the library or an upload, or start item-service and capture-worker with --camera COMMAND (HOMEPWNER_CAPTURE_CAMERA)")
            }
        default:
            throw .invalidArgument("source must be UPLOAD, LIBRARY, RECENT or CAMERA (got \(request.source.rawValue))")
        }
        if request.source != .upload, !request.data.isEmpty || !request.imageKey.isEmpty {
            throw .invalidArgument("data and image_key are for the upload source only")
        }
        guard [.unspecified, .image, .movie].contains(request.mediaType) else {
            throw .invalidArgument("media_type must be IMAGE, MOVIE or unspecified (got \(request.mediaType.rawValue))")
        }
        if let edit = request.edit { try check(edit, movie: request.mediaType == .movie) }
    }

    /// An edit's numbers: a crop with a non-negative corner and both sides positive (or all 0),
    /// a finite zoom in (0, 64] (0 is none, as in the proto), a known shape, an output size
    /// 0…8192. Movies take no edit.
    static func check(_ edit: Edit, movie: Bool) throws(ItemStoreError) {
        if movie && !edit.isEmpty { throw .invalidArgument("a movie is stored whole: it takes no edit") }
        if edit.hasCrop {
            guard edit.cropX >= 0, edit.cropY >= 0 else {
                throw .invalidArgument("crop_x and crop_y must be ≥ 0 (got \(edit.cropX),\(edit.cropY))")
            }
            guard edit.cropWidth > 0, edit.cropHeight > 0 else {
                throw .invalidArgument("crop_width and crop_height must be > 0 (got \(edit.cropWidth)×\(edit.cropHeight)): the crop is empty")
            }
        }
        guard edit.scale.isFinite, edit.scale >= 0, edit.scale <= maxZoom else {
            throw .invalidArgument("scale (zoom) must be a finite number in (0, \(Int(maxZoom))], or 0 for none (got \(edit.scale))")
        }
        guard [.unspecified, .square, .circle].contains(edit.shape) else {
            throw .invalidArgument("shape must be SQUARE, CIRCLE or unspecified (got \(edit.shape.rawValue))")
        }
        guard (0...maxOutputSize).contains(edit.outputSize) else {
            throw .invalidArgument("output_size must be 0 (as cropped) to \(maxOutputSize) (got \(edit.outputSize))")
        }
    }
}
