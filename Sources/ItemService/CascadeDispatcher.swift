import Foundation
import Proto
import RPC
import Runtime
import Synchronization

/// Delivers the delete cascade: for each outbox row, `DeleteImagesForOwner` to the image
/// service, with backoff until it succeeds; the row goes only once the image service said OK
/// and that it recorded the owner as deleted (`owner_deleted_recorded`: an older image service
/// answers OK without doing the whole cascade).
///
/// The outbox is in items.db, so deliveries survive restarts of either side. Deleting the
/// images of an owner twice has the effect of once, and every attempt of one row carries the
/// same idempotency key, so a retry after a lost reply changes nothing more.
///
/// Each delivery also names the photos attached to the deleted item and to no other item (to
/// be deleted whoever owns them), asks the image service to refuse new images for the owner
/// from then on, and first detaches the owner's images from the other items that show them.
/// Rows are tried in the order they fall due (`next_attempt_at_ms`, kept in the outbox), so a
/// row that keeps failing moves back and never holds up the rows behind it.
public final class CascadeDispatcher: LifecycleService {
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

    /// The most rows one round reads.
    static let roundSize = 100

    public var name: String { "cascade" }
    private let store: ItemStoreQueue
    private let connection: ClientConnection
    private let logger: Logger
    private let backoff: Backoff
    private let clock: any WallClock
    /// Signalled by a delete (`kick()`); the loop sleeps on it until then or the next row falls due.
    private let wake = WakeSignal()
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// A dispatcher delivering through `connection` (to the image service's endpoint), which
    /// starts before it; `clock` dates the retries kept in the outbox.
    public init(
        store: ItemStoreQueue, connection: ClientConnection, logger: Logger, backoff: Backoff = Backoff(),
        clock: any WallClock = SystemClock()
    ) {
        self.store = store
        self.connection = connection
        self.logger = logger
        self.backoff = backoff
        self.clock = clock
    }

    /// Starts delivering in a task.
    public func start() {
        let started = Task { [self] in await deliverUntilCancelled() }
        task.withLock { $0 = started }
    }

    /// Asks for a delivery round now (after a delete).
    public func kick() {
        wake.signal()
    }

    /// Stops delivering; rows left stay in the outbox for the next start. A call in flight
    /// ends when the connection, stopped next, closes.
    public func stop() {
        task.withLock { $0 }?.cancel()
    }

    /// The image service's client.
    private var client: RPCClient { connection.client }

    /// How a round ended.
    private enum Round {
        /// At least one row was delivered: there may be more to do at once.
        case delivered
        /// Nothing delivered; the next row falls due at its time.
        case idle
        /// The image service is down or slow: nothing is tried before this monotonic time.
        case paused(until: Int64)
    }

    private func deliverUntilCancelled() async {
        var pausedUntil: Int64 = 0
        while !Task.isCancelled {
            if monotonicMilliseconds() >= pausedUntil {
                switch await deliverRound() {
                case .delivered: continue
                case .idle: break
                case .paused(let until): pausedUntil = until
                }
            }
            // Sleep until a delete kicks us, a row falls due or the task is cancelled (`stop()`).
            let now = clock.nowMilliseconds()
            let nextDue = (try? await store.perform { try $0.nextCascadeDue() }) ?? nil
            let dueIn = nextDue.map { min(max($0 - now, 0), 60_000) } ?? 60_000
            // At least 25 ms, so a row that stays due (its failure could not be recorded) is
            // not retried in a busy loop.
            let wakeAt = max(monotonicMilliseconds() + max(dueIn, 25), pausedUntil)
            await wake.wait(timeoutMilliseconds: wakeAt - monotonicMilliseconds())
        }
    }

