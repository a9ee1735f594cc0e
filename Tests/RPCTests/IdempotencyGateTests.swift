@testable import RPC
import Testing

/// The idempotency gate alone: which calls a key applies to, its length limit, and what a
/// lookup decides; it never claims or waits itself.
@Suite struct IdempotencyGateTests {
    static let gate = IdempotencyGate(maxKeyBytes: 8)
    static let method = "/homepwner.items.v1.ItemService/CreateItem"

    @Test func readsAndCallsWithoutAKeyHoldNone() {
        var cache = IdempotencyCache()
        #expect(Self.gate.decide(method: Self.method, idempotencyKey: "k", mutating: false, now: 0, in: &cache) == .none)
        #expect(Self.gate.decide(method: Self.method, idempotencyKey: "", mutating: true, now: 0, in: &cache) == .none)
        // A read's over-long key is not even checked.
        #expect(Self.gate.decide(method: Self.method, idempotencyKey: "123456789", mutating: false, now: 0, in: &cache) == .none)
    }

    @Test func aKeyLongerThanTheLimitIsRefused() {
        var cache = IdempotencyCache()
        #expect(Self.gate.decide(method: Self.method, idempotencyKey: "12345678", mutating: true, now: 0, in: &cache)
            == .claim(key: Self.method + "\u{0}12345678"))
        #expect(Self.gate.decide(method: Self.method, idempotencyKey: "123456789", mutating: true, now: 0, in: &cache)
            == .refuse(message: "idempotency_key is 9 bytes; at most 8 are accepted (a UUID is 36)"))
        // Counted in UTF-8 bytes, not characters.
        #expect(Self.gate.decide(method: Self.method, idempotencyKey: "ééééé", mutating: true, now: 0, in: &cache)
            == .refuse(message: "idempotency_key is 10 bytes; at most 8 are accepted (a UUID is 36)"))
    }

    @Test func theCacheKeyIsTheMethodAndTheKey() {
        #expect(IdempotencyGate.cacheKey(method: "/a/B", idempotencyKey: "k") == "/a/B\u{0}k")
        var cache = IdempotencyCache()
        cache.claim(key: IdempotencyGate.cacheKey(method: "/a/B", idempotencyKey: "k"))
        // The same key sent to another method names another call.
        #expect(Self.gate.decide(method: "/a/C", idempotencyKey: "k", mutating: true, now: 0, in: &cache) == .claim(key: "/a/C\u{0}k"))
    }

    @Test func aLookupClaimsWaitsOrReplaysWithoutChangingTheCache() {
        var cache = IdempotencyCache(capacity: 10, timeToLiveMilliseconds: 100, maxBytes: 1 << 20)
        let key = IdempotencyGate.cacheKey(method: Self.method, idempotencyKey: "order-7")
        #expect(Self.gate.decide(method: Self.method, idempotencyKey: "order-7", mutating: true, now: 0, in: &cache) == .claim(key: key))
        #expect(cache.count == 0)  // deciding claims nothing: the call claims once admitted

        cache.claim(key: key)
        #expect(Self.gate.decide(method: Self.method, idempotencyKey: "order-7", mutating: true, now: 0, in: &cache) == .wait(key: key))
        #expect(cache.waiterCount == 0)
        #expect(IdempotencyGate.Decision.wait(key: key).waits && !IdempotencyGate.Decision.claim(key: key).waits)

        let outcome = IdempotencyCache.Outcome(code: 0, message: "", body: .empty)
        _ = cache.finish(key: key, outcome: outcome, keep: true, now: 10)
        #expect(Self.gate.decide(method: Self.method, idempotencyKey: "order-7", mutating: true, now: 50, in: &cache) == .replay(outcome))
        // Past its time the answer is forgotten, and the next call runs again.
        #expect(Self.gate.decide(method: Self.method, idempotencyKey: "order-7", mutating: true, now: 200, in: &cache) == .claim(key: key))
        #expect(cache.count == 0)
    }
}
