import Locking

/// A thread-safe store of formatted log lines, for tests that assert on what was logged.
///
/// Pass it to ``LogSink/collecting(_:)`` and read ``lines`` afterwards.
public final class LogCollector: Sendable {
    /// The collected lines, guarded by a mutex.
    private let storage = Locked<[String]>([])

    /// Creates an empty collector.
    public init() {}

    /// Every line written so far, in order, without trailing newlines.
    public var lines: [String] {
        storage.withLock { $0 }
    }

    /// Appends one formatted line.
    func append(_ line: String) {
        storage.withLock { $0.append(line) }
    }
}
