import Foundation
import Testing
@testable import Runtime

/// Thrown by ``FailingService``.
private enum Boom: Error, Equatable {
    case boom
}

@Suite("ServiceGroup")
struct ServiceGroupTests {
    let probe = Probe()
    let collector = LogCollector()
    var logger: Logger { Logger(label: "test", level: .debug, sink: .collecting(collector)) }

    @Test func triggerShutdownCancelsEveryServiceAndRunReturnsNormally() async throws {
        let group = ServiceGroup(
            services: [SleepingService(name: "a", probe: probe), SleepingService(name: "b", probe: probe)],
            logger: logger,
            signals: []
        )
        let error = try await runGroup(group) {
            try await probe.waitFor("a started", "b started")
            group.triggerShutdown()
        }
        #expect(error == nil)
        #expect(Set(probe.events) == ["a started", "b started", "a stopped", "b stopped"])
        #expect(collector.lines.contains { $0.hasSuffix("notice test: shutdown requested") })
        #expect(collector.lines.last?.hasSuffix("info test: all services stopped") == true)
    }

    @Test func throwingServiceCancelsTheOthersAndRunRethrowsItsError() async throws {
        let group = ServiceGroup(
            services: [
                SleepingService(name: "a", probe: probe),
                FailingService(name: "bad", probe: probe, delay: .milliseconds(20), error: Boom.boom),
                SleepingService(name: "c", probe: probe),
            ],
            logger: logger,
            signals: []
        )
        let error = try await runGroup(group)
        #expect(error as? Boom == .boom)
        #expect(probe.events.contains("a stopped"))
        #expect(probe.events.contains("c stopped"))
        #expect(collector.lines.contains { $0.contains("error test: service failed error=boom service=bad") })
    }

    @Test func runRethrowsOnlyAfterEveryServiceHasReturned() async throws {
        let gate = Gate()
        let group = ServiceGroup(
            services: [
                StubbornService(name: "slow", probe: probe, gate: gate),
                FailingService(name: "bad", probe: probe, delay: .zero, error: Boom.boom),
            ],
            logger: logger,
            signals: []
        )
        let error = try await runGroup(group, releasing: gate, recordingReturnIn: probe) {
            // The group has taken in the failure (the moment a group that did not wait would
            // rethrow it) and cancelled the slow one, which holds on until the gate opens.
            try await probe.waitFor("slow cancelled")
            let deadline = ContinuousClock.now + .seconds(30)
            while !collector.lines.contains(where: { $0.contains("service failed error=boom service=bad") }) {
                guard ContinuousClock.now < deadline else { throw Boom.boom }
                try await Task.sleep(for: .milliseconds(1))
            }
            probe.record("gate opened")
            gate.open()
        }
        #expect(error as? Boom == .boom)
        #expect(probe.events.suffix(3) == ["gate opened", "slow stopped", "run returned"], "\(probe.events)")
    }

    @Test func serviceReturningEarlyStopsTheOthersAndRunThrowsServiceReturnedEarly() async throws {
        let group = ServiceGroup(
            services: [SleepingService(name: "a", probe: probe), ReturningService(name: "quitter", probe: probe)],
            logger: logger,
            signals: []
        )
        let error = try await runGroup(group)
        #expect(error as? ServiceGroupError == .serviceReturnedEarly("quitter"))
        #expect(probe.events.contains("a stopped"))
    }

    @Test func cancellationErrorThrownDuringShutdownCountsAsGracefulStop() async throws {
        let group = ServiceGroup(services: [PropagatingService(name: "p", probe: probe)], logger: logger, signals: [])
        let error = try await runGroup(group) {
            try await probe.waitFor("p started")
            group.triggerShutdown()
        }
        #expect(error == nil)
    }

    @Test func triggerShutdownBeforeRunMakesRunStopAtOnce() async throws {
        let group = ServiceGroup(services: [SleepingService(name: "a", probe: probe)], logger: logger, signals: [])
        group.triggerShutdown()
        let error = try await runGroup(group)
        #expect(error == nil)
        #expect(!probe.events.contains("a slept through"))
    }

