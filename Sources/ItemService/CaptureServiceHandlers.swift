import Capture
import Foundation
import JobQueue
import Proto
import RPC
import Runtime

/// The CaptureService methods of capture.proto on item-service: ListSources from the sources
/// configured, Capture as a job of the `capture` queue (enqueued in the same transaction as the
/// check that its item exists), GetCaptureJob from that job, SaveToAlbum (`AlbumExport`).
/// Capture workers do the work.
enum CaptureServiceHandlers {
    /// Registers the methods on `server`; `enqueued` wakes the Lease calls waiting on the queue.
    static func register(
        on server: RPCServer, store: ItemStoreQueue, sources: CaptureSources, images: ClientConnection, clock: any WallClock,
        enqueued: @escaping @Sendable () -> Void
    ) {
        let album = AlbumExport(sources: sources, images: images)
        server.register(CaptureServiceRPC.saveToAlbum) { request, _ in try await album.save(request) }
        // Pooled, not inline: it looks at the library folder, which may be a slow mount.
        server.register(CaptureServiceRPC.listSources) { _, _ in listSources(sources) }
        server.registerDeferred(CaptureServiceRPC.capture) { request, context, reply in
            do {
                try CaptureInput.check(request, sources: sources)
            } catch {
                return reply(.failure(error))
            }
            store.submit({ store in
                try context.checkDeadline()
                return try store.enqueueCapture(request, now: clock.nowMilliseconds())
            }) { result in
                if case .success = result { enqueued() }
                reply(result.map { job in
                    var response = CaptureResponse()
                    response.job = CaptureQueue.captureJob(job)
                    return response
                })
            }
        }
        server.registerDeferred(CaptureServiceRPC.getCaptureJob) { request, _, reply in
            store.submit({ store in try store.captureJob(id: request.jobId) }) { result in
                reply(result.map { job in
                    var response = GetCaptureJobResponse()
                    response.job = CaptureQueue.captureJob(job)
                    return response
                })
            }
        }
    }

    /// Every source, whether this deployment has it, and what it gives.
    static func listSources(_ sources: CaptureSources) -> ListSourcesResponse {
        func source(_ type: CaptureSourceType, _ available: Bool, _ media: [MediaType], _ description: String) -> CaptureSource {
            var source = CaptureSource()
            source.type = type
            source.available = available
            source.mediaTypes = available ? media : []
            source.description = description
            return source
        }
        let library = sources.libraryDirectory
        var isFolder: ObjCBool = false
        let libraryThere = library.map { FileManager.default.fileExists(atPath: $0, isDirectory: &isFolder) && isFolder.boolValue } ?? false
        let libraryNote = library.map { libraryThere ? "under \($0)" : "the library folder \($0) does not exist" }
            ?? "no photo library configured (--library DIR, HOMEPWNER_CAPTURE_LIBRARY)"
        var response = ListSourcesResponse()
        response.sources = [
            source(.upload, true, [.image, .movie],
                   "bytes in the request (up to \(CaptureQueue.maxInlineBytes >> 20) MiB) or the image_key of a committed chunked upload"),
            source(.library, libraryThere, [.image, .movie], "a file named by its path in the photo library: " + libraryNote),
            source(.recent, libraryThere, [.image],
                   "the newest photo of the library's \"\(CaptureSources.recentFolder)\" folder: " + libraryNote),
            source(.camera, sources.cameraCommand != nil, [.image], sources.cameraCommand.map {
                "the photo the camera command prints (\($0)), within \(sources.cameraTimeoutMilliseconds) ms"
            } ?? "no camera configured (--camera COMMAND, HOMEPWNER_CAPTURE_CAMERA): capture from the library or an upload"),
        ]
        return response
    }
}
