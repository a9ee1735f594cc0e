import Synchronization

/// Points in the store's work where a test can stop it (to order it against another call) or
/// make a step fail (to see what a failure leaves behind). Every hook is nil in the service.
final class StoreHooks: Sendable {
    struct Hooks: Sendable {
        /// Before a delete unlinks the files of the rows it removed (on an I/O lane), with their keys.
        var beforeRemovingFiles: (@Sendable ([String]) -> Void)?
        /// When a put that passed its checks starts writing (on an I/O lane), with its key.
        var beforePutWrites: (@Sendable (String) -> Void)?
        /// After a put's row is committed, before the put finishes (on an I/O lane), with its key.
        var afterPutCommitted: (@Sendable (String) -> Void)?
        /// Before each folder fsync, with the folder's path; a throw fails the fsync.
        var folderSync: (@Sendable (String) throws -> Void)?
    }

    private let hooks = Mutex(Hooks())

    init() {}

    /// Sets the hooks (tests only).
    func set(_ change: (inout Hooks) -> Void) { hooks.withLock { change(&$0) } }

    var current: Hooks { hooks.withLock { $0 } }
}
