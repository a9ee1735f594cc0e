import SQLite

/// The serial owner of an `ItemStore`: its own thread opens the store and runs jobs on it with
/// group commit (see `DatabaseOwner`). Callers `await perform { store in … }`; a job submitted
/// once it is closing fails with `ItemStoreError.closed`.
public typealias ItemStoreQueue = DatabaseOwner<ItemStore>

extension ItemStore: GroupCommitStore {}

extension DatabaseOwner where Store == ItemStore {
    /// Opens the item store at `path` on a new thread; throws what opening threw.
    ///
    /// - Parameter seedPath: A database copied to `path` when none exists yet.
    public convenience init(path: String, seedPath: String? = nil) throws {
        try self.init(name: "item-store", closedError: ItemStoreError.closed) {
            try ItemStore(path: path, seedPath: seedPath)
        }
    }
}
