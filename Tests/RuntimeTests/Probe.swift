import Foundation
import Locking
@testable import Runtime

/// Thrown when something a test waits for does not happen in time.
struct TimedOut: Error, CustomStringConvertible {
    /// What was awaited.
    var description: String
}

/// Records what test services did, and lets a test wait for it.
final class Probe: Sendable {
    /// The recorded events, in order.
    private let recorded = Locked<[String]>([])

    /// Every event so far.
    var events: [String] { recorded.withLock { $0 } }

    /// Records `event`.
    func record(_ event: String) {
        recorded.withLock { $0.append(event) }
    }

    /// Waits until every one of `expected` has been recorded (generous timeout: other test targets
    /// sharing the process can starve the cooperative pool for seconds).
    ///
    /// - Throws: ``TimedOut`` after `timeout`.
    func waitFor(_ expected: String..., timeout: Duration = .seconds(30)) async throws {
        try await waitFor(expected, timeout: timeout)
    }

    /// ``waitFor(_:timeout:)`` for a list.
    func waitFor(_ expected: [String], timeout: Duration = .seconds(30)) async throws {
        let deadline = ContinuousClock.now + timeout
        // Checked inside the lock: a copy read outside it races, for TSan, with the next append
        // in place once the copy is gone (the reference count that orders them is not seen).
        while !recorded.withLock({ Set(expected).isSubset(of: Set($0)) }) {
            guard ContinuousClock.now < deadline else {
                throw TimedOut(description: "waiting for \(expected); saw \(events)")
            }
            try await Task.sleep(for: .milliseconds(2))
        }
    }
}

/// Records "started", then sleeps until its task is cancelled and records "stopped".
struct SleepingService: Service {
    let name: String
    let probe: Probe

    func run() async throws {
        probe.record("\(name) started")
        do {
            try await Task.sleep(for: .seconds(60))
            probe.record("\(name) slept through")
        } catch {
            probe.record("\(name) stopped")
        }
    }
}

/// Records "started", waits `delay`, then throws `error`.
struct FailingService: Service {
    let name: String
    let probe: Probe
    let delay: Duration
    let error: any Error

    func run() async throws {
        probe.record("\(name) started")
        try? await Task.sleep(for: delay)
        throw error
    }
}

/// Records "started" and returns at once.
struct ReturningService: Service {
    let name: String
    let probe: Probe

    func run() async throws {
        probe.record("\(name) started")
    }
}

/// Lets cancellation propagate as `CancellationError`, as a naive service would.
struct PropagatingService: Service {
    let name: String
    let probe: Probe

    func run() async throws {
        probe.record("\(name) started")
        try await Task.sleep(for: .seconds(60))
    }
}

/// Records "started" and "stopped" from synchronous `start()`/`stop()`; a `failure` makes
/// `start()` throw it instead.
struct RecordingLifecycleService: LifecycleService {
    let name: String
    let probe: Probe
    var failure: (any Error)?

    func start() throws {
        if let failure { throw failure }
        probe.record("\(name) started")
    }

    func stop() {
        probe.record("\(name) stopped")
    }
}

/// A one-shot latch that async code can wait on.
final class Gate: Sendable {
    /// Whether the gate is open, and who is waiting for it.
    private let state = Locked<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// Opens the gate, releasing every waiter.
    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the gate is open (ignores cancellation).
    func wait() async {
        await withVisibleCheckedContinuation { continuation in
            let isOpen = state.withLock { state in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if isOpen { continuation.resume() }
        }
    }
}

/// Ignores cancellation (recording "cancelled") until `gate` opens, then records "stopped".
struct StubbornService: Service {
    let name: String
    let probe: Probe
    let gate: Gate

    func run() async throws {
        probe.record("\(name) started")
        await withTaskCancellationHandler {
            await gate.wait()
        } onCancel: {
            probe.record("\(name) cancelled")
        }
        probe.record("\(name) stopped")
    }
}

/// How ``runGroup(_:timeout:while:)`` saw the group end.
private enum Outcome: Sendable {
    /// `run()` returned (`nil`) or threw.
    case finished((any Error)?)
    /// `run()` did not return in time.
    case timedOut
}

/// Runs `group` while `body` acts on it and returns the error `run()` threw, or `nil`.
///
/// A task group waits for all its children before it returns or throws, so when `body` throws
/// or the time is up, `releasing` is opened: a ``StubbornService`` waiting on it then returns
/// and the test fails instead of hanging.
///
/// - Throws: ``TimedOut`` if `run()` has not returned within `timeout`; whatever `body` throws.
func runGroup(
    _ group: ServiceGroup,
    timeout: Duration = .seconds(30),
    releasing gate: Gate? = nil,
    recordingReturnIn returnProbe: Probe? = nil,
    while body: @Sendable () async throws -> Void = {}
) async throws -> (any Error)? {
    try await withThrowingTaskGroup(of: Outcome.self) { tasks in
        tasks.addTask {
            do {
                try await group.run()
                returnProbe?.record("run returned")
                return .finished(nil)
            } catch {
                returnProbe?.record("run returned")
                return .finished(error)
            }
        }
        tasks.addTask {
            try await Task.sleep(for: timeout)
            return .timedOut
        }
        do {
            try await body()
        } catch {
            gate?.open()
            throw error
        }
        let first = try await tasks.next()!
        tasks.cancelAll()
        switch first {
        case .finished(let error):
            return error
        case .timedOut:
            gate?.open()
            throw TimedOut(description: "ServiceGroup.run() did not return")
        }
    }
}

/// The calling thread's name as the kernel has it.
func kernelThreadName() -> String {
    ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "?").trimmingCharacters(in: .newlines)
}

/// Records on which thread it starts and stops; its `stop()` blocks until a task of the shared
/// pool has run (as a stop that waits for a drain does), for at most 10 seconds.
struct PoolNeedingLifecycleService: LifecycleService {
    let name: String
    let probe: Probe

    func start() throws {
        probe.record("\(name) started on \(kernelThreadName())")
    }

    func stop() {
        let ran = DispatchSemaphore(value: 0)
        Task.detached { ran.signal() }
        let waited = ran.wait(timeout: .now() + 10) == .success ? "" : " after waiting 10 s for the pool"
        probe.record("\(name) stopped on \(kernelThreadName())\(waited)")
    }
}
