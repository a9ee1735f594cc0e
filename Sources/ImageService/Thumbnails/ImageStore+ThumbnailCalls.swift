import JobQueue
import Proto

/// The `thumbnails` queue's calls on the store, answered by its `Thumbnails`.
extension ImageStore {
    /// Publishes an image event (`image.stored`, `image.deleted`).
    public typealias ImagePublish = @Sendable (_ topic: String, _ info: ImageInfo) -> Void

    /// The `thumbnails` queue in images.db, with the retention of `limits`.
    public var thumbnailQueue: JobQueueConfiguration { thumbnails.queue }

    /// The staging of a `thumbnails` job's completion (see `Thumbnails.stage`).
    func stageThumbnails(_ request: CompleteRequest, publish: @escaping ImagePublish) async throws -> StagedCompletion<ImageIndex> {
        try await thumbnails.stage(request, publish: publish)
    }

    /// EnqueueThumbnails (see `Thumbnails.enqueue`).
    func enqueueThumbnails(_ request: EnqueueThumbnailsRequest) async throws -> EnqueueThumbnailsResponse {
        try await thumbnails.enqueue(request)
    }
}
