import Foundation
import Locking

/// Runs `body` on a new thread named `name` and suspends the calling task until it has returned;
/// resuming the task is the last thing the thread does.
///
/// For a service's synchronous `start()` and `stop()`, which open files, join threads and wait
/// for drains: run from async code they would hold a thread of the shared pool, which has one
/// per core, while the work they wait for may need it.
public func onThreadOfItsOwn<T: Sendable>(_ name: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withVisibleCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        startThreadOfItsOwn(name) { continuation.resume(with: Result { try body() }) }
    }
}

/// ``onThreadOfItsOwn(_:_:)`` for a body that cannot throw.
public func onThreadOfItsOwn<T: Sendable>(_ name: String, _ body: @escaping @Sendable () -> T) async -> T {
    await withVisibleCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
        startThreadOfItsOwn(name) { continuation.resume(returning: body()) }
    }
}

/// A new thread named `name` (for the kernel too) that runs `body` and ends, waited for by
/// nobody: for work that must not run on the thread that asks for it, which its end may join
/// (a storage fault's handlers stop the parts).
public func startThreadOfItsOwn(_ name: String, _ body: @escaping @Sendable () -> Void) {
    let thread = Thread {
        nameThisThread(name)
        body()
    }
    thread.name = name
    thread.start()
}
