import Runtime
import Synchronization

/// The allowed keys a server consults, loaded from the allowed-keys file and kept current:
/// `reloadIfChanged()` (run every second by `watcher()`) notices a replaced or edited file, and
/// `reload()` is the explicit reload for SIGHUP. A reload that fails (a bad line, an unreadable
/// file) keeps the table as it was and logs why, so a typo never locks everyone out or lets
/// anyone in.
///
/// Thread-safe: the ZAP handler's thread, the watcher and request handlers share one table.
public final class KeyTable: Sendable {
    /// The allowed-keys file.
    public let file: String
    private let logger: Logger
    /// Keys allowed whatever the file says (the servers' own key, which a server also calls with).
    private let implicit: [String: AllowedKey]

    private struct State {
        var byKey: [String: AllowedKey]
        /// The last version looked at, loaded or not: a bad file is reported once, not every second.
        var seen: FileIdentity?
        /// Whether the file's absence was already reported.
        var missingReported = false
        /// Successful loads, the first included.
        var generation = 1
    }

    private let state: Mutex<State>
    /// Held while reading and parsing, so two reloads never swap in an older version last.
    private let reloading = Mutex(())

    /// Loads `file`; throws (and nothing should start) when it is missing or has a bad line.
    ///
    /// - Parameter implicitKeys: Keys allowed whatever the file says; the file cannot revoke them.
    public init(file: String, logger: Logger, implicitKeys: [AllowedKey] = []) throws {
        self.file = file
        self.logger = logger
        var implicit: [String: AllowedKey] = [:]
        for entry in implicitKeys { implicit[entry.publicKey] = entry }
        self.implicit = implicit
        let (keys, identity) = try AllowedKeys.loadWithIdentity(file: file)
        state = Mutex(State(byKey: Self.index(keys), seen: identity))
        logger.info("allowed keys loaded", ["file": file, "keys": String(keys.entries.count)])
    }

    /// The role of the connection whose User-Id (its Z85 public key) is `userID`; nil when the
    /// key is not (or no longer) allowed.
    public func role(ofUserID userID: String) -> Role? {
        state.withLock { $0.byKey[userID]?.role } ?? implicit[userID]?.role
    }

    /// The whole entry for `userID`, with its name.
    public func entry(ofUserID userID: String) -> AllowedKey? {
        state.withLock { $0.byKey[userID] } ?? implicit[userID]
    }

    /// How many keys are allowed.
    public var count: Int { state.withLock { $0.byKey.count } }

    /// How many times the file was loaded successfully (1 after `init`): tests and stats can tell
    /// a reload happened.
    public var generation: Int { state.withLock { $0.generation } }

    /// Reads the file again (SIGHUP); true when the new version is in place. On failure the
    /// previous table stays and the reason is logged.
    @discardableResult
    public func reload() -> Bool {
        reloading.withLock { _ in load(reason: "reload") }
    }

    /// Reloads when the file's inode, size, mtime or ctime differ from the last version looked
    /// at; true when a new version was put in place.
    @discardableResult
    public func reloadIfChanged() -> Bool {
        reloading.withLock { _ in
            switch FileIdentity.of(file) {
            case .failure(let error):
                let report = state.withLock { state in
                    defer { state.missingReported = true }
                    return !state.missingReported
                }
                if report { logger.warning("allowed keys file unreadable; keeping the previous keys", ["error": "\(error)", "file": file]) }
                return false
            case .success(let identity):
                let changed = state.withLock { state in
                    state.missingReported = false
                    return state.seen != identity
                }
                return changed ? load(reason: "file changed") : false
            }
        }
    }

    /// A thread that calls `reloadIfChanged()` every `intervalMilliseconds`; start and stop it
    /// with the server.
    public func watcher(intervalMilliseconds: Int32 = 1000) -> IntervalThread {
        IntervalThread(name: "allowed-keys", intervalMilliseconds: intervalMilliseconds) { [self] in reloadIfChanged() }
    }

    /// Loads the file and swaps it in; call holding `reloading`.
    private func load(reason: String) -> Bool {
        // Taken before reading: if the file changes after this, the next check sees it.
        let before = try? FileIdentity.of(file).get()
        do {
            let (keys, identity) = try AllowedKeys.loadWithIdentity(file: file)
            let byKey = Self.index(keys)
            let (added, removed) = state.withLock { state in
                let added = byKey.keys.filter { state.byKey[$0] == nil }.count
                let removed = state.byKey.keys.filter { byKey[$0] == nil }.count
                state.byKey = byKey
                state.seen = identity
                state.generation += 1
                return (added, removed)
            }
            logger.info("allowed keys reloaded", [
                "added": String(added), "file": file, "keys": String(byKey.count), "reason": reason, "removed": String(removed),
            ])
            return true
        } catch {
            // Remember the bad version so the watcher reports it once, not every second.
            if let before { state.withLock { $0.seen = before } }
            logger.error("allowed keys not reloaded; keeping the previous keys", ["error": "\(error)", "file": file, "reason": reason])
            return false
        }
    }

    private static func index(_ keys: AllowedKeys) -> [String: AllowedKey] {
        var byKey: [String: AllowedKey] = [:]
        for entry in keys.entries { byKey[entry.publicKey] = entry }
        return byKey
    }
}
