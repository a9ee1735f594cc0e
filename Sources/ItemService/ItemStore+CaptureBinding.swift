import Digest
import Proto
import RPC

extension ItemStore {
    /// Refuses (PERMISSION_DENIED) a worker key's attach or detach of `imageKey` on `itemKey`
    /// unless a capture job leased now is for that item and stored (or was given) that image:
    /// the job's own keys (`Job.captureKeyName`), or the ownerless image its request named.
    /// So a worker key copied off a machine attaches and detaches nothing of its own choosing.
    public func checkCaptureHolds(itemKey: String, imageKey: String, now: Int64) throws {
        for job in try jobs.leased(queue: CaptureQueue.name, now: now) {
            guard let request = try? CaptureRequest(serializedBytes: job.payload), request.itemKey == itemKey else { continue }
            let keys = ["original", "edited"].map { NameBasedUUID.make(job.captureKeyName($0)) }
                + (request.imageKey.isEmpty ? [] : [request.imageKey.lowercased()])
            if keys.contains(imageKey) { return }
        }
        throw RPCError.permissionDenied(
            "a worker key attaches and detaches only the images of a capture job it holds for that item; no capture job leased now stored image \(imageKey) for item \(itemKey)")
    }
}
