import Foundation
@testable import RPC
import Testing
import RPCTestSupport
import TestSupport

/// The text rendered in a task while the endpoint's thread goes on serving: requests for
/// /metrics wait for it, within a bound, and a stop does not wait for it.
extension ScrapeEndpointTests {
    /// A started endpoint whose body waits at `gate` before answering the metrics text.
    static func startedHeld(
        at gate: Gate, maxConnections: Int = 64, calls: CallCounter = CallCounter()
    ) throws -> (ScrapeEndpoint, UInt16) {
        let endpoint = try ScrapeEndpoint(
            name: "test", context: testContext, endpoint: "tcp://127.0.0.1:0", logger: testLogger,
            idleTimeoutMilliseconds: 10_000, maxConnections: maxConnections, refreshMilliseconds: 60_000
        ) {
            calls.increment()
            await gate.wait()
            return metrics
        }
        try endpoint.start()
        let bound = try #require(endpoint.boundEndpoint)
        let port = try #require(UInt16(bound.split(separator: ":").last ?? ""))
        return (endpoint, port)
    }

    static func scrape(_ port: UInt16, _ request: String = "GET /metrics HTTP/1.1\r\n\r\n") -> Task<HTTPResponse, any Error> {
        Task { try await onThread { try HTTPResponse(TestHTTPClient.exchange(port: port, request)) } }
    }

    @Test func scrapesArrivingWhileTheTextRendersWaitForThatOneRenderingAndOthersAreServedMeanwhile() async throws {
        let gate = Gate()
        let calls = CallCounter()
        let (endpoint, port) = try Self.startedHeld(at: gate, calls: calls)
        defer { endpoint.stop() }
        let scrapes = [Self.scrape(port), Self.scrape(port, "HEAD /metrics HTTP/1.1\r\n\r\n"), Self.scrape(port)]
        #expect(try await eventually { endpoint.awaitingText == 3 })
        // The endpoint's thread is not held by the rendering: another path is answered now.
        let index = try await Self.scrape(port, "GET / HTTP/1.1\r\n\r\n").value
        #expect(index.status == 200 && index.body == Array("Metrics are at /metrics\n".utf8))
        #expect(endpoint.awaitingText == 3)
        gate.open()
        var replies: [HTTPResponse] = []
        for scrape in scrapes { replies.append(try await scrape.value) }
        #expect(replies.map(\.status) == [200, 200, 200])
        #expect(replies[0].body == Array(Self.metrics.utf8) && replies[2].body == Array(Self.metrics.utf8))
        #expect(replies[1].body.isEmpty && replies[1].headers["content-length"] == String(Self.metrics.utf8.count))
        #expect(calls.value == 1)
        #expect(try await eventually { endpoint.awaitingText == 0 })
    }

    @Test func beyondMaxConnectionsWaitingForTheTextAScrapeGets503() async throws {
        let gate = Gate()
        let (endpoint, port) = try Self.startedHeld(at: gate, maxConnections: 2)
        defer { endpoint.stop() }
        let waiting = [Self.scrape(port), Self.scrape(port)]
        #expect(try await eventually { endpoint.awaitingText == 2 })
        let refused = try await Self.scrape(port).value
        #expect(refused.status == 503 && refused.body == Array("503 Service Unavailable\n".utf8))
        gate.open()
        for scrape in waiting { #expect(try await scrape.value.status == 200) }
    }

    @Test func stopWhileTheTextRendersClosesTheWaitingScrapesAndReturns() async throws {
        let gate = Gate()
        let (endpoint, port) = try Self.startedHeld(at: gate)
        let reply = try await onThread {
            let client = try TestHTTPClient(port: port)
            try client.write(Array("GET /metrics HTTP/1.1\r\n\r\n".utf8))
            let deadline = ContinuousClock.now + .seconds(30)
            // The scrape waits for the text, and the rendering has reached the gate.
            while (endpoint.awaitingText < 1 || gate.waiting < 1) && ContinuousClock.now < deadline { usleep(1000) }
            endpoint.stop()
            return try client.readToEnd()
        }
        // Closed without a reply; the rendering still waiting at the gate did not hold the stop.
        #expect(reply.isEmpty)
        #expect(gate.waiting == 1)
        gate.open()
    }
}
