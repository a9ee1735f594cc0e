import Dispatch
import Foundation
import Locking
import Runtime
import Synchronization

/// Makes a writer's commits durable off its owner's thread when more jobs wait, so the owner
/// does not sit in an fsync while they could run: the owner commits such a batch without
/// waiting for the disk (synchronous=NORMAL in WAL mode), hands the callers of its durable jobs
/// here and goes on with the next batch, while this thread syncs the write-ahead log once for
/// everything committed so far and then answers them. Commits made while a sync runs share the
/// next one.
///
/// The log is appended in commit order, so one fsync of it covers every commit before it; a
/// checkpoint syncs the log and then the database itself (SQLite does that at NORMAL too)
/// before the log is reused from its start. The log file stays the same while the writer's
/// connection is open (SQLite removes it only when the last connection closes), so a file
/// descriptor of its own, opened at the first sync, flushes the same file SQLite writes.
final class LogSyncer: Sendable {
    private struct State {
        var waiting: [@Sendable ((any Error)?) -> Void] = []
        var stopping = false
    }

    private let path: String
    private let name: String
    private let state = Locked(State())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let synced = Atomic<Int>(0)

    /// The fsyncs of the log that succeeded so far.
    var syncs: Int { synced.load(ordering: .relaxed) }

    /// Told (on the syncer's thread) of the first fsync that failed.
    private let onFailure: @Sendable (CommitOutcomeUnknown) -> Void

    /// A syncer of the log at `path` (the database's path and "-wal"), on a thread named `name`;
    /// `onFailure` hears of the first fsync that fails.
    init(logPath path: String, name: String, onFailure: @escaping @Sendable (CommitOutcomeUnknown) -> Void = { _ in }) {
        self.path = path
        self.name = name
        self.onFailure = onFailure
    }

    func start() {
        let thread = Thread { [self] in
            nameThisThread(name)
            run()
            finished.signal()
        }
        thread.name = name
        thread.start()
    }

    /// Calls each of `callers` once what was committed so far is on disk, with nil, or with
    /// ``CommitOutcomeUnknown`` when the fsync failed (then, or before).
    func afterSync(_ callers: [@Sendable ((any Error)?) -> Void]) {
        state.withLock { $0.waiting.append(contentsOf: callers) }
        wake.signal()
    }

    /// Syncs for and answers the callers still waiting, then ends the thread. Call once, after
    /// the last ``afterSync(_:)``.
    func stop() {
        state.withLock { $0.stopping = true }
        wake.signal()
        finished.wait()
    }

    private func run() {
        // The log's file descriptor, opened at the first sync.
        var descriptor: Int32 = -1
        defer { if descriptor >= 0 { close(descriptor) } }
        // Once an fsync failed, what was committed since is not known to be on disk, and a later
        // fsync of the same file succeeding proves nothing (the kernel may have dropped the
        // pages that failed): every caller from then on hears the same failure.
        var failed: CommitOutcomeUnknown?
        while true {
            wake.wait()
            let (callers, stopping) = state.withLock { state in
                defer { state.waiting.removeAll(keepingCapacity: true) }
                return (state.waiting, state.stopping)
            }
            if !callers.isEmpty {
                if failed == nil, let error = sync(&descriptor) {
                    failed = CommitOutcomeUnknown(reason: "\(error)")
                    onFailure(failed!)
                }
                for caller in callers { caller(failed) }
            }
            // `stop()` comes after the last `afterSync`: those callers were the last.
            if stopping { return }
        }
    }

    /// fsyncs the log, opening it first (and syncing its folder once, for its name: SQLite
    /// does that at the first sync of a log it created, which at NORMAL it never makes).
    private func sync(_ descriptor: inout Int32) -> (any Error)? {
        if descriptor < 0 {
            let log = open(path, O_RDONLY | O_CLOEXEC)
            guard log >= 0 else { return LogSyncError(path: path, call: "open", errno: errno) }
            let folder = (path as NSString).deletingLastPathComponent
            let directory = open(folder.isEmpty ? "." : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if directory >= 0 {
                defer { close(directory) }
                if fsync(directory) != 0 {
                    close(log)
                    return LogSyncError(path: folder, call: "fsync", errno: errno)
                }
            }
            descriptor = log
        }
        // fdatasync, as SQLite syncs its own files on Linux: the data and the size, not the
        // times (a log reused in place after a checkpoint changes no size).
        while fdatasync(descriptor) != 0 {
            if errno == EINTR { continue }
            return LogSyncError(path: path, call: "fdatasync", errno: errno)
        }
        synced.add(1, ordering: .relaxed)
        return nil
    }
}

/// The write-ahead log could not be synced: the commit is in the database, but may not survive
/// a power loss.
public struct LogSyncError: Error, CustomStringConvertible, Sendable {
    public let path: String
    public let call: String
    public let errno: Int32

    public var description: String {
        "\(call) of \(path) failed: \(String(cString: strerror(errno))) (errno \(errno)); the write was committed but may not be on disk"
    }
}
