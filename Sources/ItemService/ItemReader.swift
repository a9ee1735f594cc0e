import SQLite

/// A connection to items.db that the reads which scan the items (valuation, readiness) and
/// what they need (the policy, the categories, the location tree) run on: the store's own
/// writer connection (`ItemStore`) or a read-only one (`ItemReader`).
protocol ItemReads: AnyObject {
    /// The connection the reads run on.
    var db: Database { get }
}

extension ItemStore: ItemReads {}

/// A read-only connection to items.db for GetValuation and GetReadiness: a pass over 100,000
/// items takes a few hundred milliseconds, and on a connection of its own (WAL lets it read
/// while the writer commits) it never holds up the store's thread, so the calls behind it are
/// answered meanwhile. Each read sees every commit made before it began. Run by a
/// `DatabaseOwner` of its own (`ItemReaderQueue`), started after the store (which creates and
/// migrates the file).
public final class ItemReader: ItemReads, WriteTransactionsStore {
    let db: Database
    public let transactions: WriteTransactions

    /// Opens `path` read-only; throws when the file's schema is not the one this build writes
    /// (the store migrates it first, so it is only ever an older or newer build's file).
    public init(path: String) throws {
        db = try Database(path: path, mode: .readOnly)
        try db.setBusyTimeout(milliseconds: 5000)
        transactions = WriteTransactions(db)
        let version = try db.userVersion
        guard version == ItemStore.schemaVersion else {
            try? db.close()
            throw ItemStoreError.failedPrecondition(
                "\(path) has schema version \(version), not this build's \(ItemStore.schemaVersion); start the item store on it first")
        }
    }

    public func close() throws { try db.close() }
}

/// The owner of an `ItemReader`: its own thread, each read run alone.
public typealias ItemReaderQueue = DatabaseOwner<ItemReader>

extension DatabaseOwner where Store == ItemReader {
    /// An owner of a read-only connection to the item store at `path`, opened by `start()`.
    public convenience init(itemReaderOf path: String) {
        self.init(name: "item-reader", closedError: ItemStoreError.closed, groupCommit: false) {
            try ItemReader(path: path)
        }
    }
}
