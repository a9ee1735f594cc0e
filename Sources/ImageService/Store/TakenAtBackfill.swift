import Locking
import Runtime
import Synchronization

/// image-service's part that, once the store has started, fills in when the photos stored
/// before images.db recorded it were taken (`ImageStore.backfillTakenAt`), in the background:
/// a task that reads a page of rows, their blobs' heads and writes them back, until none is
/// left. After an upgrade it has work once; at every later start it reads one empty page.
final class TakenAtBackfill: LifecycleService {
    let name = "image-taken-at-backfill"
    private let store: ImageStore
    /// The task and its stop flag; nil before `start()` and after `stop()`.
    private let running = Locked<(task: Task<Void, Never>, stopped: Flag)?>(nil)

    /// A stop flag the disk thread's loop reads between blobs.
    final class Flag: Sendable {
        private let value = Atomic<Bool>(false)
        func set() { value.store(true, ordering: .releasing) }
        var isSet: Bool { value.load(ordering: .acquiring) }
    }

    init(store: ImageStore) {
        self.store = store
    }

    /// Starts the backfill's task; a second call does nothing.
    func start() throws {
        let store = store
        running.withLock { running in
            guard running == nil else { return }
            let stopped = Flag()
            let task = Task(priority: .utility) {
                do {
                    let report = try await store.backfillTakenAt(stopped: { stopped.isSet })
                    guard report.filled + report.unreadable > 0 else { return }
                    store.logger.info(
                        "taken_at filled in for \(report.filled) images stored before images.db recorded it (from the EXIF at the head of each JPEG's blob)"
                            + (report.unreadable > 0 ? "; \(report.unreadable) blobs could not be read, and are tried again at the next start" : ""))
                } catch {
                    // Stopped (the store closed under it), or a failed read or write: the rows
                    // not done keep NULL, and the next start takes them up.
                    guard !stopped.isSet else { return }
                    store.logger.warning("taken_at backfill stopped before its end; the next start goes on with it", ["error": "\(error)"])
                }
            }
            running = (task, stopped)
        }
    }

    /// Stops the backfill without waiting: the page under way ends after the blob being read
    /// (or is refused by the closing store), and what it wrote stays; safe to call twice and
    /// before `start()`.
    func stop() {
        guard let running = running.withLock({ $0.take() }) else { return }
        running.stopped.set()
        running.task.cancel()
    }
}
