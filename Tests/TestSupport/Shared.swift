import Locking

/// A value behind a lock in a class, for tests whose nested closures share it (a `Locked` local
/// is captured by reference, which a closure inside a task closure may not do).
public final class Shared<Value: Sendable>: Sendable {
    private let mutex: Locked<Value>

    public init(_ value: Value) { mutex = Locked(value) }

    public func withLock<R: Sendable>(_ body: (inout sending Value) throws -> sending R) rethrows -> R {
        try mutex.withLock(body)
    }

    /// The value now.
    public var value: Value { mutex.withLock { $0 } }
}
