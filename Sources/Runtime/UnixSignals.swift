#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Delivers Unix signals as an `AsyncStream`, built on Dispatch signal sources.
public enum UnixSignals {
    /// Returns a stream yielding each of `signals` as it arrives.
    ///
    /// The signals' default action is ignored (`SIG_IGN`) so they no longer terminate the process,
    /// and every source is registered before this returns, so a signal sent afterwards is delivered.
    /// The sources are cancelled when the stream terminates (the consuming task is cancelled or stops
    /// iterating); a stream for no signals finishes immediately.
    ///
    /// - Parameter signals: Signal numbers such as `SIGTERM`; duplicates are ignored.
    /// - Returns: A stream of the delivered signal numbers.
    public static func stream(_ signals: [Int32]) -> AsyncStream<Int32> {
        let (stream, continuation) = AsyncStream<Int32>.makeStream()
        guard !signals.isEmpty else {
            continuation.finish()
            return stream
        }
        let subscription = SignalSubscription(signals: signals) { continuation.yield($0) }
        continuation.onTermination = { _ in subscription.cancel() }
        return stream
    }

    /// A readable name for `number`: `"SIGTERM"`, `"SIGINT"`, … or `"signal 42"`.
    static func name(of number: Int32) -> String {
        switch number {
        case SIGTERM: "SIGTERM"
        case SIGINT: "SIGINT"
        case SIGHUP: "SIGHUP"
        case SIGQUIT: "SIGQUIT"
        case SIGUSR1: "SIGUSR1"
        case SIGUSR2: "SIGUSR2"
        default: "signal \(number)"
        }
    }
}
