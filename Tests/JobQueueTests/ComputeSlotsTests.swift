import Foundation
import Runtime
import Synchronization
import Testing
import TestSupport
import WorkerRuntime

/// The gate a worker puts around the CPU part of its jobs, so it can run more jobs than cores.
@Suite struct ComputeSlotsTests {
    /// The bodies block their threads (CPU work stands in): threads of their own, not the
    /// shared pool, which has one thread per core. Started once, for the whole run.
    static let threads: BlockingPool = {
        let threads = BlockingPool(name: "slots-test", count: 16)
        threads.start()
        return threads
    }()

    /// A body of `cost` holding a slot until `release` is set, once it runs.
    static func hold(_ slots: ComputeSlots, cost: Int = 0) async throws -> (task: Task<Void, any Error>, release: Shared<Bool>) {
        let release = Shared(false)
        let running = slots.usage.running
        let task = Task(executorPreference: threads) { try await slots.run(cost: cost) { while !release.value { usleep(500) } } }
        #expect(try await eventually { slots.usage.running == running + 1 })
        return (task, release)
    }

    @Test func asManyBodiesRunAtOnceAsThereAreSlotsNoMoreAndEveryOneRuns() async throws {
        let slots = ComputeSlots(count: 2)
        let running = Shared((now: 0, most: 0, ran: 0))
        let end = ContinuousClock.now + .seconds(20)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<12 {
                group.addTask(executorPreference: Self.threads) {
                    try await slots.run {
                        running.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
                        // Held until all 12 have asked for a slot (each runs or waits) and both
                        // slots are taken, or nobody waits: too many slots, or too few, show in
                        // `most` whatever the timing.
                        while ContinuousClock.now < end {
                            let (now, ran) = running.withLock { ($0.now, $0.ran) }
                            let waiting = slots.usage.waiting
                            if waiting + now + ran == 12 && (now >= 2 || waiting == 0) { break }
                            usleep(500)
                        }
                        running.withLock { $0.now -= 1; $0.ran += 1 }
                    }
                }
            }
            try await group.waitForAll()
        }
        let (now, most, ran) = running.withLock { $0 }
        #expect(ran == 12 && now == 0)
        #expect(most == 2, "\(most) bodies ran at once in 2 slots")
        #expect(slots.usage.running == 0 && slots.usage.waiting == 0)
    }

    @Test func waitersGetTheSlotInTheOrderTheyCameAndABodysErrorReachesItsCaller() async throws {
        let slots = ComputeSlots(count: 1)
        let order = Shared<[Int]>([])
        // The first holds the slot until told; the others queue behind it, one after the other.
        let (holder, release) = try await Self.hold(slots)
        var waiters: [Task<Void, any Error>] = []
        for index in 1...3 {
            waiters.append(Task(executorPreference: Self.threads) {
                try await slots.run {
                    order.withLock { $0.append(index) }
                    if index == 2 { throw CocoaError(.fileNoSuchFile) }
                }
            })
            #expect(try await eventually { slots.usage.waiting == index })
        }
        release.withLock { $0 = true }
        try await holder.value
        try await waiters[0].value
        await #expect(throws: CocoaError.self) { try await waiters[1].value }
        try await waiters[2].value
        #expect(order.withLock { $0 } == [1, 2, 3])
        #expect(slots.usage.running == 0)
    }

    @Test func aWaiterCancelledLeavesTheLineAtOnceWithoutRunningAndTakesNoSlot() async throws {
        let slots = ComputeSlots(count: 1)
        let ran = Shared(0)
        let (holder, release) = try await Self.hold(slots)
        let cancelled = Task(executorPreference: Self.threads) { try await slots.run { ran.withLock { $0 += 1 } } }
        #expect(try await eventually { slots.usage.waiting == 1 })
        cancelled.cancel()
        // It leaves while the slot is still held: cancellation does not wait for the slot.
        let outcome = await cancelled.result
        #expect(slots.usage.waiting == 0)
        var wasCancellation = false
        if case .failure(let error) = outcome { wasCancellation = error is CancellationError }
        #expect(wasCancellation, "\(outcome)")
        // A task cancelled before it asks never waits either.
        let early = Task(executorPreference: Self.threads) {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await slots.run { ran.withLock { $0 += 1 } }
        }
        let earlyOutcome = await early.result
        var earlyCancelled = false
        if case .failure(let error) = earlyOutcome { earlyCancelled = error is CancellationError }
        #expect(earlyCancelled)
        release.withLock { $0 = true }
        try await holder.value
        let ranBefore = ran.value
        #expect(ranBefore == 0)
        // The slot came back whole: the next caller runs at once.
        try await slots.run { ran.withLock { $0 += 1 } }
        let ranAfter = ran.value
        #expect(ranAfter == 1 && slots.usage.running == 0)
    }

    @Test func bodiesStartOnlyWhileTheirCostsFitTheBudgetInOrderAndOneOverItRunsAlone() async throws {
        // Three slots, 100 bytes: 60 + 30 run together; the 50 behind them waits for the 60 to
        // end, and the 10 behind it waits too (first come, first served); a 500 runs alone.
        let slots = ComputeSlots(count: 3, budgetBytes: 100)
        let opened = Shared<Set<Int>>([])
        let started = Shared<[Int]>([])
        let costs = [60, 30, 50, 10, 500]
        var tasks: [Task<Void, any Error>] = []
        for (index, cost) in costs.enumerated() {
            tasks.append(Task(executorPreference: Self.threads) {
                try await slots.run(cost: cost) {
                    started.withLock { $0.append(index) }
                    while !opened.withLock({ $0.contains(index) }) { usleep(500) }
                }
            })
            // Each in line (or running) before the next asks.
            #expect(try await eventually { slots.usage.running + slots.usage.waiting == index + 1 })
        }
        // Let in (counted running) before each body's thread gets to record it.
        #expect(try await eventually { started.withLock { $0.sorted() } == [0, 1] })
        #expect(slots.usage.bytes == 90 && slots.usage.waiting == 3)
        opened.withLock { _ = $0.insert(1) }
        try await tasks[1].value
        // 60 + 50 would be 110: the 50 still waits, and so does the 10 behind it.
        #expect(started.withLock { $0.sorted() } == [0, 1])
        opened.withLock { _ = $0.insert(0) }
        try await tasks[0].value
        // 2 and 3 are let in together: their bodies start on two threads, in either order.
        #expect(try await eventually { started.withLock { $0.sorted() } == [0, 1, 2, 3] })
        #expect(slots.usage.bytes == 60 && slots.usage.waiting == 1)
        opened.withLock { _ = $0.insert(2) }
        opened.withLock { _ = $0.insert(3) }
        try await tasks[2].value
        try await tasks[3].value
        // Over the whole budget, once nothing else runs.
        #expect(try await eventually { started.withLock { $0.sorted() } == [0, 1, 2, 3, 4] })
        #expect(slots.usage.bytes == 500 && slots.usage.running == 1)
        opened.withLock { _ = $0.insert(4) }
        try await tasks[4].value
        #expect(slots.usage.bytes == 0 && slots.usage.running == 0)
    }

    @Test func aCancelledHeadOfTheLineLetsThoseBehindItStart() async throws {
        let slots = ComputeSlots(count: 2, budgetBytes: 100)
        let (holder, release) = try await Self.hold(slots, cost: 80)
        let big = Task(executorPreference: Self.threads) { try await slots.run(cost: 50) {} }
        #expect(try await eventually { slots.usage.waiting == 1 })
        let ran = Shared(false)
        let small = Task(executorPreference: Self.threads) { try await slots.run(cost: 10) { ran.withLock { $0 = true } } }
        #expect(try await eventually { slots.usage.waiting == 2 })
        let ranEarly = ran.value
        #expect(!ranEarly)
        big.cancel()
        _ = await big.result
        // The 10 fits beside the 80 and nothing is ahead of it now.
        try await small.value
        let ranLater = ran.value
        #expect(ranLater)
        release.withLock { $0 = true }
        try await holder.value
        #expect(slots.usage.running == 0 && slots.usage.bytes == 0)
    }

    @Test func aBodyThatReadsItsInputHoldsItsSlotAndCostWhileItWaits() async throws {
        let slots = ComputeSlots(count: 2, budgetBytes: 100)
        let (read, reading) = AsyncStream<Void>.makeStream()
        let started = Shared(false)
        let reader = Task(executorPreference: Self.threads) {
            try await slots.runReading(cost: 80) {
                started.withLock { $0 = true }
                for await _ in read { break }
            }
        }
        #expect(try await eventually { started.value })
        #expect(slots.usage.running == 1 && slots.usage.bytes == 80)
        // A free slot, but not the bytes: it waits while the reader only waits for its input.
        let next = Task(executorPreference: Self.threads) { try await slots.run(cost: 30) {} }
        #expect(try await eventually { slots.usage.waiting == 1 })
        reading.yield()
        try await reader.value
        try await next.value
        #expect(slots.usage.running == 0 && slots.usage.bytes == 0 && slots.usage.waiting == 0)
    }
}
