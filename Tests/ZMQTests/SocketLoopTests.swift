import Foundation
import Testing
import TestSupport
import ZMQ

/// The one socket-owning thread every part runs on: real threads, real sockets.
@Suite struct SocketLoopTests {
    /// What the loop did, seen from the test's threads.
    struct Record: Sendable {
        var setUpThread = ""
        var turns = 0
        var wokenTurns = 0
        var received: [String] = []
        var drained = false
        var drainThread = ""
        var stopReturnedAtOnce: Bool?
    }

    /// Steps over one PULL socket bound at `endpoint`: each turn takes what arrived.
    final class PullSteps: SocketLoopSteps {
        let socket: Socket
        let index: Int
        let record: Shared<Record>
        let timeout: Int
        let drainDelay: UInt32
        /// Called at every turn on the loop thread, e.g. to stop the loop from inside.
        let onTurn: @Sendable () -> Void

        init(
            _ context: Context, _ endpoint: String, _ poller: Poller, record: Shared<Record>, timeout: Int = -1,
            drainDelay: UInt32 = 0, onTurn: @escaping @Sendable () -> Void = {}
        ) throws {
            socket = try Socket(context, .pull)
            try socket.bind(endpoint)
            index = poller.add(socket, events: .in)
            self.record = record
            self.timeout = timeout
            self.drainDelay = drainDelay
            self.onTurn = onTurn
            let name = threadName()
            record.withLock { $0.setUpThread = name }
        }

        func pollTimeout() -> Int? { timeout }

        func turn(_ polled: Poller?) -> Bool {
            let woken = polled?.revents(0).contains(.in) ?? false
            var texts: [String] = []
            while let message = try? socket.receive(dontWait: true) {
                texts.append(String(decoding: message.last ?? [], as: UTF8.self))
            }
            record.withLock {
                $0.turns += 1
                if woken { $0.wokenTurns += 1 }
                $0.received += texts
            }
            onTurn()
            return true
        }

        func drain() {
            // Slow on purpose: stop() must still wait for it.
            if drainDelay > 0 { usleep(drainDelay) }
            while let message = try? socket.receive(dontWait: true) {
                let text = String(decoding: message.last ?? [], as: UTF8.self)
                record.withLock { $0.received.append(text) }
            }
            socket.close()
            let name = threadName()
            record.withLock {
                $0.drained = true
                $0.drainThread = name
            }
        }
    }

    /// A name of at most 15 bytes, unique to the test (the kernel keeps 15).
    static func uniqueName(_ prefix: String) -> String {
        prefix + "-" + UUID().uuidString.prefix(15 - prefix.count - 1).lowercased()
    }

    @Test func setUpRunsOnTheLoopsThreadWhichCarriesItsNameForTheKernel() throws {
        let context = try Context()
        let name = Self.uniqueName("sl")
        let loop = try SocketLoop(name: name)
        let record = Shared(Record())
        let endpoint = uniqueInproc()
        try loop.start { poller in try PullSteps(context, endpoint, poller, record: record) }
        #expect(record.value.setUpThread == name)
        #expect(threadNames().contains(name))
        #expect(!loop.isLoopThread)
        loop.stop()
        #expect(record.value.drainThread == name)
        #expect(try eventuallyGone(name))
    }

