import Dispatch
import Foundation
import Runtime
import Locking
import Testing

@Suite struct CPUAffinityTests {
    /// Runs `body` on a thread of its own (affinity belongs to a thread) and returns its result.
    private func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        let result = Locked<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            result.withLock { $0 = body() }
            done.signal()
        }.start()
        done.wait()
        return result.withLock { $0! }
    }

    @Test func aThreadAvoidingItsCPURunsElsewhereAndGetsItsCPUsBack() {
        #if os(Linux)
        let (allowed, cpu, during, afterwards, restored) = onThread { () -> ([Int32], Int32?, ([Int32], Int32?), [Int32], Int32?) in
            let allowed = CPUAffinity.allowed()
            let cpu = CPUAffinity.current()
            let affinity = CPUAffinity.avoiding(cpu)
            let during = (CPUAffinity.allowed(), CPUAffinity.current())
            affinity.restore()
            return (allowed, cpu, during, CPUAffinity.allowed(), CPUAffinity.current())
        }
        #expect(!allowed.isEmpty)
        let current = try? #require(cpu)
        #expect(current.map { allowed.contains($0) } == true)
        if allowed.count > 1 {
            // Moved off its CPU at once, onto the others it may use.
            #expect(during.0 == allowed.filter { $0 != current })
            #expect(during.1 != current && during.1.map { allowed.contains($0) } == true)
        } else {
            // The only CPU it may use: nothing changes.
            #expect(during.0 == allowed)
        }
        #expect(afterwards == allowed)
        #expect(restored.map { allowed.contains($0) } == true)
        #endif
    }

    @Test func nothingChangesWithoutACPUToAvoid() {
        #if os(Linux)
        let (before, after) = onThread { () -> ([Int32], [Int32]) in
            let before = CPUAffinity.allowed()
            let none = CPUAffinity.avoiding(nil)
            let outside = CPUAffinity.avoiding(100_000)
            let after = CPUAffinity.allowed()
            outside.restore()
            none.restore()
            return (before, after)
        }
        #expect(before == after && !before.isEmpty)
        #endif
    }
}
