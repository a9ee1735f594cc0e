import Foundation
import Proto
import RPC
import Locking
import Synchronization

/// Every call of `homepwner-bench load`: its latency and status per method, the calls no reply
/// came for (hangs), the RESOURCE_EXHAUSTED answers without `retry_after_ms`, and a few
/// messages of each other non-OK status.
final class LoadRecorder: Sendable {
    struct Method {
        var milliseconds: [Float] = []
        var codes: [Int32: Int] = [:]
        /// Up to 3 distinct messages of each non-OK code.
        var messages: [Int32: [String]] = [:]
    }

    struct State {
        var methods: [String: Method] = [:]
        var hangs: [String] = []
        var missingRetryAfter: [String] = []
        var retryAfterHonoured = 0
        var capturesDone = 0
        var capturesDead: [String] = []
    }

    let state = Locked(State())
    let completed = Atomic<Int>(0)

    /// A call that ended in `code` (nil: OK) after `milliseconds`.
    func record(_ method: String, milliseconds: Double, error: RPCError?) {
        completed.add(1, ordering: .relaxed)
        state.withLock { state in
            let code = error?.code.rawValue ?? 0
            state.methods[method, default: Method()].milliseconds.append(Float(milliseconds))
            state.methods[method]!.codes[code, default: 0] += 1
            guard let error else { return }
            if LoadRecorder.isHang(error) { state.hangs.append("\(method): \(error.message)") }
            if error.code == .resourceExhausted, error.retryAfterMilliseconds == 0 {
                state.missingRetryAfter.append("\(method): \(error.message)")
            }
            var seen = state.methods[method]!.messages[code, default: []]
            let text = String(error.message.prefix(240))
            if seen.count < 3, !seen.contains(text) {
                seen.append(text)
                state.methods[method]!.messages[code] = seen
            }
        }
    }

    func captureFinished(dead: Bool, error: String) {
        state.withLock { state in
            if dead { state.capturesDead.append(error) } else { state.capturesDone += 1 }
        }
    }

    func honouredRetryAfter() { state.withLock { $0.retryAfterHonoured += 1 } }

    /// The client gave up waiting: no reply, not even the server's DEADLINE_EXCEEDED, within
    /// the call's timeout and the grace after it (RPCClient's local timeout).
    static func isHang(_ error: RPCError) -> Bool {
        error.code == .deadlineExceeded && error.message.contains("got no reply from")
    }

    static func codeName(_ code: Int32) -> String {
        StatusCode.protoValueNames[code] ?? "CODE_\(code)"
    }

    /// Per method, sorted by name: calls, p50, p99, max (ms) and the count of each code.
    struct Row {
        let method: String
        let calls: Int
        let p50: Double, p99: Double, max: Double
        let codes: [Int32: Int]
        let messages: [Int32: [String]]
    }

    func rows() -> [Row] {
        state.withLock { state in
            state.methods.keys.sorted().map { name in
                let method = state.methods[name]!
                let sorted = method.milliseconds.sorted()
                func quantile(_ q: Double) -> Double {
                    sorted.isEmpty ? 0 : Double(sorted[min(sorted.count - 1, Int((Double(sorted.count) * q).rounded(.down)))])
                }
                return Row(
                    method: name, calls: sorted.count, p50: quantile(0.5), p99: quantile(0.99), max: Double(sorted.last ?? 0),
                    codes: method.codes, messages: method.messages)
            }
        }
    }
}
