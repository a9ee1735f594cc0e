import Foundation
import Proto
@testable import RPC
import Runtime
import Testing
import ZMQ
import RPCTestSupport

/// An idempotency key is claimed only by a call that runs, and every way a call ends frees it;
/// what the cache keeps is bounded.
@Suite struct IdempotencyAdmissionTests {
    static let createPath = ItemServiceRPC.createItem.path

    @Test func busyRefusalLeavesTheKeyFreeSoTheRetryRuns() async throws {
        let gate = Gate()
        let calls = CallCounter()
        let server = try gatedServer(gate, calls: calls) { $0.maxInFlight = 1 }
        defer { server.stop() }
        let client = try RPCClient(context: testContext, endpoint: server.boundEndpoints[0])
        defer { client.close() }
        async let blocked = client.call(
            ItemServiceRPC.getItem, getItem("gate"), options: .init(timeoutMilliseconds: 30_000, retry: .none))
        try await gate.waitUntilWaiting(1)

        let keyed = CallOptions(timeoutMilliseconds: 20_000, idempotencyKey: "order-7", retry: .none)
        let busy = await rpcError { try await client.call(ItemServiceRPC.createItem, createItem("Rusty Spork"), options: keyed) }
        #expect(busy?.code == .resourceExhausted)
        #expect((busy?.retryAfterMilliseconds ?? 0) > 0)
        gate.open()
        _ = try await blocked
        // The retry with the same key runs (it used to wait for a "running" key no call would finish).
        let retried = await rpcError { try await client.call(ItemServiceRPC.createItem, createItem("Rusty Spork"), options: keyed) }
        #expect(retried == nil)
        #expect(calls.value == 1)
    }

    @Test func requestBytesInFlightAreBoundedAndTheRefusalLeavesTheKeyFree() async throws {
        let gate = Gate()
        let calls = CallCounter()
        let server = try gatedServer(gate, calls: calls) { $0.maxInFlightBytes = 1 << 20 }
        defer { server.stop() }
        let client = try RPCClient(context: testContext, endpoint: server.boundEndpoints[0])
        defer { client.close() }
        // Alone, a body over the budget is admitted: the budget never blocks a call for good.
        let alone = String(repeating: "x", count: 1_500_000)
        #expect(try await client.call(ItemServiceRPC.createItem, createItem(alone)).name.count == alone.count)

        async let blocked = client.call(
            ItemServiceRPC.getItem, getItem("gate" + String(repeating: "p", count: 700_000)),
            options: .init(timeoutMilliseconds: 30_000, retry: .none))
        try await gate.waitUntilWaiting(1)
        #expect(server.stats.inFlightBytes > 700_000)

        let keyed = CallOptions(timeoutMilliseconds: 20_000, idempotencyKey: "big-1", retry: .none)
        let big = createItem(String(repeating: "y", count: 400_000))
        let busy = await rpcError { try await client.call(ItemServiceRPC.createItem, big, options: keyed) }
        #expect(busy?.code == .resourceExhausted)
        #expect((busy?.retryAfterMilliseconds ?? 0) > 0)
        #expect(busy?.message.contains("bytes of requests in flight") == true)
        #expect(busy?.message.contains("limit of 1048576") == true)
        #expect(calls.value == 1)

        gate.open()
        _ = try await blocked
        #expect(server.stats.inFlightBytes == 0)
        let retried = await rpcError { try await client.call(ItemServiceRPC.createItem, big, options: keyed) }
        #expect(retried == nil)
        #expect(calls.value == 2)
    }

    @Test func retryWaitingOnARunningKeyIsAnsweredAtItsOwnDeadlineAndLaterGetsTheRealOutcome() async throws {
        let gate = Gate()
        let calls = CallCounter()
        let server = try gatedServer(gate, calls: calls)
        defer { server.stop() }
        let peer = try RawPeer(.dealer, endpoint: server.boundEndpoints[0])
        let body = createItem("gate: stuck in a store").serializedBytes()
        // Long enough for its handler to start on a loaded machine (a call whose task starts
        // past its deadline is refused before it runs, and leaves no running key to wait on).
        try peer.send([[], requestHeader(Self.createPath, id: 1, timeout: 2000, key: "k-1"), body])
        #expect(try await eventually { gate.waitingCount == 1 })
        let (first, _) = try #require(try await peer.receiveHeader())
        #expect(first.requestId == 1 && first.code == StatusCode.deadlineExceeded.rawValue)

        // The handler still runs: a retry waits for it, but no longer than its own deadline.
        try peer.send([[], requestHeader(Self.createPath, id: 2, timeout: 300, key: "k-1"), body])
        let (waited, _) = try #require(try await peer.receiveHeader())
        #expect(waited.requestId == 2 && waited.code == StatusCode.deadlineExceeded.rawValue)
        #expect(waited.message == "deadline of \(Self.createPath) passed while waiting for the first call with this idempotency key, which is still running")

        gate.open()
        #expect(try await eventually { server.stats.inFlight == 0 })
        // The first call's real outcome is what the key now answers; the handler ran once.
        try peer.send([[], requestHeader(Self.createPath, id: 3, timeout: 5000, key: "k-1"), body])
        let (replayed, frames) = try #require(try await peer.receiveHeader())
        #expect(replayed.requestId == 3 && replayed.code == 0)
        #expect(try Item(serializedBytes: frames[2]).name == "gate: stuck in a store")
        #expect(calls.value == 1)
    }

