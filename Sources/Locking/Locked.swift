import Synchronization

/// A value behind a lock: `Synchronization.Mutex` with the same shape (`Locked(value)`,
/// `withLock { $0 … }`), which ThreadSanitizer can see.
///
/// Mutex's contended path waits and wakes with futex system calls inside the uninstrumented
/// `libswiftSynchronization.so`, so under TSan a lock that was contended gives no happens-before
/// and every access to the value it guards is reported as a race (RELIABILITY.md, Sanitizers;
/// `ops/sanitizers/mutex-under-tsan.swift` shows it). Built with `-D HOMEPWNER_TSAN` (only
/// `ops/test --sanitize thread` does), `withLock` tells TSan itself: `__tsan_acquire` on the
/// lock's identity once the lock is held, `__tsan_release` before it is let go. Without the
/// flag it is the Mutex and nothing else: no extra field, call or symbol.
public struct Locked<Value: ~Copyable>: ~Copyable {
    @usableFromInline let mutex: Mutex<Value>
    #if HOMEPWNER_TSAN
    /// A stable address for TSan's synchronization object (a Mutex's own address is not
    /// reachable from a borrowing method).
    @usableFromInline let identity = TSanLockIdentity()
    #endif

    @inlinable
    public init(_ initialValue: consuming sending Value) { mutex = Mutex(initialValue) }

    /// Calls `body` with the value while holding the lock, as `Mutex.withLock`.
    @inlinable
    public borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        #if HOMEPWNER_TSAN
        return try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            let address = UnsafeRawPointer(Unmanaged.passUnretained(identity).toOpaque())
            tsanAcquire(address)
            defer { tsanRelease(address) }
            return try body(&value)
        }
        #else
        return try mutex.withLock(body)
        #endif
    }
}

extension Locked: @unchecked Sendable where Value: ~Copyable {}

#if HOMEPWNER_TSAN
/// ThreadSanitizer's annotations (compiler-rt's tsan_interface.h), in the TSan runtime that
/// `-sanitize=thread` links; declared only under the flag, so a normal build references neither.
@usableFromInline @_silgen_name("__tsan_acquire") func tsanAcquire(_ address: UnsafeRawPointer)
@usableFromInline @_silgen_name("__tsan_release") func tsanRelease(_ address: UnsafeRawPointer)

@usableFromInline final class TSanLockIdentity: Sendable {
    @usableFromInline init() {}
}
#endif
