import Capture
import Foundation
import Proto
import RPC
import Runtime

/// SaveToAlbum: copies a stored image into the library's album folder
/// (`<library>/Albums[/<album>]/<image key>.<ext>`), only where the deployment allows it, and
/// never over an existing file. The copy is read from the image service in ranges and written
/// to a temporary file beside it, fsynced, then linked to its name (link(2) fails rather than
/// replace a file) and the folder fsynced.
struct AlbumExport: Sendable {
    let sources: CaptureSources
    let images: ClientConnection
    /// One GetImage's range.
    static let readBytes: Int64 = 4 << 20

    func save(_ request: SaveToAlbumRequest) async throws -> SaveToAlbumResponse {
        let key: String
        do {
            key = try ItemInput.key(request.imageKey, field: "image_key")
        } catch {
            throw RPCError.invalidArgument(error.description)
        }
        if !request.album.isEmpty, let problem = CaptureSources.problem(withLibraryPath: request.album) {
            throw RPCError.invalidArgument(problem.replacingOccurrences(of: "source_path", with: "album"))
        }
        guard sources.albumWritable, let library = sources.libraryDirectory else {
            throw RPCError.permissionDenied(
                "this deployment does not let SaveToAlbum write into the photo album; to allow it, start item-service with --library DIR and --album-writable true (HOMEPWNER_CAPTURE_LIBRARY, HOMEPWNER_CAPTURE_ALBUM_WRITABLE=true)")
        }
        var stat = StatImageRequest()
        stat.key = key
        let info: ImageInfo
        do {
            info = try await images.client.call(ImageServiceRPC.statImage, stat)
        } catch {
            if error.code == .notFound { throw RPCError.notFound("no image with key \(key)") }
            throw error
        }
        let folder = try albumFolder(library: library, album: request.album)
        let name = "\(key).\(Self.fileExtension(info.contentType))"
        let path = folder + "/" + name
        if FileManager.default.fileExists(atPath: path) {
            throw RPCError.alreadyExists("\(path) exists already; SaveToAlbum never overwrites a file (remove it, or save into another album)")
        }
        let temporary = folder + "/.\(name).\(UUID().uuidString.prefix(8)).partial"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw RPCError.permissionDenied("cannot write into the album folder \(folder): \(String(cString: strerror(errno)))") }
        var linked = false
        defer {
            close(fd)
            if !linked { unlink(temporary) }
        }
        var offset: Int64 = 0
        while offset < info.sizeBytes {
            var get = GetImageRequest()
            get.key = key
            get.offset = offset
            get.length = min(Self.readBytes, info.sizeBytes - offset)
            let (reply, data) = try await images.client.call(
                ImageServiceRPC.getImage, get, largeBytesField: GetImageResponse.dataField, options: CallOptions(timeoutMilliseconds: 30_000))
            let part = data ?? FrameBytes(reply.data)
            guard !part.isEmpty else { throw RPCError.dataLoss("image \(key) ended at \(offset) of its \(info.sizeBytes) bytes") }
            let written = part.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard written == part.count else {
                throw RPCError.resourceExhausted("writing \(temporary) failed: \(String(cString: strerror(errno)))")
            }
            offset += Int64(part.count)
        }
        guard fsync(fd) == 0 else { throw RPCError.internal("fsync of \(temporary) failed: \(String(cString: strerror(errno)))") }
        // link(2) refuses an existing name: a file that appeared meanwhile is never replaced.
        guard link(temporary, path) == 0 else {
            if errno == EEXIST {
                throw RPCError.alreadyExists("\(path) exists already; SaveToAlbum never overwrites a file (remove it, or save into another album)")
            }
            throw RPCError.internal("cannot name \(path): \(String(cString: strerror(errno)))")
        }
        linked = true
        unlink(temporary)
        try? FileSync.system.sync(folder)
        var response = SaveToAlbumResponse()
        response.path = path
        return response
    }

    /// `<library>/Albums[/album]`, made when missing; refused when it resolves outside the library.
    func albumFolder(library: String, album: String) throws -> String {
        guard let root = CaptureSources.realPath(library) else {
            throw RPCError.failedPrecondition("the photo library folder \(library) does not exist")
        }
        let wanted = root + "/" + CaptureSources.albumFolder + (album.isEmpty ? "" : "/" + album)
        do {
            try FileManager.default.createDirectory(atPath: wanted, withIntermediateDirectories: true)
        } catch {
            throw RPCError.permissionDenied("cannot make the album folder \(wanted): \(error.localizedDescription)")
        }
        guard let resolved = CaptureSources.realPath(wanted), CaptureSources.isInside(resolved, root: root) else {
            throw RPCError.permissionDenied("the album \(album) leads out of the photo library through a symlink")
        }
        return resolved
    }

    static func fileExtension(_ contentType: String) -> String {
        switch contentType {
        case "image/jpeg": "jpg"
        case "image/png": "png"
        case "image/heic": "heic"
        case "image/avif": "avif"
        case "application/pdf": "pdf"
        case "video/mp4": "mp4"
        case "video/quicktime": "mov"
        case "video/webm": "webm"
        case "video/x-matroska": "mkv"
        case "video/x-msvideo": "avi"
        case "video/3gpp": "3gp"
        default: "bin"
        }
    }
}
