import Proto
@testable import RPC
import Testing

/// The admission limits alone: each refusal, its message, and the boundaries of each limit.
@Suite struct AdmissionLimitsTests {
    static let limits = AdmissionLimits(
        processName: "item-service", maxInFlight: 8, maxInFlightPerPeer: 2, maxInFlightBytes: 1000, maxInFlightBytesPerPeer: 400)

    @Test func drainingRefusesAllButInlineCalls() {
        let refusal = Self.limits.stopping(draining: true, inline: false)
        #expect(refusal == AdmissionLimits.Refusal(
            code: .unavailable, message: "item-service is stopping and takes no new calls; retry later",
            retryAfterMilliseconds: 0, busy: false))
        #expect(Self.limits.stopping(draining: true, inline: true) == nil)
        #expect(Self.limits.stopping(draining: false, inline: false) == nil)
        // Draining comes first, whatever the load.
        #expect(Self.limits.admit(.init(calls: 8), requestBytes: 1, draining: true, inline: false)?.code == .unavailable)
        // An inline call while draining is still held to the limits.
        #expect(Self.limits.admit(.init(calls: 8), requestBytes: 1, draining: true, inline: true)?.code == .resourceExhausted)
    }

    @Test func callsInAllAreBoundedAtTheLimit() {
        #expect(Self.limits.capacity(.init(calls: 7), requestBytes: 10) == nil)
        let refusal = Self.limits.capacity(.init(calls: 8), requestBytes: 10)
        #expect(refusal == AdmissionLimits.Refusal(
            code: .resourceExhausted, message: "server busy: 8 calls in flight", retryAfterMilliseconds: 50, busy: true))
        // A waiter on a running key counts against it too.
        #expect(Self.limits.capacity(.init(calls: 8), requestBytes: 0, waiting: true)?.message == "server busy: 8 calls in flight")
    }

    @Test func bytesInAllAreBoundedButTheFirstCallIsAlwaysAdmitted() {
        #expect(Self.limits.capacity(.init(calls: 1, bytes: 600), requestBytes: 400) == nil)  // equal to the limit
        let refusal = Self.limits.capacity(.init(calls: 1, bytes: 600), requestBytes: 401)
        #expect(refusal == AdmissionLimits.Refusal(
            code: .resourceExhausted,
            message: "server busy: 600 bytes of requests in flight; this one (401 bytes) would pass the limit of 1000",
            retryAfterMilliseconds: 50, busy: true))
        // Nothing in flight: admitted however large, else it could never run.
        #expect(Self.limits.capacity(.init(), requestBytes: 1_000_000) == nil)
    }

    @Test func onePeersCallsAreBoundedAtItsShare() {
        #expect(Self.limits.capacity(.init(calls: 2, peerCalls: 1), requestBytes: 0) == nil)
        let refusal = Self.limits.capacity(.init(calls: 2, peerCalls: 2), requestBytes: 0)
        #expect(refusal == AdmissionLimits.Refusal(
            code: .resourceExhausted,
            message: "this client has 2 calls in flight, the most one peer may have (2 of 8); retry once some have finished",
            retryAfterMilliseconds: 50, busy: true))
    }

    @Test func onePeersBytesAreBoundedButItsFirstCallIsAlwaysAdmitted() {
        let load = AdmissionLimits.Load(calls: 1, bytes: 300, peerCalls: 1, peerBytes: 300)
        #expect(Self.limits.capacity(load, requestBytes: 100) == nil)  // equal to the limit
        let refusal = Self.limits.capacity(load, requestBytes: 101)
        #expect(refusal == AdmissionLimits.Refusal(
            code: .resourceExhausted,
            message: "this client has 300 bytes of requests in flight; this one (101 bytes) would pass one peer's limit of 400",
            retryAfterMilliseconds: 50, busy: true))
        // Others' bytes in flight, none of this peer's: its call passes its share alone.
        #expect(Self.limits.capacity(.init(calls: 1, bytes: 100), requestBytes: 500) == nil)
    }

    @Test func aWaiterIsHeldOnlyToTheCallLimit() {
        let full = AdmissionLimits.Load(calls: 3, bytes: 999, peerCalls: 2, peerBytes: 399)
        #expect(Self.limits.capacity(full, requestBytes: 500, waiting: true) == nil)
        #expect(Self.limits.capacity(full, requestBytes: 500)?.message.hasPrefix("server busy: 999 bytes") == true)
    }

    @Test func limitsAreCheckedInOrder() {
        // Every limit passed: the total calls are named first, then total bytes, then the peer's calls.
        let everything = AdmissionLimits.Load(calls: 8, bytes: 999, peerCalls: 2, peerBytes: 399)
        #expect(Self.limits.capacity(everything, requestBytes: 500)?.message == "server busy: 8 calls in flight")
        var load = everything
        load.calls = 7
        #expect(Self.limits.capacity(load, requestBytes: 500)?.message.hasPrefix("server busy: 999 bytes") == true)
        load.bytes = 0
        #expect(Self.limits.capacity(load, requestBytes: 500)?.message.hasPrefix("this client has 2 calls") == true)
        load.peerCalls = 1
        #expect(Self.limits.capacity(load, requestBytes: 500)?.message.hasPrefix("this client has 399 bytes") == true)
    }

    @Test func theConfigurationsLimitsAreTaken() {
        let configuration = RPCServer.Configuration(
            endpoints: [], processName: "image-service", maxInFlight: 100, maxInFlightBytes: 4000,
            maxInFlightPerPeer: 10, maxInFlightBytesPerPeer: 2000)
        #expect(AdmissionLimits(configuration) == AdmissionLimits(
            processName: "image-service", maxInFlight: 100, maxInFlightPerPeer: 10, maxInFlightBytes: 4000,
            maxInFlightBytesPerPeer: 2000))
    }
}
