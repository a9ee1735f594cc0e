import Dispatch
import Foundation
import Proto
@testable import RPC
import Runtime
import Locking
import Testing
import RPCTestSupport

/// Work queued past its call's deadline does not run: the caller was answered 4 already.
@Suite struct QueuedDeadlineTests {
    @Test func pooledHandlerThatCouldNotStartBeforeItsDeadlineNeverRuns() async throws {
        let calls = CallCounter()
        // Every handler task waits in this executor until released: the pool busy with other work.
        let executor = HeldExecutor()
        defer { executor.release() }
        var configuration = RPCServer.Configuration(endpoints: [uniqueEndpoint()], processName: "test-server")
        configuration.handlerExecutor = executor
        let server = try RPCServer(context: testContext, configuration: configuration, logger: testLogger)
        registerTestMethods(server, calls: calls)
        try server.start()
        defer { server.stop() }
        let peer = try RawPeer(.dealer, endpoint: server.boundEndpoints[0])
        try peer.send([[], requestHeader(ItemServiceRPC.createItem.path, id: 1, timeout: 50), createItem("late").serializedBytes()])
        let (reply, _) = try #require(try await peer.receiveHeader())
        #expect(reply.requestId == 1 && reply.code == StatusCode.deadlineExceeded.rawValue)
        #expect(executor.held == 1)
        executor.release()
        #expect(try await eventually { server.stats.inFlight == 0 })
        #expect(calls.value == 0)
        // Released in time, the same call runs.
        try peer.send([[], requestHeader(ItemServiceRPC.createItem.path, id: 2, timeout: 30_000), createItem("on time").serializedBytes()])
        let (onTime, _) = try #require(try await peer.receiveHeader())
        #expect(onTime.requestId == 2 && onTime.code == 0)
        #expect(calls.value == 1)
    }
}

/// A task executor that keeps the jobs it is given until `release()`, then runs them (and
/// every later one) on a serial queue of its own.
final class HeldExecutor: TaskExecutor {
    private let state = Locked<(released: Bool, jobs: [UnownedJob])>((false, []))
    private let queue = DispatchQueue(label: "held-executor")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let runNow = state.withLock { state -> Bool in
            if state.released { return true }
            state.jobs.append(job)
            return false
        }
        if runNow { run(job) }
    }

    /// Jobs held now.
    var held: Int { state.withLock { $0.jobs.count } }

    func release() {
        let jobs = state.withLock { state in
            state.released = true
            defer { state.jobs = [] }
            return state.jobs
        }
        for job in jobs { run(job) }
    }

    private func run(_ job: UnownedJob) {
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
