import Proto
import RPC
import WorkerRuntime

/// One job of the `thumbnails` queue: reads the original from the image service, makes every
/// size asked for from one decode, and answers the `ThumbnailResult` the job is completed with
/// (the image service stores the thumbnails in the transaction that completes the job).
///
/// Only what the thumbnails are made from is read (`ThumbnailSource`: metadata they do not use
/// is skipped unread), and only when that fits the slots' memory budget: an original whose
/// frame and scans alone exceed it fails permanently, naming the budget, before it is read.
/// Each job is weighed by those bytes and what making the thumbnails holds (`weigher`).
///
/// An original that is gone (deleted since the job was queued) completes the job with no
/// thumbnails; a payload or an image that cannot be made into thumbnails fails it permanently,
/// with the reason (a poison image goes to DEAD at once instead of being retried); anything else
/// (the image service restarting) is retried by the queue.
public struct ThumbnailJobHandler: Sendable {
    /// Makes thumbnails of a JPEG at the given sizes (longest edge); throws why it cannot.
    public typealias Maker = @Sendable (_ jpeg: [UInt8], _ sizes: [Int]) throws -> [Thumbnail]
    /// What making them will hold, in bytes, weighed against the slots' memory budget.
    public typealias Weigher = @Sendable (_ jpeg: [UInt8], _ sizes: [Int]) -> Int

    private let connection: ClientConnection
    private let maker: Maker
    private let slots: ComputeSlots
    private let weigher: Weigher

    /// A handler reading originals through `connection`; the thumbnails of at most `slots.count`
    /// jobs are made at once (by default, no bound), and only while what they hold (the bytes
    /// read and `weigher`'s estimate) fits the slots' budget, so a runner with more jobs than slots reads the next original
    /// while the others decode, and its memory stays bounded.
    public init(
        connection: ClientConnection, slots: ComputeSlots = ComputeSlots(count: .max), weigher: @escaping Weigher = { _, _ in 0 },
        maker: @escaping Maker
    ) {
        self.connection = connection
        self.slots = slots
        self.weigher = weigher
        self.maker = maker
    }

    /// Runs `job` and returns its result's bytes (``JobRunner/typed(_:_:)``: a payload that is
    /// not a `ThumbnailJob` fails it permanently).
    public func run(_ job: Job) async throws -> [UInt8] {
        try await JobRunner.typed(ThumbnailJob.self) { payload, job in try await thumbnails(payload, of: job) }(job)
    }

    /// The thumbnails of one decoded job.
    func thumbnails(_ payload: ThumbnailJob, of job: Job) async throws -> ThumbnailResult {
        guard !payload.imageKey.isEmpty, !payload.sizes.isEmpty, payload.sizes.allSatisfy({ $0 > 0 }) else {
            throw JobFailure(
                "job \(job.jobId) names no image or no positive sizes (image_key \"\(payload.imageKey)\", sizes \(payload.sizes))",
                permanent: true)
        }
        let source = ThumbnailSource(reader: ImageReader(connection: connection), limitBytes: slots.budgetBytes)
        guard let original = try await source.read(payload.imageKey) else {
            // Deleted since: nothing to make, and nothing to retry.
            return ThumbnailResult()
        }
        let sizes = payload.sizes.map(Int.init), maker = maker
        // Outside the catch below: a job stopped while it waits for a slot is handed back, not
        // failed as a poison image.
        let made = try await slots.run(cost: original.count + weigher(original, sizes)) { Result { try maker(original, sizes) } }
        do {
            var result = ThumbnailResult()
            result.thumbnails = try made.get()
            return result
        } catch {
            throw JobFailure("image \(payload.imageKey) cannot be made into thumbnails: \(error)", permanent: true)
        }
    }
}
