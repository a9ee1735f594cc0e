/// `withCheckedContinuation`, `withCheckedThrowingContinuation` and `withUnsafeContinuation`,
/// whose resumption ThreadSanitizer sees.
///
/// The Concurrency runtime tells TSan that a continuation's `resume` happens before the task
/// goes on (`__tsan_release` on the task) only on the path where the task had suspended first:
/// when `resume` runs before the task reaches its await (the I/O thread answering at once), the
/// task goes on at once with no `__tsan_acquire`, and TSan reports everything handed over, the
/// reply's bytes too, as raced (RELIABILITY.md, Sanitizers). Built with `-D HOMEPWNER_TSAN`,
/// these acquire the current task once the await returns; otherwise they are the standard
/// functions and nothing else.

@inlinable
public func withVisibleCheckedContinuation<T>(
    isolation: isolated (any Actor)? = #isolation, function: String = #function,
    _ body: (CheckedContinuation<T, Never>) -> Void
) async -> sending T {
    let value = await withCheckedContinuation(isolation: isolation, function: function, body)
    continuationResumed()
    return value
}

@inlinable
public func withVisibleCheckedThrowingContinuation<T>(
    isolation: isolated (any Actor)? = #isolation, function: String = #function,
    _ body: (CheckedContinuation<T, any Error>) -> Void
) async throws -> sending T {
    do {
        let value = try await withCheckedThrowingContinuation(isolation: isolation, function: function, body)
        continuationResumed()
        return value
    } catch {
        continuationResumed()
        throw error
    }
}

@inlinable
public func withVisibleUnsafeContinuation<T>(
    isolation: isolated (any Actor)? = #isolation, _ body: (UnsafeContinuation<T, Never>) -> Void
) async -> sending T {
    let value = await withUnsafeContinuation(isolation: isolation, body)
    continuationResumed()
    return value
}

/// Under `HOMEPWNER_TSAN`, `__tsan_acquire` on the current task, the address the runtime's
/// `resume` released; nothing otherwise.
@inlinable @inline(__always)
public func continuationResumed() {
    #if HOMEPWNER_TSAN
    withUnsafeCurrentTask { task in
        guard let task else { return }
        tsanAcquire(unsafeBitCast(task, to: UnsafeRawPointer.self))
    }
    #endif
}

/// A continuation resumed once, by whichever of its racers comes first (a result against a
/// timer, say); the later ones are dropped.
public final class FirstResult<Value: Sendable>: Sendable {
    private let continuation: Locked<CheckedContinuation<Value, Never>?>

    public init(_ continuation: CheckedContinuation<Value, Never>) {
        self.continuation = Locked(continuation)
    }

    public func resume(_ value: Value) {
        continuation.withLock { $0.take() }?.resume(returning: value)
    }
}
