import JobQueue
import Runtime
import Testing

/// The multi-waiter notifier Lease sleeps on.
@Suite struct JobNotifierTests {
    @Test func oneSignalWakesEveryWaiter() async {
        let notifier = JobNotifier()
        let generation = notifier.generation
        async let first: Void = notifier.wait(since: generation, timeoutMilliseconds: 60_000)
        async let second: Void = notifier.wait(since: generation, timeoutMilliseconds: 60_000)
        while notifier.waiterCount < 2 { await Task.yield() }
        notifier.signal()
        _ = await (first, second)
        #expect(notifier.waiterCount == 0 && notifier.generation == generation + 1)
    }

    @Test func aSignalBetweenTheLookAndTheSleepEndsTheWaitAtOnce() async {
        let notifier = JobNotifier()
        let generation = notifier.generation
        notifier.signal()
        // Would sleep a minute if the signal were lost.
        await notifier.wait(since: generation, timeoutMilliseconds: 60_000)
        #expect(notifier.waiterCount == 0)
    }

    @Test func aWaitEndsAtItsTimeoutAndOnCancellation() async {
        let notifier = JobNotifier()
        await notifier.wait(since: notifier.generation, timeoutMilliseconds: 10)
        let cancelled = Task { await notifier.wait(since: notifier.generation, timeoutMilliseconds: 60_000) }
        while notifier.waiterCount < 1 { await Task.yield() }
        cancelled.cancel()
        await cancelled.value
        #expect(notifier.waiterCount == 0 && notifier.generation == 0)
    }
}
