import JobQueue
import SQLite

/// The serial owner of an `ItemStore`: its own thread opens the store and runs jobs on it with
/// group commit (see `DatabaseOwner`). Callers `await perform { store in … }`; a job submitted
/// before `start()` or once it is closing fails with `ItemStoreError.closed`. It is the
/// `JobStoreOwner` of the `cascade` and `capture` queues too (`JobQueueService`, `CascadeRunner`).
public typealias ItemStoreQueue = DatabaseOwner<ItemStore>

extension ItemStore: JobStoreHost {}

extension DatabaseOwner where Store == ItemStore {
    /// An owner of the item store at `path`, opened on a thread of its own by `start()`.
    ///
    /// - Parameters:
    ///   - seedPath: A database copied to `path` when none exists yet.
    ///   - cascade: The cascade queue (`ItemStore.init`).
    ///   - capture: The capture queue.
    ///   - onFault: Told of a commit whose outcome the disk left unknown (`DatabaseOwner`).
    public convenience init(
        path: String, seedPath: String? = nil, cascade: JobQueueConfiguration = CascadeQueue.configuration(),
        capture: JobQueueConfiguration = CaptureQueue.configuration(), onFault: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.init(name: "item-store", closedError: ItemStoreError.closed, onFault: onFault) {
            try ItemStore(path: path, seedPath: seedPath, cascade: cascade, capture: capture)
        }
    }
}
