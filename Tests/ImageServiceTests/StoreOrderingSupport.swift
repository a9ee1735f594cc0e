import Dispatch
import Foundation
import Synchronization
import Testing
@testable import ImageService

/// A store in `folder` (as `makeStore`) with `hooks` in place from its start.
func makeStore(_ folder: TemporaryFolder, budget: Int = 64 << 20, hooks: StoreHooks) throws -> ImageStore {
    try ImageStore(
        folder: folder.path + "/images", cache: ImageCache(budgetBytes: budget), logger: testLogger, hooks: hooks).started()
}

/// Holds the threads that reach it (a store's I/O lane, in a hook) until it is opened, and
/// says whether one has arrived: a test orders one call against another with it, without
/// sleeping and hoping.
final class Gate: Sendable {
    private let opened = DispatchSemaphore(value: 0)
    private let arrivals = Atomic<Int>(0)

    /// Blocks the calling thread until `open()` (at once after it).
    func pass() {
        arrivals.add(1, ordering: .sequentiallyConsistent)
        opened.wait()
        opened.signal()  // the gate stays open for whoever comes next
    }

    func open() { opened.signal() }

    var arrived: Bool { count > 0 }

    /// How many threads have reached it.
    var count: Int { arrivals.load(ordering: .sequentiallyConsistent) }
}

/// A task's outcome and whether it has ended yet.
final class Tracked<T: Sendable>: Sendable {
    private final class Flag: Sendable {
        let ended = Atomic<Bool>(false)
    }

    private let task: Task<T, any Error>
    private let flag: Flag

    init(_ body: @escaping @Sendable () async throws -> T) {
        let flag = Flag()
        self.flag = flag
        task = Task {
            defer { flag.ended.store(true, ordering: .sequentiallyConsistent) }
            return try await body()
        }
    }

    var hasEnded: Bool { flag.ended.load(ordering: .sequentiallyConsistent) }

    var value: T { get async throws { try await task.value } }
}

/// Waits until `condition` holds, polling; false after `seconds` without it (a busy machine
/// gets a generous bound, and a test that waits for something that never comes still ends).
func eventually(seconds: Double = 20, _ condition: () -> Bool) async -> Bool {
    let end = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while !condition() {
        if ContinuousClock.now > end { return false }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return true
}
