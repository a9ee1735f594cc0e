import Foundation
import Runtime
import Locking

/// The allowed keys a server consults, loaded from the allowed-keys file and kept current:
/// `reloadIfChanged()` (run every second by `watcher()`) notices a replaced or edited file, and
/// `reload()` is the explicit reload for SIGHUP. A reload that fails (a bad line, an unreadable
/// file, a file others may write) keeps the table as it was, so a typo never locks everyone out
/// or lets anyone in; but the keys in force are then not what the file says (a revocation saved
/// with a typo has not applied), so the failure stays visible until it is fixed: `problem`
/// (which Health/Check and Stats report as the condition "allowed_keys") and an error logged
/// every `problemLogIntervalMilliseconds`.
///
/// A reload that takes keys away calls the `onRevocation` actions: a server then makes every
/// connection that does not send per-message credentials (event subscribers) authenticate again.
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
        /// Why the file's latest version is not in force; nil when it is.
        var problem: ReloadProblem?
        /// When the problem was last logged (monotonic ms).
        var problemLoggedAt: Int64 = 0
    }

    /// Why the allowed-keys file's latest version is not in force, and since when.
    public struct ReloadProblem: Sendable, Equatable {
        /// What is wrong, naming the file (and the line), and that the previous keys stay.
        public let message: String
        /// When it was first seen, in milliseconds since the Unix epoch.
        public let sinceUnixMilliseconds: Int64
    }

    private let state: Locked<State>
    /// Held while reading and parsing, so two reloads never swap in an older version last.
    private let reloading = Locked(())
    /// Called after a reload that took keys away.
    private let revocationActions = Locked<[@Sendable () -> Void]>([])
    /// How often an unresolved problem is logged again.
    let problemLogIntervalMilliseconds: Int64

    /// Loads `file`; throws (and nothing should start) when it is missing or has a bad line.
    ///
    /// - Parameter implicitKeys: Keys allowed whatever the file says; the file cannot revoke them.
    public init(
        file: String, logger: Logger, implicitKeys: [AllowedKey] = [], problemLogIntervalMilliseconds: Int64 = 60_000
    ) throws {
        self.file = file
        self.logger = logger
        self.problemLogIntervalMilliseconds = problemLogIntervalMilliseconds
        var implicit: [String: AllowedKey] = [:]
        for entry in implicitKeys { implicit[entry.publicKey] = entry }
        self.implicit = implicit
        let (keys, identity) = try Self.read(file)
        state = Locked(State(byKey: Self.index(keys), seen: identity))
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

    /// Why the file's latest version is not in force (the previous keys are); nil when it is.
    public var problem: ReloadProblem? { state.withLock { $0.problem } }

    /// Runs `action` (on the reloading thread) after every reload that takes keys away.
    public func onRevocation(_ action: @escaping @Sendable () -> Void) {
        revocationActions.withLock { $0.append(action) }
    }

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
                let first = state.withLock { state in
                    defer { state.missingReported = true }
                    return !state.missingReported
                }
                if first { report("\(error)") } else { remindOfProblem() }
                return false
            case .success(let identity):
                let changed = state.withLock { state in
                    state.missingReported = false
                    return state.seen != identity
                }
                if changed { return load(reason: "file changed") }
                remindOfProblem()
                return false
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
            let (keys, identity) = try Self.read(file)
            let byKey = Self.index(keys)
            let (added, removed, fixed) = state.withLock { state in
                let added = byKey.keys.filter { state.byKey[$0] == nil }.count
                let removed = state.byKey.keys.filter { byKey[$0] == nil }.count
                let fixed = state.problem != nil
                state.byKey = byKey
                state.seen = identity
                state.generation += 1
                state.problem = nil
                return (added, removed, fixed)
            }
            logger.info("allowed keys reloaded", [
                "added": String(added), "file": file, "keys": String(byKey.count), "reason": reason, "removed": String(removed),
            ])
            if fixed { logger.info("allowed keys file fixed: its keys are in force again", ["file": file]) }
            if removed > 0 {
                for action in revocationActions.withLock({ $0 }) { action() }
            }
            return true
        } catch {
            // Remember the bad version so it is not parsed again every second.
            if let before { state.withLock { $0.seen = before } }
            report("\(error)")
            return false
        }
    }

    /// Records (and logs at error) that the file's latest version is not in force.
    private func report(_ error: String) {
        let message = "\(error); the previous allowed keys stay in force until the file is fixed"
        state.withLock { state in
            state.problem = ReloadProblem(
                message: message, sinceUnixMilliseconds: state.problem?.sinceUnixMilliseconds ?? Int64(Date().timeIntervalSince1970 * 1000))
            state.problemLoggedAt = monotonicMilliseconds()
        }
        logger.error("allowed keys not reloaded; keeping the previous keys", ["error": error, "file": file])
    }

    /// Logs an unresolved problem again once `problemLogIntervalMilliseconds` passed since it was last.
    private func remindOfProblem() {
        let now = monotonicMilliseconds()
        let problem = state.withLock { state -> ReloadProblem? in
            guard let problem = state.problem, now - state.problemLoggedAt >= problemLogIntervalMilliseconds else { return nil }
            state.problemLoggedAt = now
            return problem
        }
        if let problem { logger.error("allowed keys file still not in force; keeping the previous keys", ["error": problem.message, "file": file]) }
    }

    /// Reads and parses `file`, refusing one that others could change (see `AllowedKeys.checkSafe`).
    private static func read(_ file: String) throws -> (keys: AllowedKeys, identity: FileIdentity) {
        let (keys, identity, info) = try AllowedKeys.loadWithInfo(file: file)
        try AllowedKeys.checkSafe(file: file, info)
        return (keys, identity)
    }

    private static func index(_ keys: AllowedKeys) -> [String: AllowedKey] {
        var byKey: [String: AllowedKey] = [:]
        for entry in keys.entries { byKey[entry.publicKey] = entry }
        return byKey
    }
}
