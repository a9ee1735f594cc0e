import Dispatch
import Locking
import Proto
import RPC

extension ImageReader {
    /// Bytes `offset` to `offset + count` of the image, for synchronous code that must have
    /// them before it returns (FFmpeg's read callback, which a movie's poster is demuxed
    /// through): the read (`append`, ranged GetImage calls) runs as a task on the connection's
    /// I/O thread (`RPCClient.executor`) while the calling thread waits for it. It never needs
    /// a thread of the shared pool, so the caller may block any thread but that I/O thread,
    /// and a poster decoded on the shared pool, or on every thread of a runner, cannot starve
    /// its own reads. Waits until `deadline` at most: then the read is cancelled, its answer
    /// dropped, and the result is nil.
    ///
    /// - Throws: The read's `RPCError` (5 NOT_FOUND when the image is gone, 15 DATA_LOSS …).
    public func blockingRead(
        _ key: String, from offset: Int64, count: Int, until deadline: ContinuousClock.Instant
    ) throws(RPCError) -> [UInt8]? {
        let remaining = ContinuousClock.now.duration(to: deadline)
        guard remaining > .zero else { return nil }
        let milliseconds = remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000
        let outcome = Locked<Result<[UInt8], RPCError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let client = connection.client
        let task = Task(executorPreference: client.executor) {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(count)
            let result: Result<[UInt8], RPCError>
            do {
                try await append(
                    key, from: offset, to: offset + Int64(count), into: &bytes,
                    timeoutMilliseconds: UInt32(clamping: max(1, min(milliseconds, 30_000))))
                result = .success(bytes)
            } catch {
                result = .failure(error as? RPCError ?? RPCError(.internal, "reading bytes \(offset)… of image \(key): \(error)"))
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
        guard done.wait(timeout: .now() + .nanoseconds(Int(clamping: milliseconds * 1_000_000))) == .success else {
            task.cancel()
            return nil
        }
        return try outcome.withLock { $0! }.get()
    }
}
