/// The keys a capture job stores its images under: named by the job (queue, id, creation time)
/// and the image's role ("original", "edited"), so every attempt of the job uses the same keys
/// and item-service can tell which keys a capture job it leased may attach or detach.
extension Job {
    /// The name whose `NameBasedUUID` is this capture job's key for `role`.
    public func captureKeyName(_ role: String) -> String {
        "homepwner capture \(queue) \(jobId) \(createdAtMs) \(role)"
    }
}