    /// Tries the due rows once each, earliest due first.
    private func deliverRound() async -> Round {
        let now = clock.nowMilliseconds(), maxDelay = backoff.maxMilliseconds
        let due: [PendingCascade]
        do {
            due = try await store.perform { try $0.dueCascades(now: now, maxDelayMilliseconds: maxDelay, limit: Self.roundSize) }
        } catch {
            return .paused(until: monotonicMilliseconds() + backoff.maxMilliseconds)
        }
        var delivered = false
        for cascade in due where !Task.isCancelled {
            do {
                let deleted = try await deliver(cascade)
                delivered = true
                logger.info("cascade delivered", ["owner": cascade.ownerKey, "images_deleted": String(deleted)])
            } catch {
                let attempts = cascade.attempts + 1
                let delay = backoff.delay(afterAttempts: attempts)
                let retryAt = clock.nowMilliseconds() + delay
                try? await store.perform { try $0.failCascade(id: cascade.id, error: "\(error)", retryAt: retryAt) }
                // The first failure and every tenth after it: a long outage should not flood the log.
                let details = ["owner": cascade.ownerKey, "attempts": String(attempts), "error": "\(error)"]
                if attempts % 10 == 1 {
                    logger.warning("cascade not delivered; will retry", details)
                } else {
                    logger.debug("cascade not delivered; will retry", details)
                }
                // The image service is down, slow or too old: the other rows would only get the same answer.
                if let error = error as? RPCError, error.code == .unavailable || error.code == .deadlineExceeded {
                    return .paused(until: monotonicMilliseconds() + delay)
                }
                if error is OlderImageService { return .paused(until: monotonicMilliseconds() + delay) }
            }
        }
        return delivered ? .delivered : .idle
    }

    /// Delivers one row: detaches the owner's images from other items, has the image service
    /// delete them and the photos attached only to the owner, and removes the row.
    ///
    /// - Returns: How many images the image service deleted.
    private func deliver(_ cascade: PendingCascade) async throws -> Int64 {
        // Images of the deleted item that other items show (attached before AttachPhoto checked
        // owners) are about to go: those items let go of them first, durably, so none is left
        // pointing at nothing. A retry after a lost reply lists what is left, so this comes
        // before the delete, never after it.
        let owned = try await imageKeys(ownedBy: cascade.ownerKey)
        if !owned.isEmpty {
            let now = clock.nowMilliseconds()
            let changed = try await store.perform { try $0.detachEverywhere(owned, now: now) }
            if !changed.isEmpty {
                logger.info(
                    "photos of a deleted item detached from other items",
                    ["owner": cascade.ownerKey, "items": changed.map(\.key).joined(separator: ",")])
            }
        }
        var request = DeleteImagesForOwnerRequest()
        request.ownerKey = cascade.ownerKey
        request.attachedKeys = cascade.attachedKeys
        request.ownerDeleted = true
        let response = try await client.call(
            ImageServiceRPC.deleteImagesForOwner, request,
            options: CallOptions(
                timeoutMilliseconds: 10_000, idempotencyKey: "cascade-\(cascade.id)-\(cascade.ownerKey)", retry: .none))
        // An image service from before attached_keys and owner_deleted skips both as unknown
        // fields and still answers OK (a rolling upgrade): the row stays until one records them.
        guard response.ownerDeletedRecorded else { throw OlderImageService(endpoint: client.endpoint) }
        try await store.perform { try $0.completeCascade(id: cascade.id) }
        return response.deletedCount
    }

    /// The keys of every image the image service holds for `owner`.
    private func imageKeys(ownedBy owner: String) async throws -> [String] {
        var keys: [String] = []
        var request = ListImagesRequest()
        request.ownerKey = owner
        request.pageSize = 1000
        repeat {
            let page = try await client.call(ImageServiceRPC.listImages, request, options: CallOptions(timeoutMilliseconds: 10_000))
            keys += page.images.map(\.key)
            request.pageToken = page.nextPageToken
        } while !request.pageToken.isEmpty
        return keys
    }

    /// An image service that answered DeleteImagesForOwner OK without `owner_deleted_recorded`:
    /// it predates `attached_keys` and `owner_deleted`, so the photos attached only to the item
    /// stay and the owner may store images again.
    struct OlderImageService: Error, CustomStringConvertible {
        /// The image service's endpoint.
        let endpoint: String

        var description: String {
            "image-service at \(endpoint) is older than this item-service: it does not record deleted owners; upgrade it"
        }
    }
}
