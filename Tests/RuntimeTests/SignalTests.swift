#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Locking
import Testing
@testable import Runtime

/// Tests that raise real signals. They use SIGUSR1/SIGUSR2 only (never SIGTERM/SIGINT, which would
/// reach the test runner) and run one at a time so each signal reaches only the test that sent it.
@Suite("Unix signals", .serialized)
struct SignalTests {
    let probe = Probe()
    let collector = LogCollector()
    var logger: Logger { Logger(label: "test", level: .debug, sink: .collecting(collector)) }

    @Test func streamYieldsARaisedSignal() async throws {
        let signals = UnixSignals.stream([SIGUSR2])
        let received = try await withThrowingTaskGroup(of: Int32?.self) { tasks in
            tasks.addTask {
                for await number in signals { return number }
                return nil
            }
            tasks.addTask {
                try await Task.sleep(for: .seconds(10))
                throw TimedOut(description: "no signal on the stream")
            }
            kill(getpid(), SIGUSR2)
            let first = try await tasks.next()!
            tasks.cancelAll()
            return first
        }
        #expect(received == SIGUSR2)
    }

    @Test func streamForNoSignalsFinishesImmediately() async {
        var count = 0
        for await _ in UnixSignals.stream([]) { count += 1 }
        #expect(count == 0)
    }

    @Test func signalCancelsEveryServiceAndRunReturnsNormally() async throws {
        let group = ServiceGroup(
            services: [SleepingService(name: "a", probe: probe), SleepingService(name: "b", probe: probe)],
            logger: logger,
            signals: [SIGUSR1],
            forceExit: { _ in Issue.record("forced exit on a single signal") }
        )
        let error = try await runGroup(group) {
            try await probe.waitFor("a started", "b started")
            kill(getpid(), SIGUSR1)
        }
        #expect(error == nil)
        #expect(Set(probe.events) == ["a started", "b started", "a stopped", "b stopped"])
        #expect(collector.lines.contains { $0.hasSuffix("notice test: received SIGUSR1; shutting down signal=SIGUSR1") })
    }

    @Test func secondSignalDuringShutdownForcesExitWithStatus130() async throws {
        let gate = Gate()
        let exitStatuses = Locked<[Int32]>([])
        let group = ServiceGroup(
            services: [StubbornService(name: "stubborn", probe: probe, gate: gate)],
            logger: logger,
            signals: [SIGUSR2],
            forceExit: { status in
                exitStatuses.withLock { $0.append(status) }
                gate.open()
            }
        )
        let error = try await runGroup(group, releasing: gate) {
            try await probe.waitFor("stubborn started")
            kill(getpid(), SIGUSR2)
            try await probe.waitFor("stubborn cancelled")
            #expect(exitStatuses.withLock { $0 }.isEmpty)
            kill(getpid(), SIGUSR2)
        }
        #expect(error == nil)
        #expect(exitStatuses.withLock { $0 } == [130])
        #expect(collector.lines.contains {
            $0.hasSuffix("critical test: received SIGUSR2 while shutting down; exiting immediately signal=SIGUSR2 status=130")
        })
    }
}
