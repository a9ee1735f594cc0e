import Proto
@testable import RPC
import Testing

/// The deadline layer alone: a call's deadline from its header or the default, when one has
/// passed, how often the loop scans, and what a caller is told at each point.
@Suite struct CallDeadlinesTests {
    static let deadlines = CallDeadlines(defaultTimeoutMilliseconds: 30_000)

    @Test func theHeadersTimeoutElseTheDefault() {
        #expect(Self.deadlines.deadline(arrivedAt: 1000, timeoutMilliseconds: 250) == 1250)
        #expect(Self.deadlines.deadline(arrivedAt: 1000, timeoutMilliseconds: 0) == 31_000)
        #expect(Self.deadlines.deadline(arrivedAt: 0, timeoutMilliseconds: .max) == Int64(UInt32.max))
    }

    @Test func aCallIsOnTimeAtItsDeadlineItself() {
        #expect(!CallDeadlines.passed(1250, now: 1249))
        #expect(!CallDeadlines.passed(1250, now: 1250))
        #expect(CallDeadlines.passed(1250, now: 1251))
    }

    @Test func theLoopScansEveryFiveMilliseconds() {
        #expect(!CallDeadlines.scanDue(now: 104, lastScan: 100))
        #expect(CallDeadlines.scanDue(now: 105, lastScan: 100))
    }

    @Test func eachPointADeadlinePassesHasItsMessage() {
        let method = "/homepwner.v1.ItemService/CreateItem"
        let answers = [
            CallDeadlines.beforeStart(method), CallDeadlines.beforeFinish(method),
            CallDeadlines.whileServing(method), CallDeadlines.whileWaiting(method),
        ]
        #expect(answers.allSatisfy { $0.code == .deadlineExceeded && $0.retryAfter == 0 })
        #expect(answers.map(\.message) == [
            "deadline of \(method) passed before it started",
            "deadline of \(method) passed before it finished",
            "deadline passed while serving \(method)",
            "deadline of \(method) passed while waiting for the first call with this idempotency key, which is still running",
        ])
    }
}
