import Digest
import Dispatch
import Foundation
import JPEG
import Proto

extension ImageStore {
    /// Largest rendition edge.
    public static let maxRenditionEdge = 8192

    /// Decodes at once: one per core.
    static let renderSlots = max(1, ProcessInfo.processInfo.activeProcessorCount)

    /// Bounds concurrent decodes, renders and the validation of arithmetic-coded puts alike
    /// (waited on lanes, never on the task pool). A render waits for a lane of `renderLanes`
    /// (one per slot) first, so it waits here only for such a put's decode.
    static let renders = DispatchSemaphore(value: renderSlots)

    /// The image at `width` × `height` (FIT: inside the box, aspect kept, never enlarged; FILL:
    /// exactly the box, centre-cropped; a movie's from its poster thumbnails,
    /// `posterRendition`): a stored thumbnail of that size when there is one, else
    /// rendered by the `Thumbnailer` the thumbnail worker uses (a PNG's transparency composited
    /// on `ImageStoreLimits.pngBackground`; a HEIC upright by its own `irot`/`imir`), and cached. `source` is the image
    /// asked for (the original or edited image the rendition is made from), as StatImage answers
    /// it: the row read to render it, so a caller that wants both pays no second read.
    ///
    /// `abandoned` says whether the caller has stopped waiting (its deadline passed): a render
    /// that waited that long for its lane or slot is not started (DEADLINE_EXCEEDED), so work
    /// no one will receive does not hold a core while others wait behind it.
    public func rendition(
        _ key: String, width: Int, height: Int, mode: RenditionMode,
        abandoned: @escaping @Sendable () -> Bool = { false }
    ) async throws -> (info: ImageInfo, data: [UInt8], source: ImageInfo) {
        for (name, value) in [("width", width), ("height", height)] where !(1...Self.maxRenditionEdge).contains(value) {
            throw ImageStoreError.invalid("\(name) must be in 1...\(Self.maxRenditionEdge) (got \(value))")
        }
        let mode: RenditionMode = mode == .unspecified ? .fit : mode
        guard mode == .fit || mode == .fill else {
            throw ImageStoreError.invalid("mode \(mode.rawValue) is not FIT or FILL")
        }
        let stored = try await image(key)
        let original = stored.info
        if original.mediaType == .movie {
            return try await posterRendition(of: original, width: width, height: height, mode: mode, abandoned: abandoned)
        }
        let isPNG = original.contentType == "image/png", isHEIC = original.contentType == "image/heic"
        guard original.mediaType == .image, original.contentType == "image/jpeg" || isPNG || isHEIC, original.width > 0, original.height > 0 else {
            throw ImageStoreError.failedPrecondition(
                "image \(original.key) is \(original.contentType); renditions are made from JPEG, PNG and HEIC images only")
        }
        let plan = RenditionPlan(
            width: Int(original.width), height: Int(original.height), orientation: Int(original.orientation),
            box: (width, height), fit: mode == .fill ? .fill : .fit)
        let target = plan.size

        let parentKey = original.key
        let children = try await indexRead { try $0.children(of: parentKey) }
        if let thumbnail = children.first(where: {
            $0.kind == .thumbnail && $0.contentType == "image/jpeg" && $0.orientation <= 1
                && abs(Int($0.width) - target.width) <= 1 && abs(Int($0.height) - target.height) <= 1
        }) {
            return (thumbnail, try await read(thumbnail), original)
        }

        let cacheKey = "\(stored.cacheKey)/r/\(target.width)x\(target.height)/\(mode == .fill ? "fill" : "fit")"
        if let cached = cache.get(cacheKey) { return (Self.renditionInfo(original, target, cached), cached, original) }

        let limit = limits.maxRenditionSourceBytes
        guard original.sizeBytes <= limit else {
            throw ImageStoreError.failedPrecondition(
                "image \(original.key) is \(original.sizeBytes) bytes, over the \(limit) bytes a rendition is made from (--max-rendition-source-bytes); fetch it with GetImage and scale it on the client")
        }
        // The original from the cache when it is there; else read from its file on the render
        // lane (at most one source per core in memory) and verified against its checksum.
        let cachedSource = cache.get(stored.cacheKey)
        // The thumbnail worker's code, so a rendition is the pixels a stored thumbnail of its
        // size would be; FILL enlarges to exactly the box, as GetRendition promises.
        let thumbnailer = Thumbnailer(
            options: DecodeOptions(maxPixels: limits.maxPixels, maxDecodedBytes: limits.maxDecodedBytes), background: limits.pngBackground)
        let size = Thumbnailer.Target(width: width, height: height, fit: plan.fit, enlargesToFill: true)
        let renders = Self.renders, blobs = blobs, key = original.key, sizeBytes = original.sizeBytes
        let checksum = stored.verification
        let hooks = hooks.current
        hooks.renditionWaits?(key)
        // What a rendition its caller gave up on before it started answers (and tells the hook).
        let givenUp = { @Sendable () -> ImageStoreError in
            hooks.renditionAbandoned?(key)
            return .deadlineExceeded(
                "image \(key): the caller's deadline passed while the rendition waited for a render slot; nothing rendered")
        }
        let notStarted = { @Sendable () throws -> Void in
            if abandoned() { throw givenUp() }
        }
        // A task cancelled while it waits for a render thread (its caller's deadline passed:
        // the server cancels it) never starts: the same outcome as `notStarted`.
        let data: [UInt8]
        do {
            data = try await readVerified(key: key, in: renderThreads) { () throws -> [UInt8] in
                try notStarted()
                let render = { (source: UnsafeRawBufferPointer) throws -> [UInt8] in
                    // At most one decode per core: each can hold a large pixel buffer.
                    renders.wait()
                    defer { renders.signal() }
                    try notStarted()
                    hooks.rendering?(key)
                    if isHEIC {
                        do throws(HEIFError) {
                            return try thumbnailer.thumbnails(ofHEIF: source, sizes: [size])[0].data
                        } catch {
                            throw ImageStoreError.failedPrecondition(
                                "image \(key) cannot be rendered: its HEIC does not decode (\(error.message))")
                        }
                    }
                    if isPNG {
                        do throws(PNGError) {
                            return try thumbnailer.thumbnails(ofPNG: source, sizes: [size])[0].data
                        } catch {
                            throw ImageStoreError.failedPrecondition(
                                "image \(key) cannot be rendered: its PNG does not decode (\(error.message))")
                        }
                    }
                    do throws(JPEGError) {
                        return try thumbnailer.thumbnails(of: source, sizes: [size])[0].data
                    } catch {
                        throw ImageStoreError.failedPrecondition(
                            "image \(key) cannot be rendered: its JPEG does not decode (\(error.message))")
                    }
                }
                let source = try cachedSource ?? blobs.readWhole(key: key, size: sizeBytes, checksum: checksum) {
                    hooks.renditionSourceOpened?(key)
                }
                return try source.withUnsafeBytes(render)
            }
        } catch is CancellationError {
            throw givenUp()
        }
        cache.insert(cacheKey, data)
        return (Self.renditionInfo(original, target, data), data, original)
    }

    static func renditionInfo(_ original: ImageInfo, _ size: (width: Int, height: Int), _ data: [UInt8]) -> ImageInfo {
        var info = original
        info.kind = .thumbnail
        info.parentKey = original.key
        info.contentType = "image/jpeg"
        info.sizeBytes = Int64(data.count)
        info.width = Int32(size.width)
        info.height = Int32(size.height)
        info.orientation = 1
        info.checksum = SHA256.checksum(data)
        return info
    }
}
