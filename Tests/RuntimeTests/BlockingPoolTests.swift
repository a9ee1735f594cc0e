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

    @Test func submittedWorkRunsEvenWhenNoTaskWaitsAndIsRefusedOnceThePoolStops() async throws {
        let pool = BlockingPool(name: "pool-submit", count: 1)
        let ran = Shared([String]()), refusals = Shared([String]())
        // Before start: refused at once, never run.
        pool.submit({ ran.withLock { $0.append("early") } }, refused: { error in refusals.withLock { $0.append("early: \(error)") } })
        #expect(refusals.withLock { $0 } == ["early: the pool-submit threads are stopped"])
        pool.start()
        let release = DispatchSemaphore(value: 0), running = Shared(false)
        pool.submit({
            running.withLock { $0 = true }
            release.wait()
            ran.withLock { $0.append("first") }
        }, refused: { _ in refusals.withLock { $0.append("first") } })
        // Waits behind the first: the stop refuses it, with the reason.
        pool.submit({ ran.withLock { $0.append("second") } }, refused: { _ in refusals.withLock { $0.append("second") } })
        #expect(try await eventually(within: 10) { running.withLock { $0 } })
        let stopped = Task.detached { pool.stop() }
        #expect(try await eventually(within: 10) { refusals.withLock { $0 }.contains("second") })
        release.signal()
        await stopped.value
        #expect(ran.withLock { $0 } == ["first"])
        #expect(refusals.withLock { $0 }.suffix(1) == ["second"])
    }

    @Test func alongsideRunsWorkOnAPoolThreadWhileTheBodyRunsAndWaitsForItEvenWhenTheBodyThrows() async throws {
        let pool = BlockingPool(name: "pool-along", count: 1)
        pool.start()
        defer { pool.stop() }
        let (worker, body) = try pool.alongside({
            try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
        }, while: { try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8) })
        #expect(worker.hasPrefix("pool-along.") && !body.hasPrefix("pool-along."), "\(worker) beside \(body)")
        struct BodyFailed: Error {}
        let finished = Shared(false)
        #expect(throws: BodyFailed.self) {
            _ = try pool.alongside({
                Thread.sleep(forTimeInterval: 0.05)
                finished.withLock { $0 = true }
            }, while: { throw BodyFailed() })
        }
        // The body's error came back only once the work was done (it may use what the caller frees).
        #expect(finished.withLock { $0 })
    }
}