    @Test func cancellingTheTaskRunningTheGroupStopsServicesGracefully() async throws {
        let group = ServiceGroup(
            services: [SleepingService(name: "a", probe: probe), SleepingService(name: "b", probe: probe)],
            logger: logger,
            signals: []
        )
        let task = Task { try await group.run() }
        try await probe.waitFor("a started", "b started")
        task.cancel()
        try await probe.waitFor("a stopped", "b stopped")
        try await task.value
    }

    @Test func servicesStartInOrderAndStopInReverseOrderEachAfterTheOneAfterIt() async throws {
        let group = ServiceGroup(
            services: [
                RecordingLifecycleService(name: "store", probe: probe),
                SleepingService(name: "background", probe: probe),
                RecordingLifecycleService(name: "host", probe: probe),
            ],
            logger: logger,
            signals: []
        )
        let error = try await runGroup(group) {
            try await probe.waitFor("store started", "background started", "host started")
            group.triggerShutdown()
        }
        #expect(error == nil)
        #expect(probe.events.filter { $0.hasSuffix("stopped") } == ["host stopped", "background stopped", "store stopped"])
        #expect(probe.events.filter { $0.hasPrefix("store") || $0.hasPrefix("host") } == ["store started", "host started", "host stopped", "store stopped"])
    }

    @Test func failingStartStopsWhatStartedBeforeItAndStartsNothingAfter() async throws {
        let group = ServiceGroup(
            services: [
                RecordingLifecycleService(name: "store", probe: probe),
                RecordingLifecycleService(name: "bad", probe: probe, failure: Boom.boom),
                RecordingLifecycleService(name: "host", probe: probe),
            ],
            logger: logger,
            signals: []
        )
        let error = try await runGroup(group)
        #expect(error as? Boom == .boom)
        #expect(probe.events == ["store started", "bad stopped", "store stopped"])
        #expect(collector.lines.contains { $0.contains("error test: service failed error=boom service=bad") })
    }

    @Test func startAndStopRunOnAThreadOfTheirOwnSoAStopWaitingForThePoolNeverStarvesIt() async throws {
        // Twice as many services stopping at once as the shared pool has threads: a stop run on
        // a thread of the pool would hold it while it waits for a task of the pool.
        let names = (0..<2 * ProcessInfo.processInfo.activeProcessorCount).map { "pooled-\($0)" }
        let group = ServiceGroup(
            services: names.map { PoolNeedingLifecycleService(name: $0, probe: probe) }, logger: logger, signals: [])
        let error = try await runGroup(group) {
            try await probe.waitFor(names.map { "\($0) started on \($0)" })
            group.triggerShutdown()
        }
        #expect(error == nil)
        await withTaskGroup(of: Void.self) { tasks in
            for name in names {
                let service = PoolNeedingLifecycleService(name: "run-\(name)", probe: probe)
                tasks.addTask {
                    let running = Task { try await service.run() }
                    try? await probe.waitFor("\(service.name) started on \(service.name)")
                    running.cancel()
                    _ = await running.result
                }
            }
        }
        for name in names {
            #expect(probe.events.contains("\(name) stopped on \(name)"))
            #expect(probe.events.contains("run-\(name) stopped on run-\(name)"))
        }
    }

    @Test func emptyGroupReturnsImmediately() async throws {
        let error = try await runGroup(ServiceGroup(services: [], logger: logger, signals: []))
        #expect(error == nil)
    }
}

@Suite struct ServiceCompositionTests {
    let probe = Probe()

    @Test func startsInOrderAndStopsInReverseOrder() throws {
        let composition = ServiceComposition(["a", "b", "c"].map { RecordingLifecycleService(name: $0, probe: probe) })
        try composition.start()
        composition.stop()
        #expect(probe.events == ["a started", "b started", "c started", "c stopped", "b stopped", "a stopped"])
    }

    @Test func failingStartStopsItAndThoseStartedBeforeItThenRethrows() {
        let composition = ServiceComposition([
            RecordingLifecycleService(name: "a", probe: probe),
            RecordingLifecycleService(name: "bad", probe: probe, failure: Boom.boom),
            RecordingLifecycleService(name: "c", probe: probe),
        ])
        #expect(throws: Boom.boom) { try composition.start() }
        #expect(probe.events == ["a started", "bad stopped", "a stopped"])
    }
}