    @Test func aSetUpErrorIsRethrownAndItsThreadHasEnded() throws {
        let context = try Context()
        let endpoint = uniqueInproc()
        // The endpoint is taken: the loop's bind fails with EADDRINUSE.
        let holder = try Socket(context, .pull)
        try holder.bind(endpoint)
        defer { holder.close() }
        let name = Self.uniqueName("slerr")
        let loop = try SocketLoop(name: name)
        let record = Shared(Record())
        #expect(throws: ZMQError.self) {
            try loop.start { poller in try PullSteps(context, endpoint, poller, record: record) }
        }
        #expect(try eventuallyGone(name))
        #expect(!record.value.drained)
        // Stopping it afterwards is harmless, and it does not start again.
        loop.stop()
        #expect(throws: SocketLoop.StartRefused.self) {
            try loop.start { poller in try PullSteps(context, endpoint, poller, record: record) }
        }
    }

    @Test func wakeEndsAPollThatWouldWaitForever() throws {
        let context = try Context()
        let loop = try SocketLoop(name: Self.uniqueName("slwake"))
        let record = Shared(Record())
        let endpoint = uniqueInproc()
        try loop.start { poller in try PullSteps(context, endpoint, poller, record: record, timeout: -1) }
        defer { loop.stop() }
        let clock = ContinuousClock()
        for round in 1...3 {
            let start = clock.now
            loop.wake()
            #expect(try waitFor { record.value.wokenTurns == round })
            #expect(clock.now - start < .seconds(5))
        }
        // With nothing more, the loop sleeps: no turn without a wake or a message.
        let turns = record.value.turns
        usleep(50_000)
        #expect(record.value.turns == turns)
        // A message is a turn too, on the loop's socket.
        let push = try Socket(context, .push)
        defer { push.close() }
        try push.connect(endpoint)
        try push.send([Array("hello".utf8)])
        #expect(try waitFor { record.value.received == ["hello"] })
    }

    @Test func stopWaitsForTheDrainAndTheThread() throws {
        let context = try Context()
        let name = Self.uniqueName("sldrain")
        let loop = try SocketLoop(name: name)
        let record = Shared(Record())
        let endpoint = uniqueInproc()
        try loop.start { poller in
            try PullSteps(context, endpoint, poller, record: record, timeout: -1, drainDelay: 100_000)
        }
        loop.stop()
        #expect(record.value.drained)
        #expect(loop.isStopping)
        #expect(try eventuallyGone(name))
    }

    @Test func stopIsSafeTwiceFromSeveralThreadsAtOnceAndBeforeStart() throws {
        let context = try Context()
        // Before start: returns, and start refuses afterwards.
        let unstarted = try SocketLoop(name: Self.uniqueName("slidle"))
        unstarted.stop()
        unstarted.stop()
        #expect(throws: SocketLoop.StartRefused.self) {
            try unstarted.start { _ in throw ZMQError(code: EINVAL, operation: "never called") }
        }

        let loop = try SocketLoop(name: Self.uniqueName("slmany"))
        let record = Shared(Record())
        let endpoint = uniqueInproc()
        try loop.start { poller in
            try PullSteps(context, endpoint, poller, record: record, timeout: -1, drainDelay: 50_000)
        }
        // Four threads stop it at once: each returns only after the drain.
        let drainedWhenReturned = Shared([Bool]())
        let group = DispatchGroup()
        for _ in 0..<4 {
            group.enter()
            onThread {
                loop.stop()
                let drained = record.value.drained
                drainedWhenReturned.withLock { $0.append(drained) }
                group.leave()
            }
        }
        #expect(group.wait(timeout: .now() + 10) == .success)
        #expect(drainedWhenReturned.value == [true, true, true, true])
        loop.stop()
        #expect(throws: SocketLoop.StartRefused.self) {
            try loop.start { _ in throw ZMQError(code: EINVAL, operation: "never called") }
        }
    }

    @Test func stopOnTheLoopsOwnThreadReturnsAtOnceAndTheLoopEndsAfterThatTurn() throws {
        let context = try Context()
        let name = Self.uniqueName("slself")
        let loop = try SocketLoop(name: name)
        let record = Shared(Record())
        let endpoint = uniqueInproc()
        try loop.start { poller in
            try PullSteps(context, endpoint, poller, record: record, timeout: -1) {
                guard loop.isLoopThread, record.value.stopReturnedAtOnce == nil else { return }
                // No self-deadlock: the thread cannot wait for its own end.
                loop.stop()
                record.withLock { $0.stopReturnedAtOnce = true }
            }
        }
        loop.wake()
        #expect(try waitFor { record.value.drained })
        #expect(record.value.stopReturnedAtOnce == true)
        #expect(record.value.turns == 1)
        // The stop from outside now only joins.
        loop.stop()
        #expect(try eventuallyGone(name))
    }

    @Test func waitReturnsOnceTheStepsConditionHoldsOrTheTimeIsUp() throws {
        let context = try Context()
        let loop = try SocketLoop(name: Self.uniqueName("slwait"))
        let record = Shared(Record())
        let endpoint = uniqueInproc()
        // Not running: nothing to wait for.
        #expect(!loop.wait(timeoutMilliseconds: nil) { false })
        try loop.start { poller in
            try PullSteps(context, endpoint, poller, record: record, timeout: -1) { loop.notifyWaiters() }
        }
        let clock = ContinuousClock()
        var start = clock.now
        #expect(!loop.wait(timeoutMilliseconds: 50) { record.value.turns > 0 })
        #expect(clock.now - start >= .milliseconds(50))
        start = clock.now
        onThread {
            usleep(20_000)
            loop.wake()
        }
        #expect(loop.wait(timeoutMilliseconds: 10_000) { record.value.turns > 0 })
        #expect(clock.now - start < .seconds(5))
        // A stop ends every wait.
        onThread {
            usleep(20_000)
            loop.stop()
        }
        #expect(!loop.wait(timeoutMilliseconds: nil) { false })
        loop.stop()
    }
}

/// The kernel's name of the calling thread.
private func threadName() -> String {
    ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "")
        .trimmingCharacters(in: .newlines)
}

/// The kernel's names of the process's threads.
private func threadNames() -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
        .map { $0.trimmingCharacters(in: .newlines) }
}

/// Whether no thread carries `name` within a second (a joined thread's entry can outlive the
/// join by a moment: the kernel reaps it just after it tells the joiner).
private func eventuallyGone(_ name: String) throws -> Bool {
    try waitFor(seconds: 1) { !threadNames().contains(name) }
}

/// Polls `condition` every millisecond for up to `seconds`.
private func waitFor(seconds: Double = 10, _ condition: () -> Bool) throws -> Bool {
    let end = Date().addingTimeInterval(seconds)
    while Date() < end {
        if condition() { return true }
        usleep(1000)
    }
    return condition()
}
