import Foundation
import Synchronization
import Testing
@testable import Runtime
import TestSupport

/// A sleeping loop wakes when signalled, at its timeout or when cancelled, never by polling;
/// an interval thread ticks and is joined by `stop()`.
@Suite struct WakeupTests {
    @Test func aSignalEndsTheWaitInProgressAndOneSentBeforeEndsTheNext() async throws {
        let wake = WakeSignal()
        let started = monotonicMilliseconds()
        let waiting = Task { await wake.wait(timeoutMilliseconds: 60_000) }
        #expect(try await eventually { wake.hasSleeper })
        wake.signal()
        await waiting.value
        wake.signal()
        wake.signal()
        await wake.wait(timeoutMilliseconds: 60_000)
        #expect(monotonicMilliseconds() - started < 30_000)
    }

    @Test func aWaitEndsAtItsTimeoutAndOnCancellation() async {
        let wake = WakeSignal()
        let started = monotonicMilliseconds()
        await wake.wait(timeoutMilliseconds: 30)
        #expect(monotonicMilliseconds() - started >= 30)
        let waiting = Task { await wake.wait(timeoutMilliseconds: 60_000) }
        waiting.cancel()
        await waiting.value
        #expect(monotonicMilliseconds() - started < 30_000)
    }

    @Test func anIntervalThreadTicksUntilStopJoinsIt() async throws {
        let ticks = Atomic<Int>(0)
        // The ticks counted when the thread ended; -1 while it runs.
        let ticksAtExit = Atomic<Int>(-1)
        let thread = IntervalThread(name: "test-ticks", intervalMilliseconds: 10) { ticks.add(1, ordering: .relaxed) }
        try thread.start { ticksAtExit.store(ticks.load(ordering: .relaxed), ordering: .relaxed) }
        #expect(try await eventually { ticks.load(ordering: .relaxed) >= 2 })
        thread.stop()
        // Joined: the thread had ended when stop() returned, so no tick can follow.
        let atExit = ticksAtExit.load(ordering: .relaxed)
        #expect(atExit >= 2, "stop() returned before the thread ended")
        #expect(ticks.load(ordering: .relaxed) == atExit)
        thread.stop()
    }
}
