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
        let exited = Atomic<Bool>(false)
        let thread = IntervalThread(name: "test-ticks", intervalMilliseconds: 10) { ticks.add(1, ordering: .relaxed) }
        try thread.start { exited.store(true, ordering: .relaxed) }
        for _ in 0..<1000 where ticks.load(ordering: .relaxed) < 2 { try await Task.sleep(for: .milliseconds(10)) }
        thread.stop()
        let ended = exited.load(ordering: .relaxed)
        #expect(ended, "stop() returned before the thread ended")
        let after = ticks.load(ordering: .relaxed)
        #expect(after >= 2)
        try await Task.sleep(for: .milliseconds(50))
        #expect(ticks.load(ordering: .relaxed) == after)
        thread.stop()
    }
}