    @Test func stopAnswersTheCallInFlightAndItsWaitingRetryUnavailable() async throws {
        let gate = Gate()
        defer { gate.open() }
        let server = try gatedServer(gate, calls: CallCounter())
        let peer = try RawPeer(.dealer, endpoint: server.boundEndpoints[0])
        let body = createItem("gate").serializedBytes()
        try peer.send([[], requestHeader(Self.createPath, id: 1, timeout: 30_000, key: "k-2"), body])
        try await gate.waitUntilWaiting(1)
        try peer.send([[], requestHeader(Self.createPath, id: 2, timeout: 30_000, key: "k-2"), body])
        #expect(try await eventually { server.stats.replayed == 1 })
        server.stop()
        var answers: [UInt64: ResponseHeader] = [:]
        for _ in 0..<2 {
            let (header, _) = try #require(try await peer.receiveHeader())
            answers[header.requestId] = header
        }
        #expect(answers[1]?.code == StatusCode.unavailable.rawValue)
        #expect(answers[1]?.message == "test-server stopped before \(Self.createPath) finished; it may have run")
        #expect(answers[2]?.code == StatusCode.unavailable.rawValue)
    }

    @Test func anAbortedCallIsNotReplayedSoItsRetryWithTheSameKeyRuns() async throws {
        // ABORTED applies nothing (another call on the same image key was first): the first
        // attempt is refused, the retry with the same key must run and succeed.
        let server = try RPCServer(
            context: testContext, configuration: .init(endpoints: [uniqueEndpoint()], processName: "test-server"),
            logger: testLogger)
        let calls = CallCounter()
        server.register(ItemServiceRPC.createItem) { request, _ in
            calls.increment()
            if calls.value == 1 { throw RPCError.aborted("another put of key k is in progress; retry") }
            var item = Item()
            item.name = request.name
            return item
        }
        try server.start()
        defer { server.stop() }
        let client = try RPCClient(context: testContext, endpoint: server.boundEndpoints[0])
        defer { client.close() }
        let keyed = CallOptions(timeoutMilliseconds: 10_000, idempotencyKey: "put-k-1", retry: .none)
        let first = await rpcError { try await client.call(ItemServiceRPC.createItem, createItem("Spork"), options: keyed) }
        #expect(first?.code == .aborted)
        let retried = try await client.call(ItemServiceRPC.createItem, createItem("Spork"), options: keyed)
        #expect(retried.name == "Spork")
        #expect(calls.value == 2)
        // A final outcome is still replayed: a third call runs nothing.
        _ = try await client.call(ItemServiceRPC.createItem, createItem("Spork"), options: keyed)
        #expect(calls.value == 2)
    }

    @Test func idempotencyKeyOverTheLimitIsInvalidArgumentNamingIt() async throws {
        let calls = CallCounter()
        let server = try gatedServer(Gate(), calls: calls)
        defer { server.stop() }
        let peer = try RawPeer(.dealer, endpoint: server.boundEndpoints[0])
        let body = createItem("Shiny Mac").serializedBytes()
        try peer.send([[], requestHeader(Self.createPath, id: 1, key: String(repeating: "k", count: 129)), body])
        let (refused, _) = try #require(try await peer.receiveHeader())
        #expect(refused.requestId == 1 && refused.code == StatusCode.invalidArgument.rawValue)
        #expect(refused.message == "idempotency_key is 129 bytes; at most 128 are accepted (a UUID is 36)")
        #expect(calls.value == 0)
        try peer.send([[], requestHeader(Self.createPath, id: 2, key: String(repeating: "k", count: 128)), body])
        let (accepted, _) = try #require(try await peer.receiveHeader())
        #expect(accepted.requestId == 2 && accepted.code == 0)
        // Read-only methods ignore the key, long or not.
        try peer.send([[], requestHeader(ItemServiceRPC.getItem.path, id: 3, key: String(repeating: "k", count: 1000)), []])
        let (read, _) = try #require(try await peer.receiveHeader())
        #expect(read.requestId == 3 && read.code == 0)
    }

