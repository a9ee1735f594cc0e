import Foundation
import Proto
import RPC
import Runtime
import Synchronization

/// Delivers the delete cascade: for each outbox row, `DeleteImagesForOwner` to the image
/// service, with backoff until it succeeds; the row goes only once the image service said OK.
///
/// The outbox is in items.db, so deliveries survive restarts of either side. Deleting the
/// images of an owner twice has the effect of once, and every attempt of one row carries the
/// same idempotency key, so a retry after a lost reply changes nothing more.
public final class CascadeDispatcher: Sendable {
    /// Backoff between failed attempts of one row, by attempt number.
    public struct Backoff: Sendable {
        /// The first delay.
        public var initialMilliseconds: Int64
        /// The largest delay.
        public var maxMilliseconds: Int64

        /// A backoff from 200 ms doubling to 10 s.
        public init(initialMilliseconds: Int64 = 200, maxMilliseconds: Int64 = 10_000) {
            self.initialMilliseconds = initialMilliseconds
            self.maxMilliseconds = maxMilliseconds
        }

        /// The delay after `attempts` failures (≥ 1), with up to 25 % jitter off.
        public func delay(afterAttempts attempts: Int64) -> Int64 {
            let exponent = min(max(attempts - 1, 0), 20)
            let ceiling = min(maxMilliseconds, initialMilliseconds << exponent)
            return Int64.random(in: (ceiling * 3 / 4)...max(ceiling * 3 / 4, ceiling))
        }
    }

    private let store: ItemStoreQueue
    private let client: RPCClient
    private let logger: Logger
    private let backoff: Backoff
    private let kicked = Atomic<Bool>(true)
    private let task = Mutex<Task<Void, Never>?>(nil)
    /// When each failed row may be tried again (monotonic ms); in memory: a restart tries at once.
    private let retryAt = Mutex<[Int64: Int64]>([:])

    /// A dispatcher delivering through `client` (the image service's endpoint).
    public init(store: ItemStoreQueue, client: RPCClient, logger: Logger, backoff: Backoff = Backoff()) {
        self.store = store
        self.client = client
        self.logger = logger
        self.backoff = backoff
    }

    /// Starts delivering in a task.
    public func start() {
        let started = Task { [self] in await run() }
        task.withLock { $0 = started }
    }

    /// Asks for a delivery round now (after a delete).
    public func kick() {
        kicked.store(true, ordering: .releasing)
    }

    /// Stops delivering; rows left stay in the outbox for the next start.
    public func stop() {
        task.withLock { $0 }?.cancel()
        client.close()
    }

    private func run() async {
        while !Task.isCancelled {
            let (delivered, nextAttempt) = await deliverRound()
            if delivered { continue }
            // Sleep until a delete kicks us or the next retry is due (light polling: no thread is held).
            let wakeAt = min(nextAttempt ?? .max, Self.monotonicNow() + 60_000)
            while !Task.isCancelled && !kicked.exchange(false, ordering: .acquiringAndReleasing) && Self.monotonicNow() < wakeAt {
                try? await Task.sleep(for: .milliseconds(25))
            }
        }
    }

    /// Tries every due row once; returns whether any was delivered and when the next retry is due.
    private func deliverRound() async -> (delivered: Bool, nextAttempt: Int64?) {
        let pending: [PendingCascade]
        do {
            pending = try await store.perform { try $0.pendingCascades(limit: 100) }
        } catch {
            return (false, Self.monotonicNow() + backoff.maxMilliseconds)
        }
        var delivered = false
        var nextAttempt: Int64?
        for cascade in pending where !Task.isCancelled {
            let now = Self.monotonicNow()
            if let due = retryAt.withLock({ $0[cascade.id] }), due > now {
                nextAttempt = min(nextAttempt ?? .max, due)
                continue
            }
            var request = DeleteImagesForOwnerRequest()
            request.ownerKey = cascade.ownerKey
            do {
                let response = try await client.call(
                    ImageServiceRPC.deleteImagesForOwner, request,
                    options: CallOptions(timeoutMilliseconds: 10_000, idempotencyKey: "cascade-\(cascade.id)-\(cascade.ownerKey)", retry: .none))
                try await store.perform { try $0.completeCascade(id: cascade.id) }
                _ = retryAt.withLock { $0.removeValue(forKey: cascade.id) }
                delivered = true
                logger.info("cascade delivered", ["owner": cascade.ownerKey, "images_deleted": String(response.deletedCount)])
            } catch {
                let attempts = cascade.attempts + 1
                let due = Self.monotonicNow() + backoff.delay(afterAttempts: attempts)
                retryAt.withLock { $0[cascade.id] = due }
                nextAttempt = min(nextAttempt ?? .max, due)
                try? await store.perform { try $0.failCascade(id: cascade.id, error: "\(error)") }
                // The first failure and every tenth after it: a long outage should not flood the log.
                let details = ["owner": cascade.ownerKey, "attempts": String(attempts), "error": "\(error)"]
                if attempts % 10 == 1 {
                    logger.warning("cascade not delivered; will retry", details)
                } else {
                    logger.debug("cascade not delivered; will retry", details)
                }
                // The image service is down or slow: the other rows would only wait for the same answer.
                if let error = error as? RPCError, error.code == .unavailable || error.code == .deadlineExceeded {
                    for other in pending where other.id != cascade.id {
                        retryAt.withLock { $0[other.id] = max($0[other.id] ?? 0, due) }
                    }
                    break
                }
            }
        }
        return (delivered, nextAttempt)
    }

    /// Milliseconds on CLOCK_MONOTONIC: retry times that wall-clock jumps cannot move.
    static func monotonicNow() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}
