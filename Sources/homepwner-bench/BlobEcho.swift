import Foundation
import ImageService
import Proto
import RPC
import Runtime
import Synchronization
import ZMQ

/// Bare ZeroMQ: a ROUTER thread answering each small request with the same three frames a
/// GetImage reply has (`[empty][header][blob]`), over tcp loopback, one at a time.
final class BlobEcho: Sendable {
    private final class Shared: Sendable {
        let stopping = Atomic<Bool>(false)
        let finished = Atomic<Bool>(false)
        /// The blobs to answer with, in turn: the same bytes the service serves.
        let blobs = Mutex<[[UInt8]]>([])
        let endpoint = Mutex<String?>(nil)
    }

    private let endpoint: String
    private let context: Context
    /// The calling side's context (another process's, in a deployment).
    private let clientContext: Context
    private let shared = Shared()

    init(context: Context, clientContext: Context) throws {
        self.context = context
        self.clientContext = clientContext
        let shared = shared
        let ready = DispatchSemaphore(value: 0)
        Thread {
            defer { shared.finished.store(true, ordering: .relaxed) }
            guard let router = try? Socket(context, .router), (try? router.bind("tcp://127.0.0.1:*")) != nil else {
                ready.signal()
                return
            }
            shared.endpoint.withLock { $0 = try? router.lastEndpoint }
            ready.signal()
            let poller = Poller()
            poller.add(router, events: .in)
            var next = 0
            while !shared.stopping.load(ordering: .relaxed) {
                guard (try? poller.poll(timeoutMilliseconds: 100)) ?? 0 > 0 else { continue }
                while let message = try? router.receive(dontWait: true) {
                    let blob = shared.blobs.withLock { $0.isEmpty ? [] : $0[next % $0.count] }
                    next += 1
                    _ = try? router.send([message[0], [], [8, 1], blob])
                }
            }
            router.close()
        }.start()
        ready.wait()
        guard let bound = shared.endpoint.withLock({ $0 }) else { throw RPCError.unavailable("echo server did not bind") }
        endpoint = bound
    }

    /// MB/s of request/reply exchanges, one per blob of `blobs` in turn (the blobs GetImage
    /// serves in the same round: as many distinct buffers, so neither side has them all in
    /// the CPU's caches).
    func transfer(_ blobs: [[UInt8]]) throws -> ImagesBenchmark.Measure {
        shared.blobs.withLock { $0 = blobs }
        defer { shared.blobs.withLock { $0 = [] } }
        let dealer = try Socket(clientContext, .dealer)
        defer { dealer.close() }
        try dealer.connect(endpoint)
        let request: [[UInt8]] = [[], [10, 1, 0x2f], [10, 36] + Array(repeating: 0x61, count: 36)]
        // One exchange to connect (its blob is skipped: the echo goes on from the next one).
        try dealer.send(request)
        _ = try dealer.receive()
        var total = 0
        let start = monotonicSeconds()
        for _ in 0..<blobs.count {
            try dealer.send(request)
            total += try dealer.receive()?.last?.count ?? 0
        }
        return ImagesBenchmark.Measure(bytes: total, seconds: monotonicSeconds() - start)
    }

    func stop() {
        shared.stopping.store(true, ordering: .relaxed)
        while !shared.finished.load(ordering: .relaxed) { usleep(1000) }
    }
}
