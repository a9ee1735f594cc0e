import CZMQ
import Locking

/// A libzmq context: the I/O threads and inproc namespace that sockets are created in.
///
/// Shared by all threads. `deinit` terminates it (`zmq_ctx_term`), which waits for every
/// socket to be closed; each `Socket` keeps its context alive until it is closed, so the
/// context is only terminated after its last socket is gone.
public final class Context: Sendable {
    // libzmq documents contexts as thread safe, and the pointer itself never changes.
    nonisolated(unsafe) let handle: UnsafeMutableRawPointer
    private let attached = Locked<(any Sendable)?>(nil)

    /// A value the layers above keep with the context for every socket made in it (the RPC
    /// layer's CURVE keys: one ZAP handler serves a context, so its keys belong to it too).
    public var attachment: (any Sendable)? {
        get { attached.withLock { $0 } }
        set { attached.withLock { $0 = newValue } }
    }

    /// Creates a context with `ioThreads` background I/O threads.
    public init(ioThreads: Int = 1) throws {
        guard let handle = zmq_ctx_new() else {
            throw ZMQError(code: zmq_errno(), operation: "zmq_ctx_new")
        }
        let rc = zmq_ctx_set(handle, ZMQ_IO_THREADS, Int32(clamping: ioThreads))
        if rc == -1 {
            let error = ZMQError(code: zmq_errno(), operation: "zmq_ctx_set(ZMQ_IO_THREADS, \(ioThreads))")
            zmq_ctx_term(handle)
            throw error
        }
        self.handle = handle
    }

    /// Shuts the context down: blocking calls on its sockets return `ETERM`, later calls fail with `ETERM`.
    public func shutdown() {
        // Only fails with EFAULT for an invalid context, which cannot happen here.
        zmq_ctx_shutdown(handle)
    }

    deinit {
        // zmq_ctx_term blocks until all sockets are closed; a signal can interrupt the wait.
        _ = retryingInterrupts { zmq_ctx_term(handle) }
    }
}
