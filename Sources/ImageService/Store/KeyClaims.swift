import Locking

/// Keys being stored or deleted: one put at a time per key, deletes after the puts they meet.
///
/// Every write of a key (a put, an upload's commit, a thumbnail batch, a delete) happens under
/// its claim, so no other write can slip in between a look at the index and the rename or unlink.
final class KeyClaims: Sendable {
    enum Holder { case put, delete }

    /// Who holds which key, and who waits for it.
    private struct State {
        var held: [String: Holder] = [:]
        var waiters: [String: [CheckedContinuation<Void, Never>]] = [:]
    }

    private let state = Locked(State())

    /// Claims `key` for a put or commit: ABORTED while another put holds it; waits while a
    /// delete holds it (the put then runs after the delete, as if it had arrived later).
    ///
    /// A put never waits while it holds a claim, and deletes take theirs in key order, so no
    /// two claimants can wait for each other.
    func claim(_ key: String) async throws {
        while true {
            let holder = state.withLock { state -> Holder? in
                if let holder = state.held[key] { return holder }
                state.held[key] = .put
                return nil
            }
            switch holder {
            case nil: return
            case .put: throw ImageStoreError.aborted("another put of key \(key) is in progress; retry")
            case .delete: await waitForRelease(of: key)
            }
        }
    }

    /// Claims every key of `keys` for a delete, in key order, waiting for the puts and deletes
    /// that hold them.
    func claimForDelete(_ keys: Set<String>) async {
        for key in keys.sorted() {
            while !state.withLock({ state in
                guard state.held[key] == nil else { return false }
                state.held[key] = .delete
                return true
            }) {
                await waitForRelease(of: key)
            }
        }
    }

    /// Claims all of `keys` for a delete if none is held, without waiting; whether it did.
    func tryClaimForDelete(_ keys: Set<String>) -> Bool {
        state.withLock { state in
            guard keys.allSatisfy({ state.held[$0] == nil }) else { return false }
            for key in keys { state.held[key] = .delete }
            return true
        }
    }

    /// Lets `key` go and wakes the calls waiting for it.
    func release(_ key: String) {
        let waiters = state.withLock { state in
            state.held[key] = nil
            return state.waiters.removeValue(forKey: key) ?? []
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Calls waiting for the claim of `key` (tests).
    func waiters(_ key: String) -> Int { state.withLock { $0.waiters[key]?.count ?? 0 } }

    private func waitForRelease(of key: String) async {
        await withVisibleCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waiting = state.withLock { state -> Bool in
                guard state.held[key] != nil else { return false }
                state.waiters[key, default: []].append(continuation)
                return true
            }
            if !waiting { continuation.resume() }
        }
    }
}
