import Proto
import RPC
import WorkerRuntime

/// One job of the `thumbnails` queue: reads the original from the image service, makes every
/// size asked for from one decode, and answers the `ThumbnailResult` the job is completed with
/// (the image service stores the thumbnails in the transaction that completes the job).
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

    /// How much of an original one GetImage reads (below the service's frame limit).
    public static let readChunkBytes: Int64 = 8 << 20
    /// The smallest read the worker halves down to for a service whose replies are smaller.
    public static let smallestReadBytes: Int64 = 64 << 10

    private let connection: ClientConnection
    private let maker: Maker
    private let slots: ComputeSlots
    private let weigher: Weigher

    /// A handler reading originals through `connection`; the thumbnails of at most `slots.count`
    /// jobs are made at once (by default, no bound), and only while what they hold by `weigher`
    /// fits the slots' budget, so a runner with more jobs than slots reads the next original
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
        guard let original = try await read(payload.imageKey) else {
            // Deleted since: nothing to make, and nothing to retry.
            return ThumbnailResult()
        }
        let sizes = payload.sizes.map(Int.init), maker = maker
        // Outside the catch below: a job stopped while it waits for a slot is handed back, not
        // failed as a poison image.
        let made = try await slots.run(cost: weigher(original, sizes)) { Result { try maker(original, sizes) } }
        do {
            var result = ThumbnailResult()
            result.thumbnails = try made.get()
            return result
        } catch {
            throw JobFailure("image \(payload.imageKey) cannot be made into thumbnails: \(error)", permanent: true)
        }
    }

    /// The whole original; nil when there is no such image. One GetImage of the whole blob,
    /// or, for an original larger than one reply can hold (8 RESOURCE_EXHAUSTED without a
    /// retry_after), StatImage and ranged reads.
    private func read(_ key: String) async throws -> [UInt8]? {
        var whole = GetImageRequest()
        whole.key = key
        do {
            return try await connection.client.call(ImageServiceRPC.getImage, whole, options: CallOptions(timeoutMilliseconds: 30_000)).data
        } catch {
            if error.code == .notFound { return nil }
            guard error.code == .resourceExhausted && error.retryAfterMilliseconds == 0 else { throw error }
        }
        return try await readInRanges(key)
    }

    /// The whole original in ranged reads of `readChunkBytes` (halved while the service says a
    /// read is too large for its replies); nil when there is no such image.
    private func readInRanges(_ key: String) async throws -> [UInt8]? {
        let client = connection.client
        var stat = StatImageRequest()
        stat.key = key
        let size: Int64
        do {
            size = try await client.call(ImageServiceRPC.statImage, stat).sizeBytes
        } catch {
            if error.code == .notFound { return nil }
            throw error
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(size))
        var chunk = Self.readChunkBytes
        while Int64(bytes.count) < size {
            var get = GetImageRequest()
            get.key = key
            get.offset = Int64(bytes.count)
            get.length = min(chunk, size - Int64(bytes.count))
            let part: GetImageResponse
            do {
                part = try await client.call(ImageServiceRPC.getImage, get, options: CallOptions(timeoutMilliseconds: 30_000))
            } catch {
                // A service with a smaller --max-message-bytes: halve the reads until they fit.
                guard error.code == .resourceExhausted && error.retryAfterMilliseconds == 0 && chunk > Self.smallestReadBytes else { throw error }
                chunk /= 2
                continue
            }
            guard !part.data.isEmpty else {
                throw RPCError(.dataLoss, "image \(key) ended at \(bytes.count) of its \(size) bytes")
            }
            bytes += part.data
        }
        return bytes
    }
}
