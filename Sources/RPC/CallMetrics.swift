import Foundation
import Proto
import Runtime

/// The server's metrics layer: every answer it sends, whatever answered it (a handler, a refusal
/// by admission, roles or a deadline, a replay), is counted here under the method it named, its
/// status code and its latency since the request was read (Metrics/Stats, docs/protocol.md 8.1),
/// and at debug level logged as one line.
///
/// Called on the I/O thread only; ``snapshot()`` from any thread.
final class CallMetrics: Sendable {
    /// The table by method, code and latency.
    private let methods: MethodMetrics
    private let logger: Logger

    /// Rows for these method paths, and one ("") for requests that named none served here.
    init(paths: [String], logger: Logger) {
        methods = MethodMetrics(paths: paths)
        self.logger = logger
    }

    /// What the answer to a request is counted under: `method` (or "" when the request named
    /// none that is served), read at `arrived` (monotonic nanoseconds), `requestBytes` long.
    func tag(method: String, arrived: Int64, requestBytes: Int) -> CallTag {
        CallTag(row: methods.row(of: method), arrived: arrived, requestBytes: requestBytes)
    }

    /// Counts one answer as it is sent (`now`, monotonic nanoseconds) and logs it at debug level.
    func answered(_ code: StatusCode, replyBytes: Int, _ tag: CallTag, now: Int64 = monotonicNanoseconds()) {
        guard tag.row >= 0 else { return }
        let elapsed = max(0, now - tag.arrived)
        methods.record(row: tag.row, code: code, microseconds: UInt64(elapsed / 1000), requestBytes: tag.requestBytes, replyBytes: replyBytes)
        if logger.level <= .debug {
            let method = methods.paths[tag.row]
            logger.debug("request", [
                "method": method.isEmpty ? "-" : method, "code": code.description,
                "elapsed_ms": String(format: "%.3f", Double(elapsed) / 1e6),
                "request_bytes": String(tag.requestBytes), "reply_bytes": String(replyBytes),
            ])
        }
    }

    /// Every method's figures, in path order, then the "" row.
    func snapshot() -> [MethodStats] { methods.snapshot() }
}
