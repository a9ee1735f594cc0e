import Locking
import Proto
@testable import RPC
import Runtime
import Testing

/// The metrics layer alone: answers counted by method, code and latency, requests that named no
/// method counted apart, percentiles from the histogram, and the debug line of each answer.
@Suite struct CallMetricsTests {
    static let create = "/homepwner.v1.ItemService/CreateItem"
    static let get = "/homepwner.v1.ItemService/GetItem"

    @Test func answersAreCountedUnderTheirMethodCodeAndLatency() throws {
        let metrics = CallMetrics(paths: [Self.get, Self.create], logger: Logger(label: "test", level: .info, sink: .discard))
        let ms: Int64 = 1_000_000
        let first = metrics.tag(method: Self.create, arrived: 10 * ms, requestBytes: 100)
        metrics.answered(.ok, replyBytes: 40, first, now: 13 * ms)
        let second = metrics.tag(method: Self.create, arrived: 20 * ms, requestBytes: 50)
        metrics.answered(.invalidArgument, replyBytes: 0, second, now: 21 * ms)
        let read = metrics.tag(method: Self.get, arrived: 0, requestBytes: 10)
        metrics.answered(.notFound, replyBytes: 0, read, now: 500_000)

        let rows = metrics.snapshot()
        // In path order, then the row of requests that named no method served here.
        #expect(rows.map(\.method) == [Self.create, Self.get, ""])
        let created = rows[0]
        #expect(created.calls == 2)
        #expect(created.codes.map { "\($0.code):\($0.count)" } == ["OK:1", "INVALID_ARGUMENT:1"])
        #expect(created.totalUs == 4000 && created.maxUs == 3000)
        #expect(created.requestBytes == 150 && created.replyBytes == 40)
        // Percentiles are a histogram bucket's upper bound (within 12.5 %), never above the largest.
        #expect(created.p50Us >= 1000 && created.p50Us <= 1125)
        #expect(created.p99Us == 3000)
        #expect(rows[1].calls == 1 && rows[1].maxUs == 500 && rows[1].codes.first?.code == .notFound)
        #expect(rows[2].calls == 0)
    }

    @Test func aRequestNamingNoServedMethodIsCountedInTheEmptyRow() {
        let metrics = CallMetrics(paths: [Self.get], logger: Logger(label: "test", level: .info, sink: .discard))
        for method in ["/homepwner.v1.Nope/Nothing", ""] {
            metrics.answered(.unimplemented, replyBytes: 0, metrics.tag(method: method, arrived: 0, requestBytes: 3), now: 1000)
        }
        let rows = metrics.snapshot()
        #expect(rows.map(\.method) == [Self.get, ""])
        #expect(rows[0].calls == 0)
        #expect(rows[1].calls == 2 && rows[1].codes.first?.code == .unimplemented && rows[1].requestBytes == 6)
    }

    @Test func anUntrackedAnswerIsCountedNowhere() {
        let metrics = CallMetrics(paths: [Self.get], logger: Logger(label: "test", level: .info, sink: .discard))
        metrics.answered(.ok, replyBytes: 10, .untracked, now: 1000)
        #expect(metrics.snapshot().allSatisfy { $0.calls == 0 })
    }

    @Test func atDebugLevelEachAnswerIsOneLogLine() {
        let lines = Locked<[String]>([])
        let debug = CallMetrics(paths: [Self.get], logger: Logger(label: "test", level: .debug, sink: LogSink { line in lines.withLock { $0.append(line) } }))
        debug.answered(.ok, replyBytes: 88, debug.tag(method: Self.get, arrived: 0, requestBytes: 7), now: 2_500_000)
        debug.answered(.unimplemented, replyBytes: 0, debug.tag(method: "", arrived: 0, requestBytes: 0), now: 0)
        let logged = lines.withLock { $0 }
        #expect(logged.count == 2)
        #expect(logged.first?.contains("method=\(Self.get)") == true, "\(logged)")
        #expect(logged.first?.contains("code=OK") == true && logged.first?.contains("elapsed_ms=2.500") == true, "\(logged)")
        #expect(logged.first?.contains("request_bytes=7") == true && logged.first?.contains("reply_bytes=88") == true, "\(logged)")
        #expect(logged.last?.contains("method=-") == true, "\(logged)")

        let quiet = Locked<Int>(0)
        let info = CallMetrics(paths: [Self.get], logger: Logger(label: "test", level: .info, sink: LogSink { _ in quiet.withLock { $0 += 1 } }))
        info.answered(.ok, replyBytes: 1, info.tag(method: Self.get, arrived: 0, requestBytes: 1), now: 1)
        #expect(quiet.withLock { $0 } == 0)
    }
}
