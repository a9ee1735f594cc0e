import Locking

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
        /// When a rendition that must be rendered starts waiting for its turn (a render slot),
        /// with the image's key.
        var renditionWaits: (@Sendable (String) -> Void)?
        /// When a rendition holds its render slot, before it reads its source (on the thread
        /// that renders), with the image's key.
        var rendering: (@Sendable (String) -> Void)?
        /// When a rendition is not started because its caller's deadline passed while it waited
        /// for its turn, with the image's key.
        var renditionAbandoned: (@Sendable (String) -> Void)?
        /// When a rendition's source file is open and its size checked, before its bytes are
        /// read (on the thread that reads them), with the image's key.
        var renditionSourceOpened: (@Sendable (String) -> Void)?
        /// When a committed upload's staged file is whole on disk, before it is validated
        /// (on an I/O lane), with the staged file's path.
        var uploadStaged: (@Sendable (String) -> Void)?
    }

    private let hooks = Locked(Hooks())

    init() {}

    /// Sets the hooks (tests only).
    func set(_ change: (inout Hooks) -> Void) { hooks.withLock { change(&$0) } }

    var current: Hooks { hooks.withLock { $0 } }
}