    @Test func rememberedRepliesAreBoundedInBytesOldestFirst() async throws {
        let calls = CallCounter()
        let server = try gatedServer(Gate(), calls: calls) { $0.idempotencyMaxBytes = 20_000 }
        defer { server.stop() }
        let client = try RPCClient(context: testContext, endpoint: server.boundEndpoints[0])
        defer { client.close() }
        // Ten replies of about 4 KB: only the newest four or so fit in 20,000 bytes.
        let request = createItem(String(repeating: "n", count: 4000))
        for i in 0..<10 {
            _ = try await client.call(ItemServiceRPC.createItem, request, options: .init(idempotencyKey: "key-\(i)"))
        }
        #expect(calls.value == 10)
        _ = try await client.call(ItemServiceRPC.createItem, request, options: .init(idempotencyKey: "key-9"))
        #expect(calls.value == 10)  // replayed
        _ = try await client.call(ItemServiceRPC.createItem, request, options: .init(idempotencyKey: "key-0"))
        #expect(calls.value == 11)  // evicted: it ran again
    }
}

/// The cache as a state machine, without sockets.
struct IdempotencyCacheTests {
    func outcome(_ bytes: Int) -> IdempotencyCache.Outcome {
        .init(code: 0, message: "", body: MessageBody(bytes: [UInt8](repeating: 1, count: bytes)))
    }

    @Test func keptBytesStayWithinTheLimitEvictingTheOldestButNeverTheNewest() {
        var cache = IdempotencyCache(capacity: 100, timeToLiveMilliseconds: 60_000, maxBytes: 10_000)
        for i in 0..<20 {
            #expect(cache.lookup(key: "k\(i)", now: 0) == .absent)
            cache.claim(key: "k\(i)")
            _ = cache.finish(key: "k\(i)", outcome: outcome(1000), keep: true, now: 0)
            #expect(cache.storedBytes <= 10_000)
        }
        #expect(cache.lookup(key: "k0", now: 1) == .absent)
        #expect(cache.lookup(key: "k19", now: 1) == .done(outcome(1000)))
        #expect(cache.doneCount == 9)  // 9 × (1000 + 3 + 64) ≤ 10,000 < 10 × …

        // One outcome larger than the whole budget is still kept (alone): its retry must not run again.
        cache.claim(key: "huge")
        _ = cache.finish(key: "huge", outcome: outcome(50_000), keep: true, now: 2)
        #expect(cache.lookup(key: "huge", now: 3) == .done(outcome(50_000)))
        #expect(cache.doneCount == 1)
    }

    @Test func aKeyFinishedAgainIsEvictedByItsNewerPlace() {
        var cache = IdempotencyCache(capacity: 2, timeToLiveMilliseconds: 10, maxBytes: 1 << 20)
        cache.claim(key: "a")
        _ = cache.finish(key: "a", outcome: outcome(1), keep: true, now: 0)
        cache.claim(key: "x")
        _ = cache.finish(key: "x", outcome: outcome(1), keep: true, now: 5)
        // "a" expired, then ran and finished again: it is now newer than "x".
        #expect(cache.lookup(key: "a", now: 12) == .absent)
        cache.claim(key: "a")
        _ = cache.finish(key: "a", outcome: outcome(1), keep: true, now: 12)
        // A third entry over the capacity of 2 evicts the oldest, "x": not "a" by its first place.
        cache.claim(key: "y")
        _ = cache.finish(key: "y", outcome: outcome(1), keep: true, now: 13)
        #expect(cache.lookup(key: "a", now: 14) == .done(outcome(1)))
        #expect(cache.lookup(key: "x", now: 14) == .absent)
        #expect(cache.lookup(key: "y", now: 14) == .done(outcome(1)))
        #expect(cache.doneCount == 2)
    }

    @Test func waitersLeaveAtTheirOwnDeadlineAndAtStop() {
        var cache = IdempotencyCache()
        cache.claim(key: "k")
        cache.wait(key: "k", .init(identity: [[1]], requestID: 1, deadline: 100))
        cache.wait(key: "k", .init(identity: [[2]], requestID: 2, deadline: 300))
        #expect(cache.waiterCount == 2)
        #expect(cache.expireWaiters(now: 200).map { $0.waiter.requestID } == [1])
        #expect(cache.lookup(key: "k", now: 200) == .running)
        #expect(cache.takeWaiters().map { $0.waiter.requestID } == [2])
        #expect(cache.waiterCount == 0)
        // The key stays running until its call finishes.
        #expect(cache.lookup(key: "k", now: 200) == .running)
        _ = cache.finish(key: "k", outcome: outcome(1), keep: false, now: 300)
        #expect(cache.lookup(key: "k", now: 300) == .absent)
    }
}
