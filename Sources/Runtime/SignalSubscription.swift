#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@preconcurrency import Dispatch
import Locking

/// Dispatch signal sources delivering the given signals to a handler until ``cancel()``.
///
/// The initializer returns only once every source is registered, so a signal sent afterwards
/// is never missed.
final class SignalSubscription: Sendable {
    /// Serializes installation so two subscriptions never race on a signal's disposition.
    private static let installLock = Locked(())

    /// The live sources; emptied by ``cancel()``.
    private let sources: Locked<[any DispatchSourceSignal]>

    /// Starts delivering `signals` to `handler` on a private serial queue.
    ///
    /// - Parameters:
    ///   - signals: The signal numbers to watch; duplicates are ignored.
    ///   - handler: Called once per delivered signal, never concurrently with itself.
    init(signals: [Int32], handler: @escaping @Sendable (Int32) -> Void) {
        let queue = DispatchQueue(label: "homepwner.runtime.signals")
        var unique: [Int32] = []
        for number in signals where !unique.contains(number) { unique.append(number) }
        let created = Self.installLock.withLock { _ in
            unique.map { number in
                Self.ignoreDefaultAction(number)
                let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
                let registered = DispatchSemaphore(value: 0)
                source.setRegistrationHandler { registered.signal() }
                source.setEventHandler {
                    // Signals that arrive before the handler runs are merged into `data`.
                    for _ in 0..<max(1, source.data) { handler(number) }
                }
                source.resume()
                _ = registered.wait(timeout: .now() + .seconds(2))
                return source
            }
        }
        sources = Locked(created)
    }

    /// Stops delivery and releases the sources; idempotent.
    func cancel() {
        let cancelled = sources.withLock { sources in
            defer { sources = [] }
            return sources
        }
        for source in cancelled { source.cancel() }
    }

    /// Sets `SIG_IGN` for `number` if its disposition is still the default, so the signal never
    /// terminates the process while its source is being registered. A disposition already
    /// installed (by Dispatch, which on Linux routes signals to its signalfd through its own
    /// handler, or by the program) is left alone.
    private static func ignoreDefaultAction(_ number: Int32) {
        var current = sigaction()
        guard sigaction(number, nil, &current) == 0 else { return }
        #if canImport(Glibc)
        let isDefault = current.__sigaction_handler.sa_handler == nil && current.sa_flags & SA_SIGINFO == 0
        #else
        let isDefault = current.__sigaction_u.__sa_handler == nil && current.sa_flags & SA_SIGINFO == 0
        #endif
        if isDefault {
            _ = signal(number, SIG_IGN)
        }
    }
}
