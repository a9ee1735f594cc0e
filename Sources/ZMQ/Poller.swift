#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CZMQ

/// `zmq_poll` over sockets and plain file descriptors (e.g. a `WakeUp` fd used to wake an I/O thread).
///
/// Not `Sendable`: owned by the one thread that owns its sockets.
public final class Poller {
    private var items: [zmq_pollitem_t] = []
    // Parallel to `items`: keeps each socket alive and lets `poll` notice one that was closed.
    private var sockets: [Socket?] = []

    /// Creates an empty poller.
    public init() {}

    /// The number of registered sockets and fds.
    public var count: Int { items.count }

    /// Watches `socket` for `events`; returns the index to pass to `revents`.
    @discardableResult
    public func add(_ socket: Socket, events: PollEvents) -> Int {
        // The handle is refreshed on every poll, so a placeholder is fine here.
        items.append(zmq_pollitem_t(socket: socket.handle, fd: -1, events: events.rawValue, revents: 0))
        sockets.append(socket)
        return items.count - 1
    }

    /// Watches the file descriptor `fd` for `events`; returns the index to pass to `revents`.
    @discardableResult
    public func add(fd: Int32, events: PollEvents) -> Int {
        items.append(zmq_pollitem_t(socket: nil, fd: fd, events: events.rawValue, revents: 0))
        sockets.append(nil)
        return items.count - 1
    }

    /// Waits up to `timeoutMilliseconds` (-1 = forever, 0 = no wait); returns how many items are ready.
    ///
    /// An interrupted wait (EINTR) returns 0 with no events. Throws `ETERM` once the context of a
    /// polled socket is shut down, and `ENOTSOCK` if a polled socket was closed.
    public func poll(timeoutMilliseconds: Int) throws -> Int {
        for index in items.indices {
            items[index].revents = 0
            if let socket = sockets[index] {
                // Passing a closed socket's freed pointer to zmq_poll would be a use-after-free.
                guard let handle = socket.handle else {
                    throw ZMQError(code: ENOTSOCK, operation: "zmq_poll(closed socket at index \(index))")
                }
                items[index].socket = handle
            }
        }
        // With no items libzmq just sleeps, and a negative timeout would sleep for ~70 minutes.
        if items.isEmpty && timeoutMilliseconds < 0 {
            throw ZMQError(code: EINVAL, operation: "zmq_poll(no items, infinite timeout)")
        }
        let count = Int32(items.count)
        let rc = items.withUnsafeMutableBufferPointer { zmq_poll($0.baseAddress, count, timeoutMilliseconds) }
        if rc == -1 && zmq_errno() == EINTR {
            // Callers loop on poll anyway; report "nothing ready" rather than a spurious error.
            for index in items.indices { items[index].revents = 0 }
            return 0
        }
        return Int(try check(rc, "zmq_poll(\(count) items)"))
    }

    /// The conditions found ready for item `index` by the last `poll`.
    public func revents(_ index: Int) -> PollEvents {
        PollEvents(rawValue: items[index].revents)
    }
}

// Spelled out for the same reason as Socket: the poller is owned by its sockets' thread.
@available(*, unavailable, message: "a Poller belongs to the thread that owns its sockets")
extension Poller: Sendable {}

