import Capture
import JobQueue
import Proto
import RPC
import Runtime

/// The `capture` job queue, in items.db: one job per Capture call, whose payload is the
/// `CaptureRequest` itself, and whose result is the `CaptureOutcome` a capture worker completes
/// it with. Capture workers lease its jobs from item-service over JobQueue.
public enum CaptureQueue {
    /// The queue's name on the wire.
    public static let name = JobQueueSpec.capture.name

    /// 5 attempts, 1 s doubling to 30 s, ±25 %: about 15 s of retries in all. A capture has a
    /// person waiting for it (`homepwner capture --wait`); what fails for good (a bad photo,
    /// a deleted item, a path outside the library) is failed permanently by the worker at its
    /// first attempt, so the retries are only for what passes: the image service restarting.
    public static let retry = JobRetryPolicy(
        maxAttempts: 5, baseDelayMilliseconds: 1000, factor: 2, maxDelayMilliseconds: 30_000, jitter: 0.25)

    /// The queue (tests pass a faster retry). Leases of 30 s, extended by the worker's
    /// heartbeats while it works (a camera command or a large movie takes longer than one);
    /// a capture's inline bytes are dropped from its job once it is DONE or DEAD.
    public static func configuration(
        retry: JobRetryPolicy = retry, retention: JobRetention = JobRetention()
    ) -> JobQueueConfiguration {
        JobQueueConfiguration(name: name, retry: retry, retention: retention, trimFinishedPayload: withoutInlineBytes)
    }

    /// A finished capture's request without its inline bytes (in the image service by then, or
    /// refused for good); nil when it carried none. What was asked and for whom stays.
    @Sendable static func withoutInlineBytes(_ payload: [UInt8]) -> [UInt8]? {
        guard var request = try? CaptureRequest(serializedBytes: payload), !request.data.isEmpty else { return nil }
        request.data = []
        return request.serializedBytes()
    }

    /// The most bytes a Capture carries inline (`CaptureSources.maxInlineBytes`): inline bytes
    /// are kept in items.db with the job while it is pending, and dropped once it ends.
    public static let maxInlineBytes = CaptureSources.maxInlineBytes

    /// The capture job as GetCaptureJob answers it: its state, the item, the outcome once DONE,
    /// and for a failed attempt its error with the status code it begins with (a worker's
    /// failures read `NAME (code): message`, as `RPCError.description` writes them).
    public static func captureJob(_ job: Job) -> CaptureJob {
        var capture = CaptureJob()
        capture.jobId = job.jobId
        capture.state = job.state
        capture.attempts = job.attempts
        capture.createdAtMs = job.createdAtMs
        capture.updatedAtMs = job.updatedAtMs
        if let request = try? CaptureRequest(serializedBytes: job.payload) { capture.itemKey = request.itemKey }
        if job.state == .done, let outcome = try? CaptureOutcome(serializedBytes: job.result) {
            capture.originalKey = outcome.originalKey
            capture.editedKey = outcome.editedKey
            capture.duplicate = outcome.duplicate
        }
        if job.state != .done {
            capture.error = job.lastError
            capture.errorCode = errorCode(of: job.lastError)
        }
        return capture
    }

    /// The status code a job error begins with (`NOT_FOUND (5): …`); 13 (INTERNAL) for an error
    /// that names none (a lease that expired: the worker died), 0 for no error.
    static func errorCode(of error: String) -> Int32 {
        guard !error.isEmpty else { return 0 }
        guard let open = error.firstIndex(of: "("), let close = error[open...].firstIndex(of: ")"),
            error[..<open].allSatisfy({ $0.isUppercase || $0 == "_" || $0 == " " }),
            let code = Int32(error[error.index(after: open)..<close]), (1...16).contains(code)
        else { return StatusCode.internal.rawValue }
        return code
    }
}
