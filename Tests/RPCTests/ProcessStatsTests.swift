import Foundation
import Proto
@testable import RPC
import Runtime
import Testing
import RPCTestSupport
import TestSupport

/// Metrics/Stats: every reply counted under its method and status code, with its latency; the
/// server's counters; the parts' figures; one debug line per request; the Prometheus text.
@Suite struct ProcessStatsTests {
    @Test func bucketsCoverEveryLatencyWithinAnEighth() {
        var previous = -1
        for value: UInt64 in [0, 1, 7, 8, 9, 15, 16, 17, 100, 999, 1000, 65_535, 1 << 20, (1 << 27) - 1] {
            let bucket = MethodMetrics.bucket(ofMicroseconds: value)
            #expect(bucket >= previous, "buckets grow with the value (\(value))")
            previous = bucket
            let upper = MethodMetrics.upperBound(ofBucket: bucket)
            #expect(upper >= value, "bucket \(bucket) holds \(value)")
            #expect(Double(upper) <= Double(value) * 1.125 + 1, "\(value) reported as \(upper)")
            if bucket > 0 { #expect(MethodMetrics.upperBound(ofBucket: bucket - 1) < value) }
        }
        // Past the last bucket: the last one, not a crash.
        #expect(MethodMetrics.bucket(ofMicroseconds: .max) == MethodMetrics.bucketCount - 1)
    }

    @Test func percentilesCodesAndBytesOfRecordedCalls() {
        let metrics = MethodMetrics(paths: ["/b.B/Two", "/a.A/One"])
        #expect(metrics.paths == ["/a.A/One", "/b.B/Two", ""])
        let one = metrics.row(of: "/a.A/One")
        for micros in 1...100 {
            metrics.record(row: one, code: micros <= 90 ? .ok : .notFound, microseconds: UInt64(micros), requestBytes: 10, replyBytes: 3)
        }
        metrics.record(row: metrics.row(of: "/not.Served/Here"), code: StatusCode(rawValue: 99), microseconds: 5, requestBytes: 1, replyBytes: 0)
        metrics.record(row: CallTag.untracked.row, code: .ok, microseconds: 5, requestBytes: 1, replyBytes: 0)
        let rows = metrics.snapshot()
        #expect(rows.map(\.method) == ["/a.A/One", "/b.B/Two", ""])
        let first = rows[0]
        #expect(first.calls == 100)
        #expect(first.codes.map(\.code) == [.ok, .notFound])
        #expect(first.codes.map(\.count) == [90, 10])
        #expect((50...56).contains(first.p50Us), "p50 \(first.p50Us)")
        #expect((90...100).contains(first.p90Us), "p90 \(first.p90Us)")
        #expect(first.p99Us == 100 || (99...100).contains(first.p99Us), "p99 \(first.p99Us)")
        #expect(first.maxUs == 100)
        #expect(first.totalUs == 5050)
        #expect(first.requestBytes == 1000 && first.replyBytes == 300)
        #expect(rows[1].calls == 0 && rows[1].p50Us == 0 && rows[1].codes.isEmpty)
        // An unknown status code counts as UNKNOWN; an untracked reply counts nowhere.
        #expect(rows[2].calls == 1)
        #expect(rows[2].codes.map(\.code) == [.unknown])
    }

    @Test func everyReplyIsCountedUnderItsMethodAndCode() async throws {
        let lines = LogCollector()
        let server = try RPCServer(
            context: testContext, configuration: .init(endpoints: [uniqueEndpoint()], processName: "stats-server"),
            logger: Logger(label: "stats-server", level: .debug, sink: .collecting(lines)))
        registerTestMethods(server, calls: nil)
        server.addFigures { [Figure("homepwner_test_depth", "A test figure.", labels: ["queue": "q\"1"], value: 3)] }
        try server.start()
        defer { server.stop() }
        let endpoint = server.boundEndpoints[0]
        let client = try RPCClient(context: testContext, endpoint: endpoint)
        defer { client.close() }

        for name in ["a", "b", "c"] {
            var request = CreateItemRequest()
            request.name = name
            _ = try await client.call(ItemServiceRPC.createItem, request)
        }
        var missing = GetItemRequest()
        missing.key = "missing"
        let notFoundError = await rpcError { try await client.call(ItemServiceRPC.getItem, missing, options: .init(retry: .none)) }
        #expect(notFoundError?.code == .notFound)
        var slow = GetItemRequest()
        slow.key = "sleep:30"
        _ = try await client.call(ItemServiceRPC.getItem, slow)
        let peer = try RawPeer(.dealer, endpoint: endpoint)
        try peer.send([[], requestHeader("/homepwner.v1.Nope/Nothing"), []])
        let unimplemented = try await peer.receiveHeader()
        #expect(unimplemented?.0.code == StatusCode.unimplemented.rawValue)
        try peer.send([[1, 2, 3]])
        let malformed = try await peer.receiveHeader()
        #expect(malformed?.0.code == StatusCode.invalidArgument.rawValue)

        let stats = try await client.call(MetricsRPC.stats, ProcessStatsRequest())
        #expect(stats.process == "stats-server")
        #expect(stats.version == HomepwnerVersion.string)
        #expect(stats.rssBytes > 1 << 20 && stats.peakRssBytes >= stats.rssBytes)
        let rows = Dictionary(uniqueKeysWithValues: stats.methods.map { ($0.method, $0) })
        #expect(Set(rows.keys) == Set(server.shared.withLock { $0.methods.keys }).union([""]))
        let create = try #require(rows[ItemServiceRPC.createItem.path])
        #expect(create.calls == 3 && create.codes.map(\.code) == [.ok] && create.requestBytes > 0 && create.replyBytes > 0)
        let get = try #require(rows[ItemServiceRPC.getItem.path])
        #expect(get.calls == 2)
        #expect(get.codes.map(\.code) == [.ok, .notFound])
        #expect(get.maxUs >= 30_000, "the 30 ms call took \(get.maxUs) µs")
        #expect(get.p99Us >= 30_000 && get.p50Us <= get.p99Us)
        let unnamed = try #require(rows[""])
        #expect(unnamed.calls == 2 && unnamed.codes.map(\.code) == [.invalidArgument, .unimplemented])
        // Stats itself is not in its own answer: it is counted once its reply is sent.
        #expect(rows[MetricsRPC.stats.path]?.calls == 0)
        let server_ = try #require(stats.server)
        #expect(server_.received == 8 && server_.malformed == 1 && server_.inFlight == 1)
        #expect(stats.figures.map(\.name) == ["homepwner_test_depth"])

        // One debug line per request, naming the method, the code, the time and the sizes; the
        // Stats call's own is written before its reply is sent.
        let requestLines = lines.lines.filter { $0.contains(" request ") }
        #expect(requestLines.count == 8, "\(requestLines)")
        #expect(requestLines.last.map { $0.contains("method=/homepwner.v1.Metrics/Stats") && $0.contains("code=OK") } == true)
        let notFound = try #require(requestLines.first { $0.contains("code=NOT_FOUND") })
        #expect(notFound.contains("method=/homepwner.v1.ItemService/GetItem"))
        #expect(notFound.contains("elapsed_ms=") && notFound.contains("request_bytes=") && notFound.contains("reply_bytes=0"))
        #expect(requestLines.contains { $0.contains("method=- ") && $0.contains("code=INVALID_ARGUMENT") })

        let text = PrometheusText.render([stats])
        #expect(text.contains("homepwner_rpc_requests_total{process=\"stats-server\",method=\"/homepwner.v1.ItemService/GetItem\",code=\"NOT_FOUND\"} 1\n"))
        #expect(text.contains("homepwner_rpc_requests_total{process=\"stats-server\",method=\"none\",code=\"UNIMPLEMENTED\"} 1\n"))
        #expect(text.contains("homepwner_rpc_request_duration_seconds_count{process=\"stats-server\",method=\"/homepwner.v1.ItemService/CreateItem\"} 3\n"))
        #expect(text.contains("homepwner_test_depth{process=\"stats-server\",queue=\"q\\\"1\"} 3\n"))
        #expect(text.components(separatedBy: "# TYPE homepwner_rpc_requests_total counter\n").count == 2)
    }

    @Test func aStoppedPartsFiguresDoNotHoldTheScrapeLongerThanItsTimeout() async throws {
        let server = try makeServer()
        defer { server.stop() }
        server.addFigures {
            try? await Task.sleep(for: .seconds(5))
            return [Figure("homepwner_late", "Never in time.", value: 1)]
        }
        let started = ContinuousClock.now
        let stats = await server.processStats(figuresWithin: 200)
        #expect(ContinuousClock.now - started < .seconds(4))
        #expect(stats.figures.isEmpty && stats.process == "test-server")
    }

    @Test func prometheusNumbersAndEscapes() {
        #expect(PrometheusText.number(3) == "3")
        #expect(PrometheusText.number(0.25) == "0.25")
        #expect(PrometheusText.number(.nan) == "NaN")
        #expect(PrometheusText.number(-.infinity) == "-Inf")
        #expect(PrometheusText.escapeLabel("a\\b\"c\nd") == "a\\\\b\\\"c\\nd")
    }
}
