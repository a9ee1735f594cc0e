import Foundation
import Runtime
import Testing
import TestSupport

/// The pool of a part's own threads for blocking work: real threads, real blocking waits.
@Suite struct BlockingPoolTests {
    @Test func workRunsOnThePoolsOwnThreadsAndItsResultOrErrorComesBack() async throws {
        let pool = BlockingPool(name: "pool-test", count: 2)
        pool.start()
        defer { pool.stop() }
        // The kernel's name of the thread that ran it.
        let name = try await pool.run { try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8) }
        #expect(name.hasPrefix("pool-test."), "ran on \(name)")
        // Not on the caller's thread, whichever it was.
        let caller = try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
        #expect(!caller.hasPrefix("pool-test."))
        struct Refused: Error {}
        await #expect(throws: Refused.self) { try await pool.run { throw Refused() } }
    }

    @Test func noMoreWorkRunsAtOnceThanThereAreThreads() async throws {
        let pool = BlockingPool(name: "pool-bound", count: 2)
        pool.start()
        defer { pool.stop() }
        let running = Shared((now: 0, most: 0))
        let release = DispatchSemaphore(value: 0)
        let calls = (0..<4).map { _ in
            Task {
                try await pool.run {
                    running.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
                    release.wait()
                    running.withLock { $0.now -= 1 }
                }
            }
        }
        #expect(try await eventually(within: 10) { running.withLock { $0.now } == 2 })
        // The other two wait for a thread: none starts while both threads block.
        try await Task.sleep(for: .milliseconds(100))
        #expect(running.withLock { $0.now } == 2)
        for _ in 0..<4 { release.signal() }
        for call in calls { try await call.value }
        #expect(running.withLock { $0.most } == 2)
    }

    @Test func aTaskCancelledWhileItsWorkWaitsForAThreadGetsCancellationAndTheWorkNeverRuns() async throws {
        let pool = BlockingPool(name: "pool-cancel", count: 1)
        pool.start()
        defer { pool.stop() }
        let release = DispatchSemaphore(value: 0), started = Shared(false), ran = Shared(false)
        let busy = Task { try await pool.run { started.withLock { $0 = true }; release.wait() } }
        #expect(try await eventually(within: 10) { started.value })
        let waiting = Task { try await pool.run { ran.withLock { $0 = true } } }
        try await Task.sleep(for: .milliseconds(50))
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        release.signal()
        try await busy.value
        // The thread is free again and the cancelled work was never handed to it.
        #expect(try await pool.run { 7 } == 7)
        #expect(!ran.value)
    }

    @Test func stopLetsRunningWorkFinishRefusesWaitingWorkAndJoinsTheThreads() async throws {
        let pool = BlockingPool(name: "pool-stop", count: 1)
        pool.stop()  // before start: nothing to do
        let idle = BlockingPool(name: "pool-idle", count: 1)
        await #expect(throws: BlockingPool.Stopped.self) { try await idle.run { 1 } }

        let running = BlockingPool(name: "pool-stop", count: 1)
        running.start()
        let started = Shared(false), finished = Shared(false), release = DispatchSemaphore(value: 0)
        let first = Task { try await running.run { started.withLock { $0 = true }; release.wait(); finished.withLock { $0 = true } } }
        #expect(try await eventually(within: 10) { started.value })
        let second = Task { try await running.run { 2 } }
        try await Task.sleep(for: .milliseconds(50))
        let stopped = Shared(false)
        let stopper = Thread {
            running.stop()
            stopped.withLock { $0 = true }
        }
        stopper.start()
        await #expect(throws: BlockingPool.Stopped.self) { try await second.value }
        // Joined only once the running work has returned.
        try await Task.sleep(for: .milliseconds(50))
        #expect(!stopped.value)
        release.signal()
        try await first.value
        #expect(finished.value)
        #expect(try await eventually(within: 10) { stopped.value })
        await #expect(throws: BlockingPool.Stopped.self) { try await running.run { 3 } }
        running.stop()  // twice: nothing more
    }
}
