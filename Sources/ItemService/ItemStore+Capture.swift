import JobQueue
import Proto

extension ItemStore {
    /// Enqueues a capture of a photo for an existing item, in one transaction with the check
    /// that the item exists (the request itself is checked by `CaptureInput` first). Call
    /// inside a write.
    public func enqueueCapture(_ request: CaptureRequest, now: Int64) throws -> Job {
        var request = request
        request.itemKey = try ItemInput.key(request.itemKey, field: "item_key")
        if !request.imageKey.isEmpty { request.imageKey = try ItemInput.key(request.imageKey, field: "image_key") }
        _ = try existing(key: request.itemKey)
        return try jobs.enqueue(queue: CaptureQueue.name, payload: request.serializedBytes(), now: now).job
    }

    /// The capture job `id`, with its error history: INVALID_ARGUMENT for an id that is no
    /// job number, NOT_FOUND when the capture queue has no such job.
    public func captureJob(id: String) throws -> Job {
        var request = GetJobRequest()
        request.queue = CaptureQueue.name
        request.jobId = id
        return try jobs.job(request)
    }
}
