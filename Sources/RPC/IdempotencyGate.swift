/// The idempotency layer of admission: what a mutating call's idempotency key makes of it, decided
/// over the server's `IdempotencyCache` before the capacity limits are checked. It only looks the
/// key up; the call claims the key (or waits on it) after the limits admit it, so a call refused
/// holds nothing and its retry with the same key runs.
struct IdempotencyGate: Sendable, Equatable {
    /// The longest key accepted, in UTF-8 bytes.
    var maxKeyBytes: Int

    /// What the key makes of a call.
    enum Decision: Sendable, Equatable {
        /// No key applies (a read, or no key sent): the call runs holding none.
        case none
        /// The key is too long: INVALID_ARGUMENT with this message.
        case refuse(message: String)
        /// A call with the key finished before: its answer is sent again, admitted or not.
        case replay(IdempotencyCache.Outcome)
        /// A call with the key is running: this one waits for its answer, if the call limit allows.
        case wait(key: String)
        /// The key is unknown: this call claims it once admitted, and runs.
        case claim(key: String)

        /// Whether the call only waits: it holds no bytes, so only the call limit applies.
        var waits: Bool {
            if case .wait = self { true } else { false }
        }
    }

    /// The cache's key: the same idempotency key sent to two methods names two calls.
    static func cacheKey(method: String, idempotencyKey: String) -> String {
        method + "\u{0}" + idempotencyKey
    }

    /// Checks the key's length and looks it up (which forgets a finished entry past its time).
    func decide(
        method: String, idempotencyKey: String, mutating: Bool, now: Int64, in cache: inout IdempotencyCache
    ) -> Decision {
        guard mutating && !idempotencyKey.isEmpty else { return .none }
        let keyBytes = idempotencyKey.utf8.count
        guard keyBytes <= maxKeyBytes else {
            return .refuse(message: "idempotency_key is \(keyBytes) bytes; at most \(maxKeyBytes) are accepted (a UUID is 36)")
        }
        let key = Self.cacheKey(method: method, idempotencyKey: idempotencyKey)
        switch cache.lookup(key: key, now: now) {
        case let .done(outcome): return .replay(outcome)
        case .running: return .wait(key: key)
        case .absent: return .claim(key: key)
        }
    }
}
